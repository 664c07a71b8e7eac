package main

import (
	"context"
	"io"
)

// `docket report` has subcommands in files of their own:
// report_metrics.go (docket report metrics). A report without a known
// subcommand goes to runReportDefault.

const reportUsage = `usage: docket report metrics [--since 7d] [--json]

Subcommands:
  metrics   judgment metrics from the ledger and the store (see
            'docket report metrics -h')

Exit codes: 0 reported, 1 could not read the state root, 2 usage error.
`

func init() {
	commands["report"] = command{summary: "reports from the ledger and store (metrics)", run: runReport}
}

func runReport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "metrics" {
		return runReportMetrics(ctx, args[1:], stdin, stdout, stderr)
	}
	return runReportDefault(ctx, args, stdin, stdout, stderr)
}

// runReportDefault answers a report that names no known subcommand.
func runReportDefault(_ context.Context, args []string, _ io.Reader, _, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		io.WriteString(stderr, reportUsage)
		return nil
	}
	io.WriteString(stderr, reportUsage)
	return usageError("docket report needs a subcommand", "try 'docket report metrics --since 7d'")
}
