# AskBridge: `make run` builds and serves the app; `make test` runs every test.
# Both install what is missing first (scripts/setup.sh), so they work on a fresh machine.

SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)
# The build flags are in .cargo/config.toml, for plain cargo too.
# Each step says "[step] NAME" as it starts: scripts/time-fresh.sh times the steps by these lines.
# Extra flags for `make run`, e.g. make run ARGS="--scenario my.toml"
ARGS ?=

.PHONY: run test setup setup-serve setup-rust setup-beside lint site site-beside browser-beside release ordered-server install test-build test-rust test-servers test-e2e size bench bench-parked clean

run: release
	target/release/askbridge serve $(ARGS)

# The browser tests and the size check run the server the Rust tests built (target/debug): the
# release build of the server is `make run`'s, and would add minutes to every run for a binary
# that differs only in its optimization. Clippy lints as the crate compiles (LINT=1, below).
# The rest of the set-up (npm packages, Chromium, PostgreSQL, tmux: downloads, mostly) runs beside
# the tests' build, its lines marked "[setup]": the build needs only Rust. Once the tests are built,
# two lanes share the two cores: the Rust tests, and the site followed
# by the browser tests (their lines marked "[site]" and "[e2e]"). Each lane leaves a core idle at
# times, the Rust tests waiting on the processes they start, the site's WASM linking on one core,
# and the other lane takes it. Not while the tests compile: two builds on two cores only share them
# (a fresh test build took 733 s beside the site's, 29 Nov, BENCHMARKS.md §7).
test: setup-rust
	@echo "[step] format"
	cargo fmt --check
	$(MAKE) --jobs=2 test-build setup-beside LINT=1
	$(MAKE) --jobs=2 test-rust browser-beside LINT=1
	@echo "[step] size"
	ASKBRIDGE_BIN=target/debug/askbridge scripts/size.sh

# The code as rustfmt writes it, and no lint of clippy's, on both faces of the crate: the server
# (with its tests and examples) and the browser's WASM. `make test` runs the same lints another way
# (LINT=1).
lint:
	@echo "[step] lint"
	cargo fmt --check
	cargo clippy --no-default-features --features ssr --all-targets -- -D warnings
	cargo clippy --lib --no-default-features --features hydrate --target wasm32-unknown-unknown -- -D warnings

# With LINT=1 (what `make test` sets), the workspace's own crates are compiled by clippy's driver,
# warnings as errors: the lints of `make lint`, as the tests' build and the site's WASM compile, so
# that the dependencies are compiled once and not also checked by `cargo clippy`. That check is what
# `make lint` costs on a fresh machine: 292 s for the server's face and 122 s for the WASM's (29
# Nov, crates already downloaded; BENCHMARKS.md §7). The dependencies build the same either way;
# only AskBridge's crates (and tools/wasm-bundle) compile under the driver, an edit's rebuild
# about 10 s longer. The site built so has a stamp of its own: a site that `make run` built
# unlinted is built again, linted.
ifeq ($(LINT),1)
export RUSTC_WORKSPACE_WRAPPER := clippy-driver
export CLIPPY_ARGS := -D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
SITE_STAMP := target/site/.linted
else
SITE_STAMP := target/site/hash.txt
endif

# Everything the tests need; `setup-serve` only what building and serving needs (no Chromium,
# Postgres or tmux); `setup-rust` only the pinned toolchain, its WASM target and valgrind, what
# compiling needs. `setup-beside` is `setup`, beside another build, its lines marked "[setup]".
setup:
	@echo "[step] setup"
	scripts/setup.sh test

setup-serve:
	@echo "[step] setup"
	scripts/setup.sh serve

setup-rust:
	@echo "[step] setup"
	scripts/setup.sh rust

setup-beside:
	@set -o pipefail; $(MAKE) --no-print-directory setup 2>&1 | sed -u 's/^/[setup] /'

# The site the server serves (scripts/build-site.mjs): the browser's WASM at its size-optimized
# profile, split so that the open session's pane is a chunk of its own (src/ui/lazy.rs,
# docs/size.md), optimized by wasm-opt (npm binaryen), with hashed names and pre-compressed copies.
# Built again only when one of its inputs changed.
SITE_INPUTS := $(shell find src style public tools/wasm-bundle/src -type f) Cargo.toml Cargo.lock \
	package-lock.json tools/wasm-bundle/Cargo.toml scripts/build-site.mjs
site: setup-serve $(SITE_STAMP)

# The site, beside another build, its set-up first (the npm packages it uses): its lines marked
# "[site]", at SITE_NICE's priority.
site-beside:
	@set -o pipefail; $(SITE_NICE) $(MAKE) --no-print-directory setup-serve $(SITE_STAMP) 2>&1 | sed -u 's/^/[site] /'

# The site, then the browser tests, beside the Rust tests (`make test`): lines marked "[site]"
# and "[e2e]".
browser-beside: site-beside
	@set -o pipefail; $(MAKE) --no-print-directory test-e2e 2>&1 | sed -u 's/^/[e2e] /'

# The stamps take the time the build started: a source saved while it ran is newer than the
# stamp, and the next `make` builds again (a stamp written at the end once hid such a change).
$(SITE_STAMP): $(SITE_INPUTS)
	@echo "[step] site"
	@mkdir -p target && touch target/.site-started
	node scripts/build-site.mjs
	@touch -r target/.site-started $@ target/site/hash.txt

# The release build: the optimized server, carrying the site (server/site.rs), so that `make run`
# with nothing changed starts at once. The server and the site compile side by side (neither needs
# the other until the site is appended): each leaves a core idle at times, in its own crate's front
# end and its link.
RELEASE_INPUTS := $(shell find src migrations -type f) Cargo.toml Cargo.lock
RELEASE_BINARY := target/release/.askbridge-compiled
RELEASE_STAMP := target/release/.askbridge-release

release: setup-rust
	$(MAKE) --jobs=2 $(RELEASE_BINARY) site-beside
	$(MAKE) --no-print-directory $(RELEASE_STAMP)

$(RELEASE_BINARY): $(RELEASE_INPUTS)
	@echo "[step] server"
	@mkdir -p target && touch target/.server-started
	cargo build --release --no-default-features --features ssr --bin askbridge
	@touch -r target/.server-started $@

$(RELEASE_STAMP): $(RELEASE_BINARY) $(SITE_STAMP)
	target/release/askbridge bundle-site target/site
	@echo "[step] order"
	$(MAKE) --no-print-directory ordered-server
	@touch $@

# The server linked again with the functions that its start-up and a turn run at the head of its
# code, then given its site again (scripts/order-text.mjs says why: idle RSS 21.4 → 11.8 MiB). The
# order is taken from the binary that carries its site, which it unpacks as it starts. Only the
# binary's own crate is linked again, in about 15 s: `cargo rustc`'s flags go to it alone. Cargo
# keeps the two links apart (the flags are part of a build's identity), and links this one again
# when the code changed, not when only the order file did: the same code runs the same functions,
# but for a few that the run's timing decides. Where the order cannot be taken (no valgrind) or the
# linker takes no order file (lld is Rust's linker on x86-64 Linux only), the server stays in the
# compiler's order.
ORDER_FILE := target/release/text-order.txt
ordered-server:
	@if node scripts/order-text.mjs target/release/askbridge $(ORDER_FILE); then \
	  cargo rustc --release --no-default-features --features ssr --bin askbridge -- \
	    -C link-arg=-Wl,--symbol-ordering-file=$(CURDIR)/$(ORDER_FILE) -C link-arg=-Wl,--no-warn-symbol-ordering \
	  || { echo "[order] the linker took no order: the server is linked in the compiler's order"; \
	       cargo build --release --no-default-features --features ssr --bin askbridge; }; \
	  target/release/askbridge bundle-site target/site; \
	fi

# The release binary, which carries its site, on the PATH: ~/.local/bin by default (PREFIX=…).
PREFIX ?= $(HOME)/.local
install: release
	install -D -m 755 target/release/askbridge $(DESTDIR)$(PREFIX)/bin/askbridge
	@echo "installed $(DESTDIR)$(PREFIX)/bin/askbridge"

# The Claude Code tests run the pinned CLI from node_modules.
test-rust:
	@echo "[step] test-rust"
	cargo test --no-default-features --features ssr

# The Rust tests' build alone (their binaries, the server, the examples), without running them.
test-build:
	@echo "[step] test-build"
	cargo test --no-default-features --features ssr --no-run

# What the browser tests start: the server (the Rust tests' debug build), the mocks of the model
# APIs (Anthropic's, Gemini's, OpenAI's Responses), and test_postgres for the team server's.
test-servers:
	@echo "[step] test-servers"
	cargo build --no-default-features --features ssr --bin askbridge --example mock_anthropic --example mock_gemini --example mock_openai --example test_postgres

# Playwright in headless Debian Chromium against the debug server and the release site
# (end2end/playwright.config.ts starts and stops the servers): `make test-e2e` alone builds what
# it needs. Playwright's own options go in E2E_ARGS, e.g. E2E_ARGS="--trace retain-on-failure
# questions.spec.ts".
E2E_ARGS ?=
test-e2e: site test-servers
	@echo "[step] test-e2e"
	npx playwright test --config end2end/playwright.config.ts $(E2E_ARGS)

size: release
	scripts/size.sh

# Not part of `make test`: what people feel and what the server costs, against the budgets of
# issue 12 (BENCHMARKS.md). Prints a table and writes target/bench/summary.json; about 15 minutes.
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
