#!/usr/bin/env bash
# The first page load's weight, as a browser receives it (brotli), against the budget.
# Starts the server (the release build, or ASKBRIDGE_BIN: `make test` gives its debug build, which
# serves the same target/site) on a free port with an empty data folder, fetches the page and every
# asset it names, and adds up the bytes on the wire. Run by `make size` and `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."

BUDGET_KIB=${SIZE_BUDGET_KIB:-200}
# A session's link opened while its agent waits: its first load (issue 38).
LINK_BUDGET_KIB=${SIZE_LINK_BUDGET_KIB:-250}
BIN=${ASKBRIDGE_BIN:-target/release/askbridge}
[ -x "$BIN" ] || { echo "size: $BIN is missing; run 'make release' first" >&2; exit 1; }

data=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" serve --addr "127.0.0.1:$port" --data-dir "$data" --agent scripted >"$data/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$data"' EXIT
# Signed in as a script is: the token the server made in its data folder, as a bearer token.
for _ in $(seq 100); do [ -s "$data/token" ] && break; sleep 0.1; done
auth="Authorization: Bearer $(cat "$data/token")"
for _ in $(seq 100); do curl -fs -H "$auth" -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

base="http://127.0.0.1:$port"
wire() { curl -fs -H "$auth" -H 'Accept-Encoding: br, gzip' -o /dev/null -w '%{size_download}' "$base$1"; }
raw() { curl -fs -H "$auth" -o /dev/null -w '%{size_download}' "$base$1"; }

# What a page's first load fetches: the page, the files it names (stylesheet, hydration script,
# WASM, preloads) and the JS modules those import, in `$assets`. The hydration script imports the
# JS and WASM by name; they are preloaded in <head> too. A JS module's static imports load with it
# (the glue imports the lazy chunks' loader, which imports the glue back): followed until no new
# file turns up. A chunk the page's code asks for later (the session pane's, say) is not in it.
first_load() {
  local page
  page=$(curl -fs -H "$auth" "$base$1")
  assets=$(grep -oE '(href|src)="/pkg/[^"]+"' <<<"$page" | sed -E 's/^(href|src)="//; s/"$//' | sort -u)
  local js next path name
  js=$(grep -E '\.js$' <<<"$assets" || true)
  while [ -n "$js" ]; do
    next=""
    for path in $js; do
      for name in $(curl -fs -H "$auth" "$base$path" | grep -oE 'from ?"\./[^"]+\.js"' | sed -E 's/^from ?"\.\///; s/"$//'); do
        grep -qxF "/pkg/$name" <<<"$assets" || { assets=$(printf '%s\n/pkg/%s' "$assets" "$name"); next="$next /pkg/$name"; }
      done
    done
    js=$next
  done
}
first_load /
total=0
printf '%-52s %10s %10s\n' "file" "raw" "wire (br)"
for path in / $assets; do
  w=$(wire "$path"); r=$(raw "$path")
  total=$((total + w))
  printf '%-52s %10d %10d\n' "$path" "$r" "$w"
done
kib=$(( (total + 1023) / 1024 ))
printf '%-52s %10s %10d  (%d KiB, budget %d KiB)\n' "total" "" "$total" "$kib" "$BUDGET_KIB"
# The lazily loaded chunks (scripts/build-site.mjs splits them off): not in the first load, fetched when the
# browser is idle or a page needs them. Shown so that what moved out stays in sight.
for chunk in target/site/pkg/*.wasm; do
  name=/pkg/$(basename "$chunk")
  grep -qxF "$name" <<<"$assets" && continue
  printf '%-52s %10d %10d  (lazy)\n' "$name" "$(raw "$name")" "$(wire "$name")"
done
# What panels import from npm when first opened: the terminal's glue (public/terminal.js) and
# xterm.js; the file viewer's glue (public/highlight.js) and highlight.js.
for name in /terminal.js $(cd target/site && ls pkg/xterm-*/*.js pkg/xterm-*/*.css 2>/dev/null | sed 's|^|/|'); do
  printf '%-52s %10d %10d  (when a terminal opens)\n' "$name" "$(raw "$name")" "$(wire "$name")"
done
for name in /highlight.js $(cd target/site && ls pkg/highlight-*/*.js pkg/highlight-*/*.css 2>/dev/null | sed 's|^|/|'); do
  printf '%-52s %10d %10d  (when a file is shown)\n' "$name" "$(raw "$name")" "$(wire "$name")"
done

# A session's link opened while its agent waits on a one-click question (a notification's). Its
# first load: the page hydrates without the session pane's chunk, which its code fetches as it
# starts and which takes the server's pane over when it lands (src/ui/lazy.rs). And before any of
# that, its card answers (src/ui/early_answer.rs): what the card waits for is the page and its
# stylesheet.
post() { curl -fs -H "$auth" -H "Origin: $base" -H 'Content-Type: application/json' -d "$2" "$base/api/$1"; }
session=$(post create_session '{}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
post send_message "{\"session\": \"$session\", \"text\": \"ask me a single question\"}" >/dev/null
for _ in $(seq 100); do curl -fs -H "$auth" "$base/s/$session" | grep -q 'data-send-early' && break; sleep 0.1; done
link_page=$(curl -fs -H "$auth" "$base/s/$session")
grep -q 'data-send-early' <<<"$link_page" || { echo "size: the session's card did not answer early" >&2; exit 1; }
first_load "/s/$session"
link=0
for path in "/s/$session" $assets; do
  link=$((link + $(wire "$path")))
done
link_kib=$(( (link + 1023) / 1024 ))
printf '%-52s %10s %10d  (%d KiB, budget %d KiB)\n' "/s/ID with a card waiting: its first load" "" "$link" "$link_kib" "$LINK_BUDGET_KIB"
stylesheet=$(grep -oE 'rel="stylesheet" href="/pkg/[^"]+"' <<<"$link_page" | sed -E 's/.*href="//; s/"$//')
early=$(( $(wire "/s/$session") + $(wire "$stylesheet") ))
printf '%-52s %10s %10d\n' "  of which the card waits for (the page, its styles)" "" "$early"
pane=0
for chunk in target/site/pkg/split_session_pane.*.wasm target/site/pkg/chunk_*.wasm; do
  grep -qxF "/pkg/$(basename "$chunk")" <<<"$assets" || pane=$(( pane + $(wire "/pkg/$(basename "$chunk")") ))
done
printf '%-52s %10s %10d  (asked for as it hydrates)\n' "  then: the session pane's chunks" "" "$pane"

# Where the WASM's bytes go, so that whoever adds a dependency sees what it costs; printed before
# the verdict, because over budget is when it is needed. The shipped file has no function names
# (wasm-opt drops them), so this reads the bindings of the same build, whole and with demangled
# names (tools/wasm-bundle --whole). It informs; only the total above decides.
crates() {
  local wasm=target/front/wasm32-unknown-unknown/wasm-release/askbridge.wasm
  if ! command -v twiggy >/dev/null || ! [ -f "$wasm" ]; then
    echo "(no breakdown by crate: it needs twiggy and $wasm; see scripts/setup.sh)"
    return
  fi
  cargo run --quiet --profile tool -p wasm-bundle -- --whole "$wasm" "$data/bindgen" askbridge &&
    twiggy top --format csv -n 1000000 "$data/bindgen/askbridge.wasm" >"$data/top.csv" &&
    python3 - "$data/top.csv" <<'PY'
import collections, csv, glob, re, sys

# A path segment, with the disambiguator that v0 mangling adds to crate names (core[5f1e…]).
SEGMENT = r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[0-9a-f]+\])?::"

def path_of(name):
    """The path a function is defined under; for `<T as Trait>::f`, T's path, or the trait's
    when T is a primitive, a slice or a tuple."""
    if name.startswith("<"):
        inner = re.sub(r"^(?:&(?:mut )?|\*(?:const|mut) |dyn )+", "", name[1:])
        if re.match(SEGMENT, inner):
            return inner
        trait = re.search(r" as (" + SEGMENT + ".*)", inner)
        return trait.group(1) if trait else "core::"  # an inherent method of a primitive
    return name

# askbridge's modules, from its files (src/ui/question_card.rs is ui::question_card), so that a
# function or a type in a path is not taken for a module.
MODULES = set()
for path in glob.glob("src/**/*.rs", recursive=True):
    parts = path[len("src/"):-len(".rs")].split("/")
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    if parts:
        MODULES.add(tuple(parts))

crates, modules = collections.Counter(), collections.Counter()
total = 0
for row in csv.DictReader(open(sys.argv[1])):
    name, size = row["Name"], int(row["ShallowSize"])
    if name.startswith(("custom section", '"function names"', '"local names"')):
        continue  # names and metadata: wasm-opt drops them
    total += size
    if name.startswith("data segment"):
        crates["(data: strings, constants)"] += size
        continue
    segments = [] if name.startswith(("import ", "export ")) else re.findall(SEGMENT, path_of(name))
    if not segments:
        crates["(glue: imports, exports, tables, wasm-bindgen)"] += size
        continue
    crates[segments[0]] += size
    if segments[0] == "askbridge":
        depth = 1
        while depth < 3 and tuple(segments[1:depth + 1]) in MODULES:
            depth += 1
        modules["::".join(segments[:depth])] += size

def table(title, counts, top, rest_label):
    print(f"{title:52} {'bytes':>10} {'share':>10}")
    shown = counts.most_common(top)
    for key, size in shown:
        print(f"  {key:50} {size:10d} {100 * size / total:9.1f}%")
    rest = sum(counts.values()) - sum(size for _, size in shown)
    if rest:
        print(f"  {rest_label.format(len(counts) - len(shown)):50} {rest:10d} {100 * rest / total:9.1f}%")

print(f"\nthe WASM by crate, before wasm-opt ({total} bytes of code and data; generic code counts")
print("toward the crate that defines it)")
table("crate", crates, 15, "{} more")
print()
table("askbridge by module", modules, 8, "{} more modules")
PY
}
# twiggy takes minutes to build on a fresh machine, and the breakdown is wanted when the page is
# over its budget (or when asked: SIZE_BREAKDOWN=1): only then is it installed.
if [ "$kib" -gt "$BUDGET_KIB" ] || [ "${SIZE_BREAKDOWN:-0}" = 1 ]; then
  command -v twiggy >/dev/null || scripts/setup.sh size >&2 || true
  crates || echo "(the breakdown by crate failed, see above; the total stands)"
fi
if [ "$kib" -gt "$BUDGET_KIB" ]; then
  echo "size: the first page load is ${kib} KiB, over the ${BUDGET_KIB} KiB budget" >&2
  exit 1
fi
if [ "$link_kib" -gt "$LINK_BUDGET_KIB" ]; then
  echo "size: a session link's first load is ${link_kib} KiB, over the ${LINK_BUDGET_KIB} KiB budget" >&2
  exit 1
fi
