#!/usr/bin/env bash
# All benchmarks: the whole-process scripts and the in-process Go
# benchmarks. Each prints medians and ratios; see the script for targets.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "### hooks side by side"; bench/hooks.sh
echo; echo "### hook start-up"; bench/startup.sh
echo; echo "### ledger"; bench/ledger.sh
echo; echo "### judge"; bench/judge.sh
echo; echo "### gate on a 10,000-file tree"; bench/gate.sh
echo; echo "### gate, store (in-process)"
go test -run=NONE -bench=. -benchtime=20x ./gate ./cmd/docket-gate ./internal/worktree
go test -run=NONE -bench=. ./store/...
