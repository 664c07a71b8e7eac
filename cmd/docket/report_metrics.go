package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/docket/docket/eval"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
)

const reportMetricsUsage = `usage: docket report metrics [--since 7d] [--json]

Computes the live counterparts of 'docket eval' from the state root
($DOCKET_HOME): the latency each hook added (p50 / p99 / max of the
duration_us its ledger entries record), the human override rate, the
escalation rate, incidents caught before execution, memories confirmed
and rejected, and the average review and approval times. Each figure is
printed with its definition. Only ledger sessions that verify are read;
the others are named with a hint to run 'docket verify'.

Flags:
  --since D   the window: a Go duration (36h, 90m) or whole days (7d);
              default 7d
  --json      print the metrics as JSON (snake_case names)

Exit codes: 0 reported, 1 could not read the state root, 2 usage error.
`

func init() {
	reportSubcommands["metrics"] = reportSubcommand{summary: "judgment metrics from the ledger and the store", run: runReportMetrics}
}

func runReportMetrics(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("report metrics", reportMetricsUsage, stderr)
	sinceFlag := fs.String("since", "7d", "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)), "the window is a flag: --since 7d")
	}
	window, err := parseWindow(*sinceFlag)
	if err != nil {
		return usageError("--since: "+err.Error(), "use whole days (7d) or a Go duration (36h)")
	}
	now := time.Now().UTC()
	since := now.Add(-window)
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	sessions, skipped, err := readSessions(h)
	if err != nil {
		return err
	}
	s, err := openCLIStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	reviews, err := s.ListReview(ctx, store.ReviewFilter{Status: store.ReviewResolved, Limit: 1 << 20})
	if err != nil {
		return fmt.Errorf("list review items: %w", err)
	}
	approvals, err := s.ListApprovals(ctx, "")
	if err != nil {
		return fmt.Errorf("list approvals: %w", err)
	}
	m := eval.ComputeLive(sessions, reviews, approvals, since)
	m.Skipped = skipped
	if *asJSON {
		return printJSON(stdout, struct {
			eval.LiveMetrics
			Window      string        `json:"window"`
			Definitions []eval.Metric `json:"definitions"`
		}{m, *sinceFlag, eval.LiveDefinitions})
	}
	printLive(stdout, m, *sinceFlag)
	return nil
}

// parseWindow reads "7d" (whole days) or a Go duration; it must be positive.
func parseWindow(s string) (time.Duration, error) {
	var d time.Duration
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("%q is not a duration", s)
		}
	}
	if d <= 0 {
		return 0, errors.New("the window must be positive")
	}
	return d, nil
}

// readSessions reads every ledger session that verifies; the others are
// returned as skipped, with why.
func readSessions(h home.Home) ([]eval.LiveSession, []string, error) {
	ids, err := ledger.Sessions(h)
	if err != nil {
		return nil, nil, err
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	l, err := ledger.Open(h)
	if err != nil {
		return nil, nil, fmt.Errorf("open ledger: %w", err)
	}
	var out []eval.LiveSession
	var skipped []string
	for _, id := range ids {
		es, err := l.ReadVerified(id)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v (run 'docket verify --session %s')", id, err, id))
			continue
		}
		out = append(out, eval.LiveSession{Session: id, Entries: es})
	}
	return out, skipped, nil
}

func printLive(w io.Writer, m eval.LiveMetrics, window string) {
	defs := map[string]string{}
	for _, d := range eval.LiveDefinitions {
		defs[d.Key] = d.Definition
	}
	fmt.Fprintf(w, "docket report metrics: since %s (%s): %d sessions, %d judge decisions\n", m.Since.Format(time.RFC3339), window, m.Sessions, m.JudgeDecisions)
	ms := func(us int64) string { return fmt.Sprintf("%.2fms", float64(us)/1000) }
	fmt.Fprintf(w, "\nlatency_added  %s\n", defs["latency_added"])
	for _, hook := range []string{"PreToolUse", "Stop"} {
		l := m.LatencyAdded[hook]
		if l.Count == 0 {
			fmt.Fprintf(w, "  %-11s no timed entries\n", hook)
			continue
		}
		fmt.Fprintf(w, "  %-11s p50 %s  p99 %s  max %s  (%d entries)\n", hook, ms(l.P50), ms(l.P99), ms(l.Max), l.Count)
	}
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	dur := func(sec float64, n int) string {
		if n == 0 {
			return "-"
		}
		return (time.Duration(sec * float64(time.Second))).Round(time.Second).String()
	}
	line := func(key, val, detail string) {
		fmt.Fprintf(w, "%-34s %8s  %s\n  %s\n", key, val, detail, defs[key])
	}
	fmt.Fprintln(w)
	line("human_override_rate", pct(m.HumanOverrideRate), fmt.Sprintf("(%d of %d stopped calls)", m.HumanOverrides, m.Stopped))
	line("escalation_rate", pct(m.EscalationRate), fmt.Sprintf("(%d escalations)", m.Outcomes["escalate"]))
	line("incidents_caught_before_execution", fmt.Sprint(m.IncidentsCaught), "")
	line("memories_confirmed", fmt.Sprint(m.MemoriesConfirmed), "")
	line("memories_rejected", fmt.Sprint(m.MemoriesRejected), "")
	line("average_review_time", dur(m.AverageReviewTime, m.ReviewsResolved), fmt.Sprintf("(%d review items)", m.ReviewsResolved))
	line("average_approval_time", dur(m.AverageApprovalTime, m.ApprovalsAnswered), fmt.Sprintf("(%d approvals)", m.ApprovalsAnswered))
	for _, s := range m.Skipped {
		fmt.Fprintf(w, "skipped %s\n", s)
	}
}
