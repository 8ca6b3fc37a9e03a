#!/usr/bin/env bash
# Installs what building and testing AskBridge needs, and skips what is already there.
# `scripts/setup.sh rust` installs only the pinned Rust toolchain, its WASM target and valgrind
# (what the Makefile needs before it compiles, the rest then installing beside the build);
# `scripts/setup.sh serve` (what `make run` calls) installs only what building and serving needs;
# `scripts/setup.sh` (what `make test` calls) adds what the tests need: Chromium, tmux,
# PostgreSQL; `scripts/setup.sh size` adds twiggy, for `make size`'s breakdown by crate (size.sh
# calls it when the page is over its budget). Safe to run again. Versions are pinned on purpose: see
# ../shared/BUILD-NOTES.md for why each one.
set -euo pipefail
cd "$(dirname "$0")/.."

FOR="${1:-test}"
case "$FOR" in
  rust | serve | test | size) ;;
  *) echo "usage: scripts/setup.sh [rust|serve|test|size]" >&2; exit 2 ;;
esac

TWIGGY_VERSION=0.8.0

say() { printf '\033[1;34m[setup]\033[0m %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Rust: the toolchain rust-toolchain.toml pins. Where rustup cannot download it (no internet but
# the package registries), the installed stable toolchain stands for it when it is that version.
RUST_VERSION="$(sed -n 's/^channel = "\(.*\)"/\1/p' rust-toolchain.toml)"
if ! rustup toolchain list | grep -q "^$RUST_VERSION-"; then
  if rustc +stable --version 2>/dev/null | grep -q "^rustc $RUST_VERSION "; then
    # `rustup toolchain link` refuses a release's name, so the link is made by hand: rustup then
    # takes it for that release, installed, with the stable toolchain's components and targets.
    say "using the installed stable Rust as $RUST_VERSION (rust-toolchain.toml)"
    HOST="$(rustc +stable -vV | sed -n 's/^host: //p')"
    ln -s "$(rustc +stable --print sysroot)" "${RUSTUP_HOME:-$HOME/.rustup}/toolchains/$RUST_VERSION-$HOST"
  else
    say "installing Rust $RUST_VERSION"
    rustup toolchain install "$RUST_VERSION" --profile minimal --component rustfmt,clippy
  fi
fi
for component in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$component"; then
    say "adding Rust's $component"
    rustup component add "$component"
  fi
done

# Rust: the wasm target.
if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
# valgrind, whose callgrind tells which functions the release server runs as it starts and takes a
# turn, so that `make release` links them together (scripts/order-text.mjs: idle RSS 21.4 → 11.8
# MiB): part of compiling, so here. Without it the server is linked in the compiler's order.
if ! command -v valgrind >/dev/null && command -v apt-get >/dev/null; then
  say "installing Debian valgrind"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind
fi
[ "$FOR" = rust ] && exit 0

# npm packages: what builds the site beside tools/wasm-bundle (wasm-opt from binaryen, lightningcss
# and browserslist for the stylesheet, terser for the script), Playwright, and the pinned Claude
# Code CLI. No cargo-leptos: scripts/build-site.mjs does its part (BENCHMARKS.md §7).
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm packages"
  PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
fi

# twiggy reads the function names of the release WASM for `make size`'s breakdown by crate, which
# size.sh prints when the page is over its budget (or SIZE_BREAKDOWN=1) and installs it for then:
# 0.8.0 builds with rustc 1.95, about 4 minutes on 2 busy cores, once per machine.
if [ "$FOR" = size ]; then
  if ! twiggy --version 2>/dev/null | grep -q " $TWIGGY_VERSION\$"; then
    say "installing twiggy $TWIGGY_VERSION"
    cargo install twiggy --version "$TWIGGY_VERSION" --locked
  fi
  exit 0
fi

# What follows only the tests (and `make size`) need.
[ "$FOR" = serve ] && exit 0


# Debian's Chromium for the browser tests (Playwright's own download cannot work offline): its
# headless shell, which runs most of them at a third of the full browser's CPU, and the full
# browser, for the tests of notifications and pushes (end2end/playwright.config.ts).
if [ "${ASKBRIDGE_SKIP_CHROMIUM:-0}" != 1 ] && ! { [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromium-headless-shell ]; }; then
  say "installing Debian chromium and its headless shell"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-headless-shell
fi

# tmux for the tests that drive Claude Code's interactive terminal UI (tests/terminal_cli.rs).
if ! command -v tmux >/dev/null; then
  say "installing Debian tmux"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux
fi

# PostgreSQL for the store's tests on Postgres: each test process starts a private server of its
# own (src/testing/postgres.rs) from these binaries; Debian's cluster is not used.
if ! [ -x "$(pg_config --bindir 2>/dev/null)/initdb" ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  say "installing Debian postgresql"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql
fi
