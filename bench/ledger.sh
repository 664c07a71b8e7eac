#!/usr/bin/env bash
# Ledger benchmarks. Prints medians and ratios; run from anywhere:
#   bench/ledger.sh            (N=300 spawns per command by default)
# Whole processes are timed side by side, interleaved, in one run (see
# bench/spawn), so machine noise hits every command alike.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-300}
out=bench/out
mkdir -p "$out"
CGO_ENABLED=0 go build -trimpath -o "$out/" ./cmd/docket ./cmd/docket-ledger ./bench/noop ./bench/spawn
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DOCKET_HOME="$work/docket"
"$out/docket" init >/dev/null
payload=testdata/realdata/payloads/PostToolUse__serverless-plugins__002.json

echo "== 1. whole-process hook time on a real Bash payload ($N runs each, interleaved; see also bench/hooks.sh)"
echo "   targets: docket-ledger <= 1.5x noop; python hook >= 20x docket-ledger"
mkdir -p "$work/py"
python3 -c 'import os; print(os.urandom(32).hex())' >"$work/py/hmac.key"
PYHOOK_HOME="$work/py" "$out/spawn" -n "$N" -stdin "$payload" -- "$out/noop" -- "$out/docket-ledger" -- python3 bench/pyhook/ledger_hook.py

echo
echo "== 2. append cost at 100,000 entries vs an empty ledger (target: within 1.2x)"
go test -run=NONE -bench=BenchmarkAppend -benchtime=2000x -count=3 ./ledger | grep Benchmark

echo
echo "== 3. docket verify throughput vs sha256sum over the same bytes (target: >= 1/3)"
big="$work/big.json"
python3 - "$big" <<'PY'
import json, sys
out = "x" * 65536 + "\n"
json.dump({"session_id": "bench-verify", "hook_event_name": "PostToolUse", "tool_name": "Bash",
           "tool_input": {"command": "cat big.log"},
           "tool_response": {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}}, open(sys.argv[1], "w"))
PY
for i in $(seq 1 1500); do "$out/docket-ledger" <"$big"; done
files=("$DOCKET_HOME/ledger/bench-verify.jsonl" "$DOCKET_HOME/artifacts/bench-verify/pack")
bytes=$(cat "${files[@]}" | wc -c)
t_verify=$( { /usr/bin/time -f %e "$out/docket" verify --session bench-verify >/dev/null; } 2>&1 | tail -1)
t_sha=$( { /usr/bin/time -f %e sha256sum "${files[@]}" >/dev/null; } 2>&1 | tail -1)
for k in 1 2; do
  t=$( { /usr/bin/time -f %e "$out/docket" verify --session bench-verify >/dev/null; } 2>&1 | tail -1); t_verify=$(python3 -c "print(min($t_verify,$t))")
  t=$( { /usr/bin/time -f %e sha256sum "${files[@]}" >/dev/null; } 2>&1 | tail -1); t_sha=$(python3 -c "print(min($t_sha,$t))")
done
python3 - "$bytes" "$t_verify" "$t_sha" <<'PY'
import sys
b, tv, ts = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
tv, ts = max(tv, 0.01), max(ts, 0.01)
print(f"   {b/2**20:.0f} MiB: docket verify {b/tv/2**20:.0f} MiB/s, sha256sum {b/ts/2**20:.0f} MiB/s, ratio {ts/tv:.2f} (best of 3)")
PY

echo
echo "== 4. 32 concurrent hook processes x 200 appends to one session"
sess="$work/conc.json"
sed 's/"session_id":"[^"]*"/"session_id":"bench-conc"/' "$payload" >"$sess"
start=$(date +%s.%N)
for p in $(seq 1 32); do
  ( for i in $(seq 1 200); do "$out/docket-ledger" <"$sess" || echo "append failed" >&2; done ) &
done
wait
end=$(date +%s.%N)
lines=$(wc -l <"$DOCKET_HOME/ledger/bench-conc.jsonl")
echo "   entries: $lines (want 6400) in $(python3 -c "print(round($end-$start,1))") s"
"$out/docket" verify --session bench-conc | head -1
