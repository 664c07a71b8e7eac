#!/usr/bin/env bash
# bench/sealed.sh — the hooks as thin clients of `docket serve --socket`
# (sealed mode), whole process, side by side with the no-op binary and
# with the same hooks in-process, in one interleaved run (bench/spawn):
#
#   docket-ledger  --socket   a real PostToolUse Bash payload   (goal <= 1.3x)
#   docket-gate    --socket   Stop "All done — tests pass." on a session
#                             whose ledger has ENTRIES entries   (goal <= 1.3x)
#   docket-judge   --socket   a routine call (Bash go test)      (goal <= 1.3x)
#   docket-hook ledger|gate|judge --socket: the same through the
#                             client-only binary (what install --sealed wires)
#   docket-hook judge with a Stop payload: the round trip alone (the
#                             daemon decodes it and answers nothing)
#
#   bench/sealed.sh                   # N=200 runs each, ENTRIES=10000
#   N=50 ENTRIES=100000 bench/sealed.sh
#   STOPS=1000 bench/sealed.sh       # after 1,000 stops on the session first
#   CPU_CALLS=2000 bench/sealed.sh   # the daemon's CPU per call over 2,000 calls
#   BASELINE_BIN_DIR=/tmp/old bench/sealed.sh   # also time the build in /tmp/old
#
# BASELINE_BIN_DIR names a directory with docket, docket-ledger,
# docket-gate, docket-judge and docket-hook built from another commit: a
# second daemon from it serves a copy of the state root on a socket of its
# own, and each thin-client row is followed by the same row of the
# baseline, in the same interleaved run.
#
# The daemon runs as the invoking user here: the timing is the socket
# round trip, not the user switch (internal/sealedtest covers that).
set -euo pipefail
N=${N:-200}
ENTRIES=${ENTRIES:-10000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
bin=$work/bin
mkdir -p "$bin"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/" \
	./cmd/docket ./cmd/docket-ledger ./cmd/docket-gate ./cmd/docket-judge ./cmd/docket-hook ./bench/noop ./bench/spawn ./bench/genledger)

export DOCKET_HOME=$work/home
proj=$work/proj
mkdir -p "$proj/.git"
echo 'ref: refs/heads/main' >"$proj/.git/HEAD"
printf 'module example.com/bench\n\ngo 1.22\n' >"$proj/go.mod"
# setup_home DIR DOCKET: a state root initialised by that docket (its own
# default policies: another build's may not load), with one session for
# the daemon and one for the in-process rows: in sealed mode only the
# daemon writes a ledger, and its kept per-session state is dropped
# whenever another process appends
setup_home() {
	DOCKET_HOME=$1 "$2" init >/dev/null
	DOCKET_HOME=$1 "$bin/genledger" -n "$ENTRIES" -session bench-gate -cwd "$proj"
	DOCKET_HOME=$1 "$bin/genledger" -n "$ENTRIES" -session bench-gate-local -cwd "$proj"
}
setup_home "$DOCKET_HOME" "$bin/docket"

base=${BASELINE_BIN_DIR:-}
[ -n "$base" ] && setup_home "$work/home-base" "$base/docket"

sock=$work/docket.sock
"$bin/docket" serve --addr "" --socket "$sock" 2>"$work/serve.log" &
daemon=$!
bdaemon=
trap 'kill $daemon $bdaemon 2>/dev/null; wait $daemon $bdaemon 2>/dev/null; rm -rf "$work"' EXIT
bsock=$work/base.sock
if [ -n "$base" ]; then
	DOCKET_HOME=$work/home-base "$base/docket" serve --addr "" --socket "$bsock" 2>"$work/serve-base.log" &
	bdaemon=$!
fi
for _ in $(seq 100); do [ -S "$sock" ] && { [ -z "$base" ] || [ -S "$bsock" ]; } && break; sleep 0.05; done

cp "$root/testdata/realdata/payloads/PostToolUse__serverless-plugins__002.json" "$work/ledger.json"
# the in-process rows write sessions of their own (see setup_home)
sed 's/"session_id":"[^"]*"/"session_id":"bench-ledger-local"/' "$work/ledger.json" >"$work/ledger-local.json"
printf '{"session_id":"bench-gate","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"All done — tests pass."}' "$proj" >"$work/stop-claim.json"
printf '{"session_id":"bench-gate-local","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"All done — tests pass."}' "$proj" >"$work/stop-claim-local.json"
for s in bench-judge bench-judge-local; do
	printf '{"session_id":"%s","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./...","description":"run tests"},"tool_use_id":"toolu_bench"}' "$s" "$proj" >"$work/${s#bench-}.json"
done

# Settle first: the daemon keeps no state built from a file younger than
# two seconds, and the in-process hooks write no cache of one (see
# bench/hooks.sh); setup has just written them all.
sleep 2.2
# warm: the first stop verifies the whole ledger and writes its state
"$bin/docket-gate" --socket "$sock" <"$work/stop-claim.json" >/dev/null
[ -z "$base" ] || "$base/docket-gate" --socket "$bsock" <"$work/stop-claim.json" >/dev/null
"$bin/docket-gate" <"$work/stop-claim-local.json" >/dev/null
# a long session: STOPS stops on it before timing
for _ in $(seq "${STOPS:-0}"); do
	"$bin/docket-hook" gate --socket "$sock" <"$work/stop-claim.json" >/dev/null
	[ -z "$base" ] || "$base/docket-hook" gate --socket "$bsock" <"$work/stop-claim.json" >/dev/null
done
for h in judge:judge ledger:ledger gate:stop-claim; do
	printf '%-7s -> %s\n' "${h%%:*}" "$("$bin/docket-${h%%:*}" --socket "$sock" <"$work/${h#*:}.json" | head -c 100)"
done

# thin-client rows: payload, binary and hook; each followed by the
# baseline's when there is one
rows=(-- "<$work/ledger.json" "$bin/noop")
names="noop"
for r in "ledger.json docket-ledger" "stop-claim.json docket-gate" "judge.json docket-judge" \
	"ledger.json docket-hook ledger" "stop-claim.json docket-hook gate" "judge.json docket-hook judge" \
	"stop-claim.json docket-hook judge"; do
	set -- $r
	rows+=(-- "<$work/$1" "$bin/$2" ${3:+"$3"} --socket "$sock")
	names="$names, $2${3:+ $3} ($1)"
	if [ -n "$base" ]; then
		rows+=(-- "<$work/$1" "$base/$2" ${3:+"$3"} --socket "$bsock")
		names="$names, $2${3:+ $3} ($1, baseline)"
	fi
done
echo "runs=$N entries=$ENTRIES (interleaved, wall time per process)"
"$bin/spawn" -n "$N" "${rows[@]}" \
	-- "<$work/ledger-local.json" "$bin/docket-ledger" \
	-- "<$work/stop-claim-local.json" "$bin/docket-gate" \
	-- "<$work/judge-local.json" "$bin/docket-judge"
echo "(rows: $names;"
echo " then the hook binaries in-process: ledger, gate, judge. docket-hook judge on stop-claim.json is the"
echo " round trip alone: the daemon only decodes it)"

# The daemon's CPU time per call of each hook (user+sys from
# /proc/PID/stat across CPU_CALLS calls in a row, its committer's fdatasync
# and head signing included). The thin client's wall time above is
# spawn, round trip and this: on a machine with few cores the daemon's
# work competes with the next hook's spawn, so it counts even where the
# daemon answers before doing it.
cpu_calls=${CPU_CALLS:-500}
ticks=$(getconf CLK_TCK)
daemon_cpu() { awk '{print $14+$15}' "/proc/$daemon/stat"; }
if [ -r "/proc/$daemon/stat" ]; then
	echo "daemon CPU per call ($cpu_calls calls each, clock tick $((1000000 / ticks)) µs):"
	for h in "ledger ledger.json" "gate stop-claim.json" "judge judge.json" "judge stop-claim.json round-trip"; do
		set -- $h
		a=$(daemon_cpu)
		for _ in $(seq "$cpu_calls"); do "$bin/docket-hook" "$1" --socket "$sock" <"$work/$2" >/dev/null 2>&1; done
		b=$(daemon_cpu)
		printf '  %-7s %-16s %6d µs%s\n' "$1" "$2" $(((b - a) * 1000000 / ticks / cpu_calls)) "${3:+ (the round trip alone)}"
	done
fi
"$bin/docket" verify --session bench-gate --accept-sealed | head -1
