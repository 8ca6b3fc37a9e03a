#!/usr/bin/env bash
# Runs `make test` N times in a row (default 10), as issue 34 asks for a make test without flakes,
# and records each run in target/bench/test-runs.jsonl: the commit, when it started, how long it
# took, and whether it passed. Stops at the first failure, keeping that run's whole log beside the
# record (target/bench/test-run-<n>.log), so that the flake can be read.
#
#   scripts/test-in-a-row.sh [N] [--fresh FOLDER]
#
# With --fresh, the first run is a fresh machine's (scripts/time-fresh.sh test FOLDER: a new clone
# of HEAD with a home of its own, timed step by step), and the others run in that clone, with that
# home: ten in a row from nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${1:-10}"
FRESH=""
[ "${2:-}" = --fresh ] && FRESH="${3:?usage: scripts/test-in-a-row.sh [N] [--fresh FOLDER]}"
mkdir -p target/bench
BENCH="$PWD/target/bench"
COMMIT="$(git rev-parse --short HEAD)"
[ -z "$(git status --porcelain)" ] || COMMIT="$COMMIT+changes"

record() { # run, started, seconds, status, load before, how
  printf '{"run":%d,"of":%d,"commit":"%s","started":"%s","seconds":%d,"status":%d,"load_before":"%s","how":"%s"}\n' \
    "$1" "$RUNS" "$COMMIT" "$2" "$3" "$4" "$5" "$6" | tee -a "$BENCH/test-runs.jsonl"
}
failed() { # run, log
  echo "run $1 of $RUNS failed: $2" >&2
  grep -E "FAILED|panicked|✘|failed" "$2" | head -20 >&2 || true
  exit 1
}

FIRST=1
MAKE_TEST=(make test)
if [ -n "$FRESH" ]; then
  START="$(date -u +%FT%TZ)"
  LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
  BEGAN=$SECONDS
  if scripts/time-fresh.sh test "$FRESH"; then STATUS=0; else STATUS=$?; fi
  record 1 "$START" $((SECONDS - BEGAN)) "$STATUS" "$LOAD" "fresh"
  [ "$STATUS" = 0 ] || failed 1 "$FRESH/test.log"
  FIRST=2
  cd "$FRESH/repo"
  MAKE_TEST=(env -i HOME="$FRESH/home" CARGO_HOME="$FRESH/home/.cargo" RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
    PATH="$FRESH/home/.cargo/bin:/usr/local/bin:/usr/bin:/bin" TERM=dumb LANG=C.UTF-8 make test)
fi
for run in $(seq "$FIRST" "$RUNS"); do
  LOG="$BENCH/test-run-$run.log"
  START="$(date -u +%FT%TZ)"
  LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
  BEGAN=$SECONDS
  if "${MAKE_TEST[@]}" >"$LOG" 2>&1; then STATUS=0; else STATUS=$?; fi
  record "$run" "$START" $((SECONDS - BEGAN)) "$STATUS" "$LOAD" "warm"
  [ "$STATUS" = 0 ] || failed "$run" "$LOG"
  rm -f "$LOG"
done
echo "$RUNS runs of make test in a row passed at $COMMIT"
