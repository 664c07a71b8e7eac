#!/usr/bin/env bash
# bench/judge.sh — whole-process cost of docket-judge against a static
# no-op binary that only reads its stdin. The state root holds 100 policy
# rules in tools.yaml and 10,000 memories in the store; `docket init` keys
# are created when the CLI builds, so every decision is also appended to
# the ledger.
#
#   N=300 bench/judge.sh          # runs per command (default 200)
#   MEMORIES=10000 bench/judge.sh # memories to seed (default 10000)
#
# Payloads: "safe" (Bash go test: reversible_write, no recall), "read"
# (Read: read_only), "push" (git push to main: high_risk, recalls from the
# store, writes back, answers "ask"). Builds: docket-judge (as shipped)
# and docket-judge built with -tags nostore (store not linked).
# Runs are interleaved (noop, judge, judge-nostore, noop, …) by
# bench/spawn so background load hits all alike (the "env DOCKET_HOME=…"
# rows pay one extra exec for env itself); it prints
# median and p90 wall time per process and the ratio of medians to noop.
set -euo pipefail

N=${N:-200}
MEMORIES=${MEMORIES:-10000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/bin"
build() { CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" "$@"; }
(cd "$root" && build -o "$work/bin/" ./bench/noop ./bench/spawn)
(cd "$root" && build -o "$work/bin/docket-judge" ./cmd/docket-judge)
(cd "$root" && build -tags nostore -o "$work/bin/docket-judge-nostore" ./cmd/docket-judge)

export DOCKET_HOME="$work/home"
mkdir -p "$DOCKET_HOME/policies"
ledger=no
if (cd "$root" && build -o "$work/bin/docket" ./cmd/docket 2>/dev/null) && "$work/bin/docket" init >/dev/null 2>&1; then
	ledger=yes
fi
# 100 rules: the defaults plus generated deny rules.
{
	sed '/^write_paths:/,$d' "$root/policies/defaults/tools.yaml"
	n=$(grep -c '^  - id:' "$root/policies/defaults/tools.yaml")
	for i in $(seq $((n + 1)) 100); do
		printf '  - {id: bench-%03d, effect: deny, tool: Bash, command: "bench-tool-%03d *", reason: "benchmark rule %d"}\n' "$i" "$i" "$i"
	done
	sed -n '/^write_paths:/,$p' "$root/policies/defaults/tools.yaml"
} >"$DOCKET_HOME/policies/tools.yaml"
rules=$(grep -c '^  - {*id: \|^  - id:' "$DOCKET_HOME/policies/tools.yaml")

# The same policies and store without keys: decisions are not appended to
# the ledger (isolates the ledger's share of the cost).
nokeys="$work/home-nokeys"
mkdir -p "$nokeys/policies"
cp "$DOCKET_HOME/policies/tools.yaml" "$nokeys/policies/"
# docket runs only on approved policy: approve the benchmark's tools.yaml
# (the no-keys home gets the HMAC key alone to sign its approval; without
# the checkpoint key it still appends nothing)
if [ "$ledger" = yes ]; then
	"$work/bin/docket" policy approve --yes --by bench >/dev/null
	mkdir -p "$nokeys/keys"
	cp "$DOCKET_HOME/keys/hmac.key" "$nokeys/keys/"
	DOCKET_HOME=$nokeys "$work/bin/docket" policy approve --yes --by bench >/dev/null
fi

proj="$work/proj"
mkdir -p "$proj/.git"
echo 'ref: refs/heads/main' >"$proj/.git/HEAD"
(cd "$root" && go run ./judge/internal/seedstore -n "$MEMORIES" -workspace "$proj")
cp "$DOCKET_HOME/store.db" "$nokeys/store.db"

payload() { # tool input
	printf '{"session_id":"bench","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"%s","tool_input":%s,"tool_use_id":"toolu_bench"}' "$proj" "$1" "$2"
}
payload Bash '{"command":"go test ./...","description":"run tests"}' >"$work/safe.json"
payload Read "{\"file_path\":\"$proj/main.go\"}" >"$work/read.json"
payload Bash '{"command":"git push origin main"}' >"$work/push.json"
# warm the policy cache and check the answers
for p in safe read push; do
	printf '%-5s -> %s\n' "$p" "$("$work/bin/docket-judge" <"$work/$p.json" 2>/dev/null | head -c 160)"
	DOCKET_HOME=$nokeys "$work/bin/docket-judge" <"$work/$p.json" >/dev/null 2>&1
done

echo "rules=$rules memories=$MEMORIES ledger=$ledger runs=$N (interleaved, wall time per process)"
for p in safe read push; do
	echo "== $p"
	"$work/bin/spawn" -n "$N" -stdin "$work/$p.json" -- "$work/bin/noop" \
		-- "$work/bin/docket-judge" -- "$work/bin/docket-judge-nostore" \
		-- env DOCKET_HOME="$nokeys" "$work/bin/docket-judge" \
		-- env DOCKET_HOME="$nokeys" "$work/bin/docket-judge-nostore"
done
