package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/docket/docket/store"
)

const inspectUsage = `usage: docket inspect MEMORY-ID [--json]
       docket inspect --raw SESSION [--json]

Explains one memory: why it exists, the decision or ledger entry that
created it (check the entry with 'docket verify --session S'), its source,
provenance and use policy, which recalls returned it and how the judge
used it, who confirmed, edited, restricted or disputed it, what future
actions it can influence, what conflicts with it, and when it goes stale.

With --raw: each raw runtime event envelope of runtime session SESSION
(imported with 'docket import openclaw'), byte for byte as stored, beside
its projection: the feedback record and memory, or "raw evidence only".

Flags:
  --json         print the inspection as JSON
  --raw SESSION  show a runtime session's raw envelopes and projections

Exit codes: 0 shown, 1 unknown memory or session, ledger or store error,
2 usage error.
`

func init() {
	commands["inspect"] = command{summary: "explain a memory (lineage, use, history, conflicts); --raw: a runtime session", run: runInspect}
}

func runInspect(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("inspect", inspectUsage, stderr)
	asJSON := fs.Bool("json", false, "")
	raw := fs.String("raw", "", "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return parseErr(err)
	}
	if *raw != "" {
		if len(pos) != 0 {
			return usageError("inspect --raw takes a session, not a memory id", "docket inspect --raw SESSION or docket inspect MEMORY-ID")
		}
		return inspectRaw(*raw, *asJSON, stdout)
	}
	if len(pos) != 1 {
		return usageError("inspect needs exactly one memory id", "ids appear in 'docket review list' and in judge recall warnings")
	}
	s, err := openCLIStore(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	in, err := store.Inspect(ctx, s, pos[0], time.Now())
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, in)
	}
	printInspection(stdout, in)
	return nil
}

func printInspection(w io.Writer, in store.Inspection) {
	m := in.Memory
	ts := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "memory %s\n  %s\n\n", m.ID, m.Summary)
	fmt.Fprintf(w, "why it exists\n  %s\n", in.Why)
	if d := in.Decision; d != nil {
		fmt.Fprintf(w, "  decision %s: %s %s (action %s, %s judge %s, policy %s)\n  reason: %s\n", d.DecisionID, d.Decision, d.ToolName,
			d.ActionID, d.Judge.Kind, d.Judge.Model, d.Judge.PolicyVersion, clip(d.ReasoningSummary, 300))
	}
	for _, o := range in.Lineage {
		fmt.Fprintf(w, "  ledger entry %s#%d %s at %s (docket verify --session %s)\n", o.Session, o.Seq, o.EntryHash, ts(o.ObservedAt), o.Session)
	}
	fmt.Fprintf(w, "\nsource\n  %s %s %s %s\n", m.Source.Kind, m.Source.URI, m.Source.Title, ts(m.Source.Timestamp))
	fmt.Fprintf(w, "\nprovenance\n  %s, confidence %.2f, created by %s", m.Provenance.Status, m.Provenance.Confidence, m.Provenance.CreatedBy)
	if m.Provenance.Model != "" {
		fmt.Fprintf(w, ", model %s", m.Provenance.Model)
	}
	if m.Provenance.Runtime != "" {
		fmt.Fprintf(w, ", runtime %s", m.Provenance.Runtime)
	}
	if m.ConfirmedBy != "" {
		fmt.Fprintf(w, ", confirmed by %s at %s", m.ConfirmedBy, ts(m.Freshness.LastConfirmedAt))
	}
	fmt.Fprintf(w, "\n  use policy %s (%s)\n  lifecycle %s, seen %d time(s), last %s\n", m.UsePolicy, m.UseReason, m.Lifecycle, m.Occurrences, ts(m.Freshness.LastSeenAt))
	fmt.Fprintf(w, "  scope: %s\n", scopeText(m.Scope))
	fmt.Fprintf(w, "\nrecalls that returned it (%d)\n", len(in.Recalls))
	for _, r := range in.Recalls {
		used := r.UsedAs
		if used == "" {
			used = "not reported as used"
		}
		fmt.Fprintf(w, "  %s %s rank %d as %s, %s", ts(r.At), r.RecallID, r.Rank, r.ReturnedAs, used)
		if r.DecisionID != "" {
			fmt.Fprintf(w, " by %s", r.DecisionID)
		}
		fmt.Fprintf(w, ": %s %q\n", r.ToolName, clip(r.Query, 80))
	}
	fmt.Fprintf(w, "\nhistory (%d)\n", len(in.History))
	for _, e := range in.History {
		fmt.Fprintf(w, "  %s %s %s %s\n", ts(e.At), e.Actor, e.Action, e.Detail)
	}
	for _, it := range in.Review {
		fmt.Fprintf(w, "  review %s %s %s priority, %s %s\n", it.ID, it.Status, it.Priority, it.Resolution, it.ResolvedBy)
	}
	inj := "not injected automatically"
	if in.Injectable {
		inj = "injected automatically"
	}
	fmt.Fprintf(w, "\nwhat it can influence (%s: %s)\n", inj, in.InjectReason)
	for _, c := range in.CanInfluence {
		fmt.Fprintf(w, "  - %s\n", c)
	}
	fmt.Fprintf(w, "\nconflicts (%d)\n", len(in.Conflicts))
	for _, c := range in.Conflicts {
		fmt.Fprintf(w, "  %s %s (%s): %s\n", c.Relation, c.MemoryID, c.Status, clip(c.Summary, 80))
	}
	stale := "no stale date"
	if !in.StaleAt.IsZero() {
		stale = "stale after " + ts(in.StaleAt)
	}
	if in.Stale {
		stale += " (stale now)"
	}
	fmt.Fprintf(w, "\nfreshness\n  %s; relevance decay factor %.3f (2%%/day since last seen or confirmed)\n", stale, in.Decay)
}
