#!/usr/bin/env bash
# bench/startup.sh — the bare start-up of each hook binary, side by side
# with the static no-op binary in one interleaved run (bench/spawn): stdin
# is /dev/null, so each hook stops at once on "hook payload is not a JSON
# object" (exit 1 or 2, timed all the same) and the row is what every
# call pays before any work: exec and page faults of the binary, the Go
# runtime's start, and the init of every package the binary links.
#
#   bench/startup.sh                           # N=200 runs each
#   BASELINE_BIN_DIR=/tmp/old bench/startup.sh # also the hooks in /tmp/old
#
# BASELINE_BIN_DIR names a directory with docket-ledger, docket-gate and
# docket-judge built from another commit (see bench/hooks.sh); each hook's
# row is then followed by the baseline's (preceded with BASELINE_FIRST=1). After the table, each binary's
# size and the sum of its package inits (GODEBUG=inittrace=1, the median
# of INITRUNS runs) are listed; `INITS=1` also lists each binary's ten
# most expensive package inits.
set -euo pipefail
N=${N:-200}
INITRUNS=${INITRUNS:-21}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/bin
mkdir -p "$bin"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin/" \
	./cmd/docket-ledger ./cmd/docket-gate ./cmd/docket-judge ./bench/noop ./bench/spawn)

# A binary the linker has just written starts measurably slower (here
# 0.3-0.9 ms a run) than the same bytes written in one go: the page cache
# holds it in small pages, and exec maps them one by one. Every timed
# binary, the baseline's too, is copied with cp first, so all rows start
# from the same kind of page cache and differ only in their bytes.
timed=$work/timed
mkdir -p "$timed/base"
cp "$bin/noop" "$bin/docket-ledger" "$bin/docket-gate" "$bin/docket-judge" "$timed/"
base=${BASELINE_BIN_DIR:-}
if [ -n "$base" ]; then
	cp "$base/docket-ledger" "$base/docket-gate" "$base/docket-judge" "$timed/base/"
fi
rows=(-- "</dev/null" "$timed/noop")
names="noop"
all=("$timed/noop")
for h in docket-ledger docket-gate docket-judge; do
	if [ -n "$base" ] && [ -n "${BASELINE_FIRST:-}" ]; then
		rows+=(-- "</dev/null" "$timed/base/$h")
		names="$names, $h (baseline)"
		all+=("$timed/base/$h")
	fi
	rows+=(-- "</dev/null" "$timed/$h")
	names="$names, $h"
	all+=("$timed/$h")
	if [ -n "$base" ] && [ -z "${BASELINE_FIRST:-}" ]; then
		rows+=(-- "</dev/null" "$timed/base/$h")
		names="$names, $h (baseline)"
		all+=("$timed/base/$h")
	fi
done
echo "runs=$N (interleaved; stdin /dev/null; wall and CPU time per process)"
"$bin/spawn" -n "$N" -allow-fail "${rows[@]}"
echo "(rows: $names)"

# inits prints the sum over packages of the median (of INITRUNS runs)
# init clock time of $1, in microseconds, then (INITS=1) the ten costliest.
inits() {
	for _ in $(seq "$INITRUNS"); do
		GODEBUG=inittrace=1 "$1" </dev/null 2>&1 >/dev/null | awk '$1 == "init" { print $2, $5 * 1000 }' || true
	done | sort -k1,1 -k2,2n | awk '
		function flush() { if (p != "") printf "%.1f %s\n", v[int((n + 1) / 2)], p }
		$1 != p { flush(); p = $1; n = 0 }
		{ v[++n] = $2 }
		END { flush() }' | sort -rn >"$work/inits"
	awk '{ s += $1 } END { printf "%6.0f us", s }' "$work/inits"
	if [ -n "${INITS:-}" ]; then
		head -10 "$work/inits" | awk '{ printf "\n%70s %6.1f us  %s", "", $1, $2 }'
	fi
	echo
}
printf '%-60s %9s %s\n' binary bytes "package inits (sum of per-package medians)"
for b in "${all[@]}"; do
	printf '%-60s %9d %s\n' "$b" "$(stat -c %s "$b")" "$(inits "$b")"
done
