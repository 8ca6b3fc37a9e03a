#!/usr/bin/env bash
# Installs the peer product CloudCLI (siteboon/claudecodeui, pinned below) into
# target/peer/claudecodeui for the side-by-side answer-path bench (issue 25).
#
# Idempotent: every step is skipped when its result is already there (a stamp file per step
# records the pinned version). Only the npm registry is used: the lockfile's mirror hosts are
# rewritten to registry.npmjs.org, install scripts are skipped (they would download from GitHub),
# and the three native modules are compiled here against the local node's headers.
#
# Source: the git mirror of github:siteboon/claudecodeui (PEER_GIT_DIR, the path the session's
# `fetch` tool returns), else the npm tarball of @cloudcli-ai/cloudcli@$VERSION with the lockfile
# taken from the git mirror if there is one (the tarball has no lockfile: then `npm install`
# resolves within the package.json ranges instead of `npm ci`).
set -euo pipefail

VERSION=1.37.2
TAG=v$VERSION
COMMIT=677b7ba43695d5624d1a981c62f87fa086187991
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DEST=${PEER_DEST:-$ROOT/target/peer/claudecodeui}
GIT_DIR_DEFAULT=/work/.mirror/siteboon+claudecodeui/repo
PEER_GIT_DIR=${PEER_GIT_DIR:-$GIT_DIR_DEFAULT}
REGISTRY=https://registry.npmjs.org/

say() { printf '[peer setup] %s\n' "$*"; }
stamp() { [ -f "$DEST/.peer-$1" ] && [ "$(cat "$DEST/.peer-$1")" = "$VERSION" ]; }
mark() { echo "$VERSION" > "$DEST/.peer-$1"; }

for tool in node npm python3 make g++; do
  command -v "$tool" >/dev/null || { say "missing $tool"; exit 1; }
done

# node-gyp must not download headers: use the ones installed with this node (e.g. /usr/include/node).
NODE_PREFIX=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
if [ ! -f "$NODE_PREFIX/include/node/node.h" ]; then
  say "no node headers at $NODE_PREFIX/include/node; set NODEDIR to a dir with include/node"; exit 1
fi
NODEDIR=${NODEDIR:-$NODE_PREFIX}

# 1. Source.
if stamp source; then
  say "source: $DEST is already CloudCLI $VERSION"
else
  rm -rf "$DEST"
  mkdir -p "$DEST"
  if git --git-dir="$PEER_GIT_DIR" rev-parse -q --verify "$COMMIT^{commit}" >/dev/null 2>&1; then
    say "source: git archive $TAG ($COMMIT) from $PEER_GIT_DIR"
    git --git-dir="$PEER_GIT_DIR" archive "$COMMIT" | tar -x -C "$DEST"
  else
    say "source: no git mirror with $COMMIT at $PEER_GIT_DIR; using the npm tarball @cloudcli-ai/cloudcli@$VERSION"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --registry "$REGISTRY" "@cloudcli-ai/cloudcli@$VERSION" >/dev/null)
    tar -x -C "$DEST" --strip-components=1 -f "$tmp"/*.tgz
    rm -rf "$tmp"
  fi
  mark source
fi
cd "$DEST"

# 2. Dependencies from the npm registry only, no install scripts.
if stamp deps; then
  say "deps: node_modules already installed"
else
  if [ -f package-lock.json ]; then
    n=$(grep -c 'registry.npmmirror.com' package-lock.json || true)
    sed -i 's#https://registry\.npmmirror\.com/#https://registry.npmjs.org/#g' package-lock.json
    say "deps: rewrote $n lockfile URLs from registry.npmmirror.com to registry.npmjs.org"
    say "deps: npm ci --ignore-scripts (a few minutes)"
    npm ci --ignore-scripts --no-audit --no-fund --registry "$REGISTRY" --loglevel=error
  else
    say "deps: no lockfile; npm install --ignore-scripts"
    npm install --ignore-scripts --no-audit --no-fund --registry "$REGISTRY" --loglevel=error
  fi
  mark deps
fi

# 3. Native modules, compiled here against the local node headers (no header download).
if stamp native && node -e "require('better-sqlite3')(':memory:');require('bcrypt');require('node-pty')" 2>/dev/null; then
  say "native: better-sqlite3, bcrypt, node-pty already load"
else
  say "native: npm rebuild better-sqlite3 bcrypt node-pty from source, nodedir=$NODEDIR (slow on 2 cores)"
  npm_config_build_from_source=true npm_config_nodedir="$NODEDIR" \
    npm rebuild better-sqlite3 bcrypt node-pty --no-audit --no-fund --loglevel=error
  node -e "require('better-sqlite3')(':memory:');require('bcrypt').hashSync('x',4);require('node-pty')"
  say "native: all three load"
  mark native
fi

# 4. Frontend (vite) and server (tsc) build: dist/ and dist-server/.
if stamp build && [ -f dist/index.html ] && [ -f dist-server/server/index.js ]; then
  say "build: dist/ and dist-server/ already built"
else
  say "build: npm run build (vite + tsc)"
  npm run build > .peer-build.log 2>&1 || { tail -40 .peer-build.log; say "build failed: $DEST/.peer-build.log"; exit 1; }
  mark build
fi

say "done: CloudCLI $VERSION in $DEST"
say "start it as scripts/peer/README.md says (node dist-server/server/index.js with SERVER_PORT, HOST=127.0.0.1, CLAUDE_CLI_PATH, ANTHROPIC_BASE_URL)"
