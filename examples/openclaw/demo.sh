#!/usr/bin/env bash
# make demo-openclaw: the Code Review Memory example, narrated. Installs
# OpenClaw (pinned, from npm) on first use, then runs the real
# `openclaw agent --local` twice against a scripted model, with docket
# serve as its judge, ledger, claim gate and memory, and prints every
# hook the docket plugin answered.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash e2e/install-openclaw.sh
echo "== Code Review Memory: review 1 (repo rules recalled, approve-and-merge escalated),"
echo "   a maintainer's correction confirmed with 'docket review confirm', review 2 (the lesson recalled)"
DOCKET_OPENCLAW_DEMO=1 go test -count=1 -v -run '^TestCodeReviewMemory$' ./examples/openclaw
