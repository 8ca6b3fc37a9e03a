# AskBridge: `make run` builds and serves the app; `make test` runs every test.
# Both install what is missing first (scripts/setup.sh), so they work on a fresh machine.

SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)
# The build flags are in .cargo/config.toml, for plain cargo too; cargo-leptos is given the same
# ones here, so that the tests and the release share what they can.
export RUSTFLAGS := --cfg erase_components
# Extra flags for `make run`, e.g. make run ARGS="--scenario my.toml"
ARGS ?=

.PHONY: run test setup setup-serve lint release install test-rust examples test-e2e size bench bench-parked clean

run: release
	target/release/askbridge serve $(ARGS)

test: setup
	$(MAKE) lint
	$(MAKE) test-rust
	$(MAKE) release
	$(MAKE) test-e2e
	scripts/size.sh

# The code as rustfmt writes it, and no lint of clippy's, on both faces of the crate: the server
# (with its tests and examples) and the browser's WASM.
lint:
	cargo fmt --check
	cargo clippy --no-default-features --features ssr --all-targets -- -D warnings
	cargo clippy --lib --no-default-features --features hydrate --target wasm32-unknown-unknown -- -D warnings

# Everything the tests need; `setup-serve` only what building and serving needs (no Chromium,
# Postgres or tmux).
setup:
	scripts/setup.sh test

setup-serve:
	scripts/setup.sh serve

# The release build: optimized server, size-optimized WASM (wasm-opt from npm binaryen), split
# so that the open session's pane is a chunk of its own (src/ui/lazy.rs, docs/size.md), then
# pre-compressed assets. Built again only when one of its inputs changed, so that `make run`
# with nothing changed starts at once (cargo-leptos itself re-links and re-optimizes the WASM
# every time: about 30 s).
RELEASE_INPUTS := $(shell find src style public migrations -type f) Cargo.toml Cargo.lock package-lock.json
RELEASE_STAMP := target/release/.askbridge-release

release: setup-serve $(RELEASE_STAMP)

$(RELEASE_STAMP): $(RELEASE_INPUTS)
	cargo leptos build --release --split 2> >(scripts/quiet-leptos.sh >&2)
	node scripts/precompress.mjs target/site/pkg
	target/release/askbridge bundle-site target/site --hash-file target/release/hash.txt
	@touch $@

# The release binary, which carries its site, on the PATH: ~/.local/bin by default (PREFIX=…).
PREFIX ?= $(HOME)/.local
install: release
	install -D -m 755 target/release/askbridge $(DESTDIR)$(PREFIX)/bin/askbridge
	@echo "installed $(DESTDIR)$(PREFIX)/bin/askbridge"

# The Claude Code tests run the pinned CLI from node_modules; the mock API example serves the
# browser test of the same loop, and the test_postgres example the team server's.
test-rust:
	cargo test --no-default-features --features ssr
	$(MAKE) examples

examples:
	cargo build --no-default-features --features ssr --example mock_anthropic --example test_postgres

# Playwright in headless Debian Chromium against the release build (end2end/playwright.config.ts
# starts and stops the server), with the mock API and the test Postgres it runs: `make test-e2e`
# alone builds what it needs.
test-e2e: release examples
	npx playwright test --config end2end/playwright.config.ts

size: release
	scripts/size.sh

# Not part of `make test`: what people feel and what the server costs, against the budgets of
# issue 12 (BENCHMARKS.md). Prints a table and writes target/bench/summary.json; about 6 minutes.
# Then how long `askbridge hook` holds up a terminal's claude when AskBridge cannot answer
# (scripts/bench-hook.mjs), and what a durable commit costs per stored event (examples/store_bench.rs).
bench: release
	node scripts/bench.mjs
	node scripts/bench-hook.mjs
	cargo run --release --no-default-features --features ssr --example store_bench

# Not part of `make test`: what a session waiting on a question costs the server (memory, processes),
# with 1,000 parked sessions (SESSIONS=… to change). Loopback only; a few minutes at most.
bench-parked: release
	node scripts/bench-parked.mjs

clean:
	cargo clean
	rm -rf node_modules end2end/.data end2end/test-results
