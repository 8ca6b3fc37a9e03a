#!/usr/bin/env bash
# Runs `make test` N times in a row (default 10), as issue 34 asks for a make test without flakes,
# and records each run in target/bench/test-runs.jsonl: the commit, when it started, how long it
# took, and whether it passed. Stops at the first failure, keeping that run's whole log beside the
# record (target/bench/test-run-<n>.log), so that the flake can be read.
#
#   scripts/test-in-a-row.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${1:-10}"
mkdir -p target/bench
COMMIT="$(git rev-parse --short HEAD)"
[ -z "$(git status --porcelain)" ] || COMMIT="$COMMIT+changes"
for run in $(seq "$RUNS"); do
  LOG="target/bench/test-run-$run.log"
  START="$(date -u +%FT%TZ)"
  LOAD="$(cut -d' ' -f1-3 /proc/loadavg)"
  BEGAN=$SECONDS
  if make test >"$LOG" 2>&1; then STATUS=0; else STATUS=$?; fi
  printf '{"run":%d,"of":%d,"commit":"%s","started":"%s","seconds":%d,"status":%d,"load_before":"%s"}\n' \
    "$run" "$RUNS" "$COMMIT" "$START" $((SECONDS - BEGAN)) "$STATUS" "$LOAD" | tee -a target/bench/test-runs.jsonl
  if [ "$STATUS" != 0 ]; then
    echo "run $run of $RUNS failed: $LOG" >&2
    grep -E "FAILED|panicked|✘|failed" "$LOG" | head -20 >&2 || true
    exit 1
  fi
  rm -f "$LOG"
done
echo "$RUNS runs of make test in a row passed at $COMMIT"
