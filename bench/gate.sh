#!/usr/bin/env bash
# bench/gate.sh — whole-process cost of docket-gate deciding a claim on a
# 10,000-file git repository: the claim needs a validator_pass whose
# working-tree digest still matches, so every stop re-digests the tree
# (stat of every file, warm MACed stat cache, no file read). Compared
# with the static no-op binary (bench/noop), interleaved by bench/spawn.
#
#   N=200 bench/gate.sh      # runs per command (default 100)
#   FILES=10000 bench/gate.sh
#
# Rows: noop; docket-gate with the claim on the big repo; docket-gate
# with the same claim on a 10-file repo (the digest's share is the
# difference); docket-gate on a claim-free message (no ledger, no
# digest); noop through sh (the cost sh adds to the rows that need it);
# git status on the big repo. Every decision with a claim appends a
# gate_decision entry.
set -euo pipefail
N=${N:-100}
FILES=${FILES:-10000}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
[ -n "${KEEP:-}" ] && echo "keeping $work" || trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/bin/" ./cmd/docket ./cmd/docket-gate ./bench/noop ./bench/spawn)
export DOCKET_HOME="$work/home"
"$work/bin/docket" init >/dev/null

# repo DIR N: a git repository of N files (~2 KB each, 100 per directory)
# with a .gitignore, an ignored build directory, and a Makefile whose
# test target the validator runs.
repo() {
	local dir=$1 n=$2
	mkdir -p "$dir/build"
	printf 'test:\n\t@exit 0\n' >"$dir/Makefile"
	printf 'build/\n*.o\n' >"$dir/.gitignore"
	head -c 1048576 /dev/zero >"$dir/build/big.o"
	local filler
	filler=$(printf '// filler line of source code number %s\n' $(seq 1 50))
	for ((i = 0; i < n - 2; i++)); do
		d="$dir/pkg$((i / 100))"
		[ -d "$d" ] || mkdir -p "$d"
		printf 'package p\n\n// %d\n%s\n' "$i" "$filler" >"$d/f$((i % 100)).go"
	done
	git -C "$dir" init -q
	git -C "$dir" add -A
	git -C "$dir" -c user.email=bench@example.com -c user.name=bench commit -qm init
}
echo "generating a $FILES-file repository..."
repo "$work/big" "$FILES"
repo "$work/small" 10
sleep 3 # older than the stat cache's racy window

stop() { # session dir
	printf '{"session_id":"%s","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"All done."}' "$1" "$2"
}
stop big "$work/big" >"$work/big.json"
stop small "$work/small" >"$work/small.json"
printf '{"session_id":"quiet","transcript_path":"/dev/null","cwd":"%s","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Here is how the parser works."}' "$work/big" >"$work/quiet.json"
for s in big small; do
	(cd "$work/$s" && "$work/bin/docket" validate --session "$s" --claim done --validator command_zero_exit --args '{"command":["make","test"]}' | cut -c1-100)
	# the first stop may hash what the validation could not cache yet
	"$work/bin/docket-gate" <"$work/$s.json" >"$work/$s.out"
	if [ -s "$work/$s.out" ]; then
		echo "docket-gate did not allow the $s claim:" >&2
		cat "$work/$s.out" >&2
		exit 1
	fi
done
echo "files=$(git -C "$work/big" ls-files | wc -l) runs=$N (interleaved, wall time per process)"
# git status on the same tree (it too stats every file) is the reference
# for what a stat-based check of 10,000 files costs on this machine.
gitstatus=()
if command -v git >/dev/null; then
	gitstatus=(-- git -C "$work/big" status --porcelain)
fi
"$work/bin/spawn" -n "$N" -stdin "$work/big.json" -- "$work/bin/noop" -- "$work/bin/docket-gate" \
	-- sh -c "exec $work/bin/docket-gate <$work/small.json" -- sh -c "exec $work/bin/docket-gate <$work/quiet.json" \
	-- sh -c "exec $work/bin/noop <$work/quiet.json" "${gitstatus[@]}"
echo
echo "in-process digest of the same tree: go test -bench Scan10k ./internal/worktree"
