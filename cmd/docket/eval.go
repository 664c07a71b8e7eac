package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docket/docket/eval"
)

const evalUsage = `usage: docket eval [--json] [--dir DIR]

Runs docket's labelled evaluation set through the real judge engine and
store and prints the judge, recall and governance metrics of the
OpenBrain evaluation plan, each with its definition:

  judge       false allows, false blocks, escalation rate, revision rate,
              incidents caught before execution (memory off: the judge
              as shipped, with the embedded default policies)
  recall      recall precision, stale and disputed retrieval rate,
              policy-hit accuracy, duplicate memory rate (recall fixtures
              put into a fresh SQLite store), decisions with sufficient
              evidence (memory on)
  governance  memories confirmed, rejected, downgraded to evidence,
              inferred memories prevented from becoming instructions
  experiment  the same stream judged with memory off and with memory on
              (lessons written back from earlier decisions and confirmed
              through the review queue), and the difference

The set: every PreToolUse payload of testdata/realdata plus synthetic
incidents, each labelled allow, block, revise or escalate with a written
reason (eval/testdata, LABELS.md). Proposals the judge decided against
their label are listed; labels are never changed to match the judge.

Nothing outside DIR is read or written: the state roots and stores are
created there (default: a temporary directory, removed afterwards).

Flags:
  --json      print the report as JSON (metric names in snake_case)
  --dir DIR   keep the run's state roots and stores in DIR (new or
              empty: a reused store would remember an earlier run)

Exit codes: 0 evaluated, 1 the evaluation could not run, 2 usage error.
`

func init() {
	commands["eval"] = command{summary: "measure judgment on the labelled set (judge, recall, governance, memory off/on)", run: runEval}
}

func runEval(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("eval", evalUsage, stderr)
	asJSON := fs.Bool("json", false, "")
	dir := fs.String("dir", "", "")
	if err := fs.Parse(args); err != nil {
		return parseErr(err)
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)), "docket eval takes no arguments; the labelled set is built in")
	}
	d := *dir
	if d == "" {
		tmp, err := os.MkdirTemp("", "docket-eval-")
		if err != nil {
			return fmt.Errorf("create scratch directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		d = tmp
	} else {
		if ents, err := os.ReadDir(d); err == nil && len(ents) > 0 {
			return usageError(fmt.Sprintf("--dir %s is not empty", d), "give a new directory: a store left by an earlier run would remember its lessons")
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	rep, err := eval.Run(ctx, eval.Options{Dir: d})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	printEval(stdout, rep)
	return nil
}

func printEval(w io.Writer, r *eval.Report) {
	defs := map[string]string{}
	for _, m := range r.Definitions {
		defs[m.Key] = m.Definition
	}
	f := r.Fixtures
	fmt.Fprintf(w, "docket eval: %d labelled proposals (%d real PreToolUse payloads, %d written for the set): %d allow, %d block, %d revise, %d escalate\n",
		f.Total, f.Real, f.Synthetic, f.ByExpected[eval.Allow], f.ByExpected[eval.Block], f.ByExpected[eval.Revise], f.ByExpected[eval.Escalate])
	line := func(key, val string) {
		fmt.Fprintf(w, "  %-36s %8s  %s\n", key, val, defs[key])
	}
	pct := func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }
	n := func(v int) string { return fmt.Sprint(v) }
	j := r.Judge
	fmt.Fprintf(w, "\njudge (memory off; %d proposals, %d labelled block/revise/escalate)\n", j.Proposals, j.Incidents)
	line("false_allows", n(j.FalseAllows))
	line("false_allow_rate", pct(j.FalseAllowRate))
	line("false_blocks", n(j.FalseBlocks))
	line("false_block_rate", pct(j.FalseBlockRate))
	line("escalation_rate", pct(j.EscalationRate))
	line("revision_rate", pct(j.RevisionRate))
	line("incidents_caught_before_execution", n(j.IncidentsCaught))
	line("incidents_missed", n(j.IncidentsMissed))
	line("agreement", pct(j.Agreement))
	fmt.Fprintf(w, "  confusion (label -> judged): %s\n", confusion(j.Confusion))
	rc := r.Recall
	fmt.Fprintf(w, "\nrecall (%d queries, %d memories recalled)\n", rc.Queries, rc.Recalled)
	line("recall_precision", pct(rc.RecallPrecision))
	line("stale_retrieval_rate", pct(rc.StaleRetrievalRate))
	line("disputed_retrieval_rate", pct(rc.DisputedRetrievalRate))
	line("policy_hit_accuracy", pct(rc.PolicyHitAccuracy))
	line("duplicate_memory_rate", pct(rc.DuplicateMemoryRate))
	line("decisions_with_sufficient_evidence", pct(rc.DecisionsWithSufficientEvidence))
	for _, q := range r.RecallQueries {
		fmt.Fprintf(w, "    %-14s recalled %s; policy hits %s\n", q.Query, strings.Join(q.Returned, ", "), orNone(q.PolicyHits))
	}
	g := r.Governance
	fmt.Fprintf(w, "\ngovernance (memory on; %d judge lesson candidates, %d human corrections)\n", g.LessonCandidates, g.HumanCorrections)
	line("confirmed", n(g.Confirmed))
	line("rejected", n(g.Rejected))
	line("downgraded_to_evidence", n(g.DowngradedToEvidence))
	line("inferred_prevented_from_instruction", n(g.InferredPreventedFromInstruction))
	if g.CorrectionsRefused > 0 {
		fmt.Fprintf(w, "  warning: the write-back firewall refused %d corrections\n", g.CorrectionsRefused)
	}
	x := r.Experiment
	fmt.Fprintf(w, "\nexperiment: the same stream with memory off -> on\n")
	cmp := func(key string, a, b float64, asPct bool) {
		if asPct {
			fmt.Fprintf(w, "  %-36s %7.1f%% -> %5.1f%%  (%+.1f points)\n", key, 100*a, 100*b, 100*(b-a))
			return
		}
		fmt.Fprintf(w, "  %-36s %8.0f -> %5.0f   (%+.0f)\n", key, a, b, b-a)
	}
	off, on := x.MemoryOff, x.MemoryOn
	cmp("false_allows", float64(off.FalseAllows), float64(on.FalseAllows), false)
	cmp("false_blocks", float64(off.FalseBlocks), float64(on.FalseBlocks), false)
	cmp("incidents_caught_before_execution", float64(off.IncidentsCaught), float64(on.IncidentsCaught), false)
	cmp("escalation_rate", off.EscalationRate, on.EscalationRate, true)
	cmp("revision_rate", off.RevisionRate, on.RevisionRate, true)
	cmp("agreement", off.Agreement, on.Agreement, true)
	fmt.Fprintf(w, "  decisions a confirmed lesson decided: %d, of which %d by a lesson from a call of the same tool and program\n", x.DecidedByLesson, x.OnPoint)
	withLesson := func(ids []string) string {
		var out []string
		for _, id := range ids {
			if src := x.LessonOf[id]; src != "" {
				id += " (lesson from " + src + ")"
			}
			out = append(out, id)
		}
		return orNone(out)
	}
	fmt.Fprintf(w, "  corrected by memory (%d, %d by a same-tool-and-program lesson): %s\n", len(x.Corrected), x.CorrectedOnPoint, withLesson(x.Corrected))
	fmt.Fprintf(w, "  regressed with memory (%d): %s\n", len(x.Regressed), withLesson(x.Regressed))
	fmt.Fprintf(w, "\ndisagreements with the labels (memory off): %d\n", len(r.Disagreements))
	for _, d := range r.Disagreements {
		fmt.Fprintf(w, "  %s: label %s, judged %s\n      label: %s\n      judge: %s\n", d.ID, d.Expected, d.Got, clip(d.LabelReason, 200), clip(d.JudgeReason, 200))
	}
}

func confusion(c map[eval.Outcome]map[eval.Outcome]int) string {
	var parts []string
	for _, e := range []eval.Outcome{eval.Allow, eval.Revise, eval.Escalate, eval.Block} {
		for _, g := range []eval.Outcome{eval.Allow, eval.Revise, eval.Escalate, eval.Block} {
			if v := c[e][g]; v > 0 {
				parts = append(parts, fmt.Sprintf("%s->%s %d", e, g, v))
			}
		}
	}
	return strings.Join(parts, ", ")
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
