#!/usr/bin/env bash
# Installs the OpenAI Agents SDK for JavaScript, pinned, from the npm
# registry only, into examples/agents-sdk/.npm (git-ignored), where the
# example and its test look. Node: e2e/.npm/bin/node (from e2e/install.sh)
# when present, else the system's node if it is 20 or newer (the SDK's
# floor), else Debian's nodejs. Running it again with the same pins does
# nothing.
set -euo pipefail
cd "$(dirname "$0")"

AGENTS_VERSION=0.20.0 # @openai/agents (node >=20)
OPENAI_VERSION=7.57.0 # openai, which @openai/agents 0.20.0 needs (^7.2.0)
ZOD_VERSION=4.6.7     # zod, its peer dependency (^4.0.0)

dir=$PWD/.npm
pins="agents@$AGENTS_VERSION openai@$OPENAI_VERSION zod@$ZOD_VERSION"

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
node=""
if [ -x ../../e2e/.npm/bin/node ]; then
	node=$(cd ../../e2e/.npm/bin && pwd)/node
elif command -v node >/dev/null 2>&1 && [ "$(node_major node)" -ge 20 ]; then
	node=$(command -v node)
fi
if [ -z "$node" ] || ! command -v npm >/dev/null 2>&1; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
	node=$(command -v node)
	if [ "$(node_major "$node")" -lt 20 ]; then
		echo "agents-sdk: node $("$node" --version) is older than 20; run e2e/install.sh first" >&2
		exit 1
	fi
fi

if [ -f "$dir/pins" ] && [ "$(cat "$dir/pins")" = "$pins" ] && [ -d "$dir/node_modules/@openai/agents" ]; then
	echo "agents-sdk: already installed ($pins)"
else
	rm -rf "$dir"
	mkdir -p "$dir"
	PATH=$(dirname "$node"):$PATH npm install --no-audit --no-fund --no-save --loglevel=error --ignore-scripts \
		--prefix "$dir" "@openai/agents@$AGENTS_VERSION" "openai@$OPENAI_VERSION" "zod@$ZOD_VERSION"
	echo "$pins" >"$dir/pins"
fi
mkdir -p "$dir/bin"
ln -sfn "$node" "$dir/bin/node"
# ES modules resolve packages from node_modules beside them
ln -sfn .npm/node_modules node_modules
v=$("$node" -p 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).version' "$dir/node_modules/@openai/agents/package.json")
echo "agents-sdk: @openai/agents $v on node $("$node" --version)"
[ "$v" = "$AGENTS_VERSION" ] || { echo "agents-sdk: wrong version installed" >&2; exit 1; }
