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
"$bin/docket" init >/dev/null
proj=$work/proj
mkdir -p "$proj/.git"
echo 'ref: refs/heads/main' >"$proj/.git/HEAD"
printf 'module example.com/bench\n\ngo 1.22\n' >"$proj/go.mod"
# one session for the daemon, one for the in-process rows: in sealed mode
# only the daemon writes a ledger, and its kept per-session state is
# dropped whenever another process appends
"$bin/genledger" -n "$ENTRIES" -session bench-gate -cwd "$proj"
"$bin/genledger" -n "$ENTRIES" -session bench-gate-local -cwd "$proj"

sock=$work/docket.sock
"$bin/docket" serve --addr "" --socket "$sock" 2>"$work/serve.log" &
daemon=$!
trap 'kill $daemon 2>/dev/null; wait $daemon 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.05; done

cp "$root/testdata/realdata/payloads/PostToolUse__serverless-plugins__002.json" "$work/ledger.json"
printf '{"session_id":"bench-gate","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"All done — tests pass."}' "$proj" >"$work/stop-claim.json"
printf '{"session_id":"bench-gate-local","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"All done — tests pass."}' "$proj" >"$work/stop-claim-local.json"
printf '{"session_id":"bench-judge","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"go test ./...","description":"run tests"},"tool_use_id":"toolu_bench"}' "$proj" >"$work/judge.json"

# warm: the first stop verifies the whole ledger and writes its state
"$bin/docket-gate" --socket "$sock" <"$work/stop-claim.json" >/dev/null
"$bin/docket-gate" <"$work/stop-claim-local.json" >/dev/null
for h in judge:judge ledger:ledger gate:stop-claim; do
	printf '%-7s -> %s\n' "${h%%:*}" "$("$bin/docket-${h%%:*}" --socket "$sock" <"$work/${h#*:}.json" | head -c 100)"
done

echo "runs=$N entries=$ENTRIES (interleaved, wall time per process)"
"$bin/spawn" -n "$N" \
	-- "<$work/ledger.json" "$bin/noop" \
	-- "<$work/ledger.json" "$bin/docket-ledger" --socket "$sock" \
	-- "<$work/stop-claim.json" "$bin/docket-gate" --socket "$sock" \
	-- "<$work/judge.json" "$bin/docket-judge" --socket "$sock" \
	-- "<$work/ledger.json" "$bin/docket-hook" ledger --socket "$sock" \
	-- "<$work/stop-claim.json" "$bin/docket-hook" gate --socket "$sock" \
	-- "<$work/judge.json" "$bin/docket-hook" judge --socket "$sock" \
	-- "<$work/stop-claim.json" "$bin/docket-hook" judge --socket "$sock" \
	-- "<$work/ledger.json" "$bin/docket-ledger" \
	-- "<$work/stop-claim-local.json" "$bin/docket-gate" \
	-- "<$work/judge.json" "$bin/docket-judge"
echo "(rows: noop; the hook binaries as thin clients: docket-ledger, docket-gate with a claim, docket-judge;"
echo " docket-hook ledger, gate, judge; docket-hook judge on a Stop payload (the round trip alone: the"
echo " daemon only decodes it); the hook binaries in-process: ledger, gate, judge)"
"$bin/docket" verify --session bench-gate --accept-sealed | head -1
