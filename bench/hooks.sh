#!/usr/bin/env bash
# bench/hooks.sh — every hook binary, whole process, side by side with a
# static no-op binary in one run (bench/spawn interleaves the runs so the
# machine's noise hits all alike), medians and ratios to the no-op:
#
#   docket-ledger      a real PostToolUse Bash payload        (goal <= 1.5x)
#   docket-gate claim  Stop "All done — tests pass." on a session whose
#                      ledger has ENTRIES entries              (goal <= 2x)
#   docket-gate plain  Stop without a claim, same session     (goal <= 2x)
#   docket-judge       a routine call (Bash go test) with MEMORIES memories
#                      in the store                            (goal <= 2.5x)
#
#   bench/hooks.sh                     # N=200 runs each, ENTRIES=10000, MEMORIES=10000
#   N=50 ENTRIES=100000 bench/hooks.sh
#   BASELINE_BIN_DIR=/tmp/old bench/hooks.sh   # also time the hooks in /tmp/old
#
# BASELINE_BIN_DIR names a directory with docket-ledger, docket-gate and
# docket-judge built from another commit (e.g. main:
#   git worktree add /tmp/main main && (cd /tmp/main && CGO_ENABLED=0 go build
#   -trimpath -ldflags "-s -w" -o /tmp/old/ ./cmd/docket-ledger ./cmd/docket-gate ./cmd/docket-judge)
# ); each hook's row is then followed by the baseline's, in the same
# interleaved run, so the two builds are compared under the same load.
# Put that build's docket beside them (./cmd/docket) when its default
# policies differ from this build's: the baseline's state root is then
# initialised by it.
# A process runs measurably slower right after one that wrote and synced
# (the gate with a claim appends its decision), so on a loaded machine
# the row after it is penalised: BASELINE_FIRST=1 puts each baseline row
# before its hook's instead, and the two orders together show the bias.
# Every row gives the median wall time and the median CPU time (user+sys
# of the process, from its rusage; the steadier figure on a loaded
# machine), each with its ratio to the no-op.
#
# The long ledger is written by bench/genledger through the ledger package
# (tool calls with docket-ledger's artifacts, then go_test_pass entries for
# done and tests_pass, then 5 calls). The first stop after those appends
# verifies all of them and is timed on its own ("cold"); later stops verify
# only what was appended since (docs/FORMAT.md, "Verified-prefix state").
set -euo pipefail
N=${N:-200}
ENTRIES=${ENTRIES:-10000}
MEMORIES=${MEMORIES:-10000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/bin
mkdir -p "$bin"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/" \
	./cmd/docket ./cmd/docket-ledger ./cmd/docket-gate ./cmd/docket-judge ./bench/noop ./bench/spawn ./bench/genledger)

export DOCKET_HOME=$work/home
proj=$work/proj
mkdir -p "$proj/.git"
echo 'ref: refs/heads/main' >"$proj/.git/HEAD"
printf 'module example.com/bench\n\ngo 1.22\n' >"$proj/go.mod"

# setup_home DIR DOCKET: a state root initialised by that docket (its own
# default policies), with the long ledger and the memories
setup_home() {
	DOCKET_HOME=$1 "$2" init >/dev/null
	DOCKET_HOME=$1 "$bin/genledger" -n "$ENTRIES" -session bench-gate -cwd "$proj"
	(cd "$root" && DOCKET_HOME=$1 go run ./judge/internal/seedstore -n "$MEMORIES" -workspace "$proj" >/dev/null)
}
t0=$(date +%s.%N)
setup_home "$DOCKET_HOME" "$bin/docket"
t1=$(date +%s.%N)
echo "setup: $ENTRIES ledger entries and $MEMORIES memories in $(python3 -c "print(round($t1-$t0,1))") s"

cp "$root/testdata/realdata/payloads/PostToolUse__serverless-plugins__002.json" "$work/ledger.json"
stop() { printf '{"session_id":"bench-gate","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"%s"}' "$proj" "$1"; }
stop "All done — tests pass." >"$work/stop-claim.json"
stop "I looked at the parser and wrote down what I found." >"$work/stop-plain.json"
printf '{"session_id":"bench-judge","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./...","description":"run tests"},"tool_use_id":"toolu_bench"}' "$proj" >"$work/judge.json"

# The cold stop: the first read verifies every entry and writes the state.
t0=$(date +%s.%N)
"$bin/docket-gate" <"$work/stop-claim.json" >"$work/cold.out"
t1=$(date +%s.%N)
echo "cold stop (first read of $ENTRIES entries): $(python3 -c "print(round(($t1-$t0)*1000,1))") ms -> $(head -c 120 "$work/cold.out")"
for p in stop-claim stop-plain; do
	printf '%-10s -> %s\n' "$p" "$("$bin/docket-gate" <"$work/$p.json" | head -c 120)"
done
printf '%-10s -> %s\n' judge "$("$bin/docket-judge" <"$work/judge.json" | head -c 120)"

# A binary the linker has just written starts measurably slower (0.3-0.9
# ms a run here) than the same bytes written in one go: the page cache
# holds it in small pages. Every timed binary, the baseline's too, is
# copied with cp first, so the rows differ only in their bytes.
for f in noop docket-ledger docket-gate docket-judge; do
	cp "$bin/$f" "$bin/$f.copy" && mv "$bin/$f.copy" "$bin/$f"
done
base=${BASELINE_BIN_DIR:-}
if [ -n "$base" ]; then
	mkdir -p "$work/base"
	cp "$base/docket-ledger" "$base/docket-gate" "$base/docket-judge" "$work/base/"
	base=$work/base
	# the baseline's own state root: two builds on one root would each
	# find the other's compiled-policy cache and rebuild it. With its
	# docket binary beside its hooks, the baseline initialises the root
	# itself (its own default policies: another build's may not load);
	# without it, the root is a copy of this build's.
	if [ -x "$BASELINE_BIN_DIR/docket" ]; then
		setup_home "$work/home-base" "$BASELINE_BIN_DIR/docket"
	else
		cp -a "$DOCKET_HOME" "$work/home-base"
	fi
	DOCKET_HOME=$work/home-base "$base/docket-gate" <"$work/stop-claim.json" >/dev/null # its cold stop
fi
# Settle: the hooks' caches of the approval check and of the compiled
# policies are written only once every file they fingerprint (the state
# root, its policy files) is more than two seconds old, and setup has
# just written them (and the baseline's copy its ctimes). Without the
# wait, the runs of the first seconds each redo the full approval check
# and policy load (about 0.8 ms more per judge call here), as no
# installed hook does. One call of each build then writes its caches.
sleep 2.2
for b in "$bin" ${base:+"$base"}; do
	h=$DOCKET_HOME
	[ "$b" = "$bin" ] || h=$work/home-base
	DOCKET_HOME=$h "$b/docket-judge" <"$work/judge.json" >/dev/null
	DOCKET_HOME=$h "$b/docket-gate" <"$work/stop-plain.json" >/dev/null
done
rows=(-- "<$work/ledger.json" "$bin/noop")
names="noop"
for r in "ledger.json docket-ledger docket-ledger" "stop-claim.json docket-gate docket-gate-claim" "stop-plain.json docket-gate docket-gate-plain" "judge.json docket-judge docket-judge"; do
	set -- $r
	if [ -n "$base" ] && [ -n "${BASELINE_FIRST:-}" ]; then
		rows+=(-- "<$work/$1" "DOCKET_HOME=$work/home-base" "$base/$2")
		names="$names, $3 (baseline)"
	fi
	rows+=(-- "<$work/$1" "$bin/$2")
	names="$names, $3"
	if [ -n "$base" ] && [ -z "${BASELINE_FIRST:-}" ]; then
		rows+=(-- "<$work/$1" "DOCKET_HOME=$work/home-base" "$base/$2")
		names="$names, $3 (baseline)"
	fi
done
echo "runs=$N entries=$ENTRIES memories=$MEMORIES (interleaved; wall and CPU time per process)"
"$bin/spawn" -n "$N" "${rows[@]}"
echo "(rows: $names)"
"$bin/docket" verify --session bench-gate --accept-sealed | head -1
