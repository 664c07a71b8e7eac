#!/usr/bin/env bash
# bench/judge.sh — whole-process cost of docket-judge against a static
# no-op binary that only reads its stdin, with 100 policy rules in
# tools.yaml and (when the store can be seeded) 10,000 memories.
#
#   N=500 bench/judge.sh
#
# Prints the median and p90 wall time of each binary per payload and the
# ratio of medians. Uses hyperfine when installed, else a plain loop.
set -euo pipefail

N=${N:-300}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/noop" "$work/bin"
cat >"$work/noop/main.go" <<'GO'
package main

import (
	"io"
	"os"
)

func main() { io.Copy(io.Discard, os.Stdin) }
GO
printf 'module noop\n\ngo 1.22\n' >"$work/noop/go.mod"
(cd "$work/noop" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/bin/noop" .)
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/bin/docket-judge" ./cmd/docket-judge)

# State root: default policies plus 100 generated rules.
export DOCKET_HOME="$work/home"
mkdir -p "$DOCKET_HOME/policies"
{
	cat "$root/policies/defaults/tools.yaml"
	n=$(grep -c '^  - id:' "$root/policies/defaults/tools.yaml")
	for i in $(seq $((n + 1)) 100); do
		printf '  - {id: bench-%03d, effect: deny, tool: Bash, command: "bench-tool-%03d *", reason: "benchmark rule %d"}\n' "$i" "$i" "$i"
	done
} | awk '/^write_paths:/{hold=1} hold{buf=buf $0 "\n"; next} {print} END{printf "%s", buf}' >"$DOCKET_HOME/policies/tools.yaml"
rules=$(grep -c 'id: ' "$DOCKET_HOME/policies/tools.yaml")

# 10,000 memories, when the store offers a seeding command.
memories=0
if (cd "$root" && go run ./cmd/docket store seed -h >/dev/null 2>&1); then
	(cd "$root" && go run ./cmd/docket store seed --memories 10000) && memories=10000
fi

# A project to run in.
proj="$work/proj"
mkdir -p "$proj/.git"
echo 'ref: refs/heads/main' >"$proj/.git/HEAD"

payload() { # tool input
	printf '{"session_id":"bench","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"%s","tool_input":%s,"tool_use_id":"toolu_bench"}' "$proj" "$1" "$2"
}
payload Bash '{"command":"go test ./...","description":"run tests"}' >"$work/safe.json"
payload Read "{\"file_path\":\"$proj/main.go\"}" >"$work/read.json"
payload Bash '{"command":"git push origin main"}' >"$work/push.json"

median() { sort -n | awk '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; p=a[int(NR*0.9)]; printf "%d %d\n", m, p}'; }

loop() { # binary payload -> "median_us p90_us"
	local bin=$1 in=$2 i s e
	for ((i = 0; i < 20; i++)); do "$bin" <"$in" >/dev/null 2>&1 || true; done
	for ((i = 0; i < N; i++)); do
		s=$(date +%s%N)
		"$bin" <"$in" >/dev/null 2>&1 || true
		e=$(date +%s%N)
		echo $(((e - s) / 1000))
	done | median
}

echo "rules=$rules memories=$memories runs=$N"
printf '%-6s %14s %14s %14s %14s %7s\n' payload noop_median_us noop_p90_us judge_median_us judge_p90_us ratio
if command -v hyperfine >/dev/null && [ -z "${NO_HYPERFINE:-}" ]; then
	# hyperfine subtracts the shell's own start-up from each measurement.
	for p in safe read push; do
		hyperfine -w 20 -r "$N" --export-json "$work/$p.hf.json" \
			"$work/bin/noop < $work/$p.json" "$work/bin/docket-judge < $work/$p.json" >/dev/null 2>&1
		awk -v p="$p" '
			/"median":/ { gsub(/[^0-9.e-]/, "", $2); med[++m] = $2 * 1e6 }
			/"times":/ { t++ ; next }
			END { printf "%-6s %14d %14s %14d %14s %7.2f\n", p, med[1], "-", med[2], "-", med[2] / med[1] }
		' "$work/$p.hf.json"
	done
	exit 0
fi
for p in safe read push; do
	read -r nm np < <(loop "$work/bin/noop" "$work/$p.json")
	read -r jm jp < <(loop "$work/bin/docket-judge" "$work/$p.json")
	printf '%-6s %14d %14d %14d %14d %7.2f\n' "$p" "$nm" "$np" "$jm" "$jp" "$(echo "$jm / $nm" | bc -l)"
done
