#!/usr/bin/env bash
# The first page load's weight, as a browser receives it (brotli), against the budget.
# Starts the release server on a free port with an empty data folder, fetches the page and every
# asset it names, and adds up the bytes on the wire. Run by `make size` and `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

BUDGET_KIB=${SIZE_BUDGET_KIB:-250}
BIN=target/release/askbridge
[ -x "$BIN" ] || { echo "size: $BIN is missing; run 'make release' first" >&2; exit 1; }

data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve --addr "127.0.0.1:$port" --data-dir "$data" >"$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
for _ in $(seq 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

base="http://127.0.0.1:$port"
wire() { curl -fs -H 'Accept-Encoding: br, gzip' -o /dev/null -w '%{size_download}' "$base$1"; }
raw() { curl -fs -o /dev/null -w '%{size_download}' "$base$1"; }

page=$(curl -fs "$base/")
assets=$(grep -oE '(href|src)="/pkg/[^"]+"' <<<"$page" | sed -E 's/^(href|src)="//; s/"$//' | sort -u)
# The hydration script imports the JS and WASM by name; they are preloaded in <head> too.
total=0
printf '%-52s %10s %10s\n' "file" "raw" "wire (br)"
for path in / $assets; do
  w=$(wire "$path"); r=$(raw "$path")
  total=$((total + w))
  printf '%-52s %10d %10d\n' "$path" "$r" "$w"
done
kib=$(( (total + 1023) / 1024 ))
printf '%-52s %10s %10d  (%d KiB, budget %d KiB)\n' "total" "" "$total" "$kib" "$BUDGET_KIB"
if [ "$kib" -gt "$BUDGET_KIB" ]; then
  echo "size: the first page load is ${kib} KiB, over the ${BUDGET_KIB} KiB budget" >&2
  exit 1
fi
