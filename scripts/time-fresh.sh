#!/usr/bin/env bash
# Times `make run` (to the first page) or `make test` as a fresh machine runs them: a new clone of
# HEAD, with a home of its own, so that nothing this machine already installed or compiled is used:
# no twiggy, no crates downloaded, no npm cache, no target/.
#
#   scripts/time-fresh.sh run|test [folder]     (folder: where the clone and its home go)
#
# What it cannot make fresh, and a new machine pays for (BUILD-NOTES.md has the figures): the Rust
# toolchain and its wasm32 target (rustup's home is shared), and Debian's Chromium, tmux and
# PostgreSQL if this machine has them. Prints the seconds and each step's (the Makefile's
# "[step] NAME" lines, and the site build's own), keeps the whole log in the folder with each line's
# second, and records the result in target/bench/fresh-run.json or fresh-test.json, which
# `make bench` shows.
set -euo pipefail
cd "$(dirname "$0")/.."

WHAT="${1:?usage: scripts/time-fresh.sh run|test [folder]}"
DIR="${2:-$(mktemp -d "${TMPDIR:-/tmp}/askbridge-fresh-$WHAT.XXXXXX")}"
case "$WHAT" in run | test) ;; *) echo "usage: scripts/time-fresh.sh run|test [folder]" >&2; exit 2 ;; esac

mkdir -p "$DIR/home/.cargo/bin"
git clone --quiet --no-hardlinks "$PWD" "$DIR/repo"
# Only rustup's own proxies (cargo, rustc, …): what a machine with a Rust toolchain has.
RUSTUP_BIN="$(command -v rustup)"
for tool in cargo rustc rustdoc rustfmt cargo-fmt cargo-clippy clippy-driver rust-gdb rust-lldb; do
  ln -s "$RUSTUP_BIN" "$DIR/home/.cargo/bin/$tool"
done
ln -s "$RUSTUP_BIN" "$DIR/home/.cargo/bin/rustup"

fresh() {
  env -i HOME="$DIR/home" CARGO_HOME="$DIR/home/.cargo" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" \
    PATH="$DIR/home/.cargo/bin:/usr/local/bin:/usr/bin:/bin" TERM=dumb LANG=C.UTF-8 "$@"
}

LOG="$DIR/$WHAT.log"
COMMIT="$(git rev-parse --short HEAD)"
# Each line of output, after the second it came at.
stamped() {
  while IFS= read -r line; do printf '%5d %s\n' $(( $(date +%s) - start )) "$line"; done
}
# Each step's seconds, from one "[step] NAME" line to the next of the same stream (a step run twice
# adds up: the set-up, asked for again by later steps, finds everything there then), as JSON.
# What runs beside another step (the Makefile's setup-beside, site-beside and browser-beside) is a
# stream of its own, its lines marked "[setup]", "[site]" or "[e2e]"; each ends at its last line.
steps() {
  awk -v end="$1" '
    function close_step(s, at) { if (current[s] != "") took[current[s]] += at - from[s] }
    { stream = ($2 == "[setup]" || $2 == "[site]" || $2 == "[e2e]") ? $2 : "main"; last[stream] = $1 }
    / \[step\] / {
      name = (stream == "main") ? $3 : $4
      close_step(stream, $1); current[stream] = name; from[stream] = $1
      if (!(name in took)) { took[name] = 0; order[n++] = name }
    }
    END { for (s in last) close_step(s, (s == "main") ? end : last[s])
          printf "{"; for (i = 0; i < n; i++) printf "%s\"%s\":%d", (i ? "," : ""), order[i], took[order[i]]; printf "}" }
  ' "$LOG"
}
record() { # seconds, exit status
  mkdir -p target/bench
  printf '{"what":"%s","seconds":%s,"status":%s,"commit":"%s","date":"%s","load_before":"%s","steps":%s}\n' \
    "$WHAT" "$1" "$2" "$COMMIT" "$(date -u +%FT%TZ)" "$LOAD" "$(steps "$1")" >"target/bench/fresh-$WHAT.json"
  echo "steps (seconds): $(steps "$1")"
}
LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
echo "fresh $WHAT of $COMMIT in $DIR, from $(date -u +%H:%M:%S)" >&2
if [ "$WHAT" = test ]; then
  status=0
  (cd "$DIR/repo" && fresh make test) 2>&1 | stamped >"$LOG" || status=$?
  took=$(( $(date +%s) - start ))
  record "$took" "$status"
  echo "make test: exit $status after $took s (log: $LOG)"
  exit "$status"
fi

# make run: until the printed sign-in link serves the page. Port 0: the link says which it got.
(cd "$DIR/repo" && exec setsid env -i HOME="$DIR/home" CARGO_HOME="$DIR/home/.cargo" \
  RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}" PATH="$DIR/home/.cargo/bin:/usr/local/bin:/usr/bin:/bin" \
  TERM=dumb LANG=C.UTF-8 make run ARGS="--addr 127.0.0.1:0 --agent scripted") > >(stamped >"$LOG") 2>&1 &
maker=$!
trap 'kill -- -"$maker" 2>/dev/null || true' EXIT
while kill -0 "$maker" 2>/dev/null; do
  link=$(grep -o "http://127.0.0.1:[0-9]*/[^ ]*" "$LOG" | head -1 || true)
  if [ -n "$link" ] && curl -sf -c /dev/null -L "$link" | grep -q "<html"; then
    took=$(( $(date +%s) - start ))
    record "$took" 0
    echo "make run: first page after $took s (log: $LOG)"
    exit 0
  fi
  sleep 1
done
echo "make run ended before serving a page (log: $LOG)" >&2
exit 1
