package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/docket/docket/adapters/eventcontract"
)

const reportUsage = `usage: docket report --session S [--format json|markdown]
       docket report SUBCOMMAND [flags]

Without a subcommand: the evidence report of runtime session S (its id as
the runtime sent it), derived from the stored envelopes and projections
without any model: the outcome, selected skills, missing capabilities,
the handoff state, the last checkpoint, the next action (the operator's,
else derived by rule), the projected signals, and each envelope's ledger
entry.

Flags:
  --session S          the runtime session id (required)
  --format json|markdown
                       output format (default markdown)

Subcommands:
%s
Exit codes: 0 reported, 1 the ledger did not verify or the store failed,
2 usage error.
`

// reportSubcommands are report's subcommands besides the session report.
// Each lives in its own file (report_NAME.go) and registers itself from an
// init function:
//
//	func init() { reportSubcommands["metrics"] = reportSubcommand{summary: "…", run: runReportMetrics} }
var reportSubcommands = map[string]reportSubcommand{}

type reportSubcommand struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

func init() {
	commands["report"] = command{summary: "reports: a runtime session (--session), and subcommands", run: runReport}
}

func reportSubcommandNames() []string {
	names := make([]string, 0, len(reportSubcommands))
	for n := range reportSubcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func reportUsageText() string {
	var b strings.Builder
	for _, n := range reportSubcommandNames() {
		fmt.Fprintf(&b, "  %-12s %s\n", n, reportSubcommands[n].summary)
	}
	if b.Len() == 0 {
		b.WriteString("  (none)\n")
	}
	return fmt.Sprintf(reportUsage, b.String())
}

func runReport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, ok := reportSubcommands[args[0]]
		if !ok {
			return usageError(fmt.Sprintf("unknown report %q", args[0]), "run 'docket report -h' for the list")
		}
		return sub.run(ctx, args[1:], stdin, stdout, stderr)
	}
	return runSessionReport(ctx, args, stdout, stderr)
}

func runSessionReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flagSet("report", reportUsageText(), stderr)
	session := fs.String("session", "", "")
	format := fs.String("format", "markdown", "")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)), "a subcommand goes first: docket report SUBCOMMAND")
	}
	if *session == "" {
		hint := "docket report --session S (the session ids appear in 'docket import openclaw' output)"
		for _, n := range reportSubcommandNames() {
			hint += ", or docket report " + n
		}
		return usageError("report needs --session or a subcommand", hint)
	}
	if *format != "json" && *format != "markdown" {
		return usageError(fmt.Sprintf("unknown --format %q", *format), "use json or markdown")
	}
	led, err := openLedger()
	if err != nil {
		return err
	}
	s, err := eventcontract.Load(led, *session)
	if err != nil {
		return err
	}
	r := eventcontract.BuildReport(s)
	if *format == "json" {
		return printJSON(stdout, r)
	}
	return r.WriteMarkdown(stdout)
}
