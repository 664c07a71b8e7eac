#!/usr/bin/env bash
# bench/prompt.sh — whole-process cost of docket-ledger recording a
# UserPromptSubmit (the user_prompt entry, the session's O-Tag, the trust
# refresh) on a session of 10 and of 10,000 entries (bench/genledger).
# The refresh reads only what the ledger gained since the last prompt,
# so both rows should cost the same.
#
#   N=30 bench/prompt.sh     # prompts per row (default 15)
set -euo pipefail
N=${N:-15}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "keeping $work" || trap 'rm -rf "$work"' EXIT
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/" ./cmd/docket ./cmd/docket-ledger ./bench/genledger)
payload='{"session_id":"bench-prompt","transcript_path":"/dev/null","cwd":"/tmp","hook_event_name":"UserPromptSubmit","prompt":"go on"}'
for entries in 10 10000; do
	export DOCKET_HOME="$work/home-$entries"
	"$work/docket" init >/dev/null
	"$work/genledger" -n "$entries" -session bench-prompt -cwd /tmp
	# the session's first prompt scans it once
	echo "$payload" | "$work/docket-ledger" --runtime claude
	ms=()
	for _ in $(seq "$N"); do
		t0=$(date +%s%N)
		echo "$payload" | "$work/docket-ledger" --runtime claude
		t1=$(date +%s%N)
		ms+=($(((t1 - t0) / 1000)))
	done
	printf '%s\n' "${ms[@]}" | sort -n | awk -v e="$entries" '{a[NR]=$1} END {printf "entries=%-6d prompts=%d  p50 %.1f ms  p90 %.1f ms\n", e, NR, a[int(NR*0.5)+1]/1000, a[int(NR*0.9)]/1000}'
done
