#!/usr/bin/env bash
# Passes cargo-leptos's output through, less the progress lines of its JavaScript minifier
# ("[swc_ecma_transforms_optimization] tree-shaker; pass=0"), which it prints in red although
# nothing is wrong. Everything else, errors included, goes through as it came.
exec grep --line-buffered -v 'tree-shaker; pass='
