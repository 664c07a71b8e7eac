package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/trust"
)

const trustUsage = `usage: docket trust [--agent A] [--tool T] [--class C] [--history N] [--json]

Shows the monitoring level (0 review-all, 1 pre-exec-sampling, 2
post-exec-review, 3 spot-check, 4 autonomous) of each agent per tool,
per risk class and overall ("*"), with its alignment score (90-day,
recency-weighted), rated actions, and the history of level changes. It
first reads what the ledgers gained since the last look, so the levels
are current (the judge reads the summary this writes).

An agent is named runtime/agent-type ("claude/main", "claude/Explore").
The judge uses the lowest of a call's tool, class and overall levels.
Levels are enforced only with "mode: enforce" in
$DOCKET_HOME/policies/trust.yaml (see README, "Trust levels").

Flags:
  --agent A    only agent A
  --tool T     only the scope of tool T (and the agent's classes and "*")
  --class C    only the scope of risk class C
  --history N  show the last N changes (default 20; 0 for none)
  --json       one JSON object

Exit codes: 0 shown, 2 could not run.
`

func init() {
	commands["trust"] = command{summary: "show agents' monitoring levels and their history", run: runTrust}
}

// trustRow is one key in docket trust's output.
type trustRow struct {
	Agent     string  `json:"agent"`
	Scope     string  `json:"scope"`
	Level     int     `json:"level"`
	LevelName string  `json:"level_name"`
	Score     float64 `json:"score"`
	Actions   int     `json:"actions"`
	Since     string  `json:"since,omitempty"`
	HeldSince string  `json:"held_since,omitempty"`
	// Next is the next level's threshold; GraduatesAt when the hold
	// completes if the score stays at or above it.
	Next        float64 `json:"next_threshold,omitempty"`
	GraduatesAt string  `json:"graduates_at,omitempty"`
}

type trustReport struct {
	Mode         string         `json:"mode"`
	PolicyDigest string         `json:"policy_digest"`
	Clock        string         `json:"clock"`
	Keys         []trustRow     `json:"keys"`
	History      []trust.Change `json:"history"`
	Warnings     []string       `json:"warnings"`
}

func runTrust(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trust", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, trustUsage) }
	agent := fs.String("agent", "", "")
	tool := fs.String("tool", "", "")
	class := fs.String("class", "", "")
	hist := fs.Int("history", 20, "")
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return exitCode(2, nil)
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)), "name the agent with --agent")
	}
	if *tool != "" && *class != "" {
		return usageError("--tool and --class both narrow the scope; give one", "")
	}
	h, err := home.Resolve()
	if err != nil {
		return exitCode(2, err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		return exitCode(2, fmt.Errorf("open ledger: %w", err))
	}
	p, perr := trust.LoadPolicy(h)
	st := &trust.Store{Home: h, Keys: l.Keys()}
	s, err := st.Refresh(&p, time.Now())
	if s == nil {
		return exitCode(2, fmt.Errorf("refresh trust levels: %w", err))
	}
	rep := trustReport{Mode: p.Mode, PolicyDigest: p.Digest(), Clock: s.Clock.UTC().Format(time.RFC3339), Keys: []trustRow{}, History: []trust.Change{}, Warnings: []string{}}
	if perr != nil {
		rep.Warnings = append(rep.Warnings, perr.Error()+" (failing closed: enforce mode with the default thresholds)")
	}
	if err != nil {
		rep.Warnings = append(rep.Warnings, "levels not saved: "+err.Error())
	}
	rep.Warnings = append(rep.Warnings, s.Warnings...)
	match := func(a, scope string) bool {
		if *agent != "" && a != *agent {
			return false
		}
		switch {
		case *tool != "":
			return scope == trust.ToolScope(*tool) || scope == trust.AllScope || strings.HasPrefix(scope, "class:")
		case *class != "":
			return scope == trust.ClassScope(*class)
		}
		return true
	}
	hold := time.Duration(p.GraduationDays) * 24 * time.Hour
	for _, ks := range s.Keys {
		if !match(ks.Agent, ks.Scope) {
			continue
		}
		r := trustRow{Agent: ks.Agent, Scope: ks.Scope, Level: ks.Level, LevelName: trust.LevelName(ks.Level),
			Score: round4(ks.Score), Actions: ks.Actions, Since: stamp(ks.Since), HeldSince: stamp(ks.HeldSince)}
		if ks.Level < trust.MaxLevel {
			r.Next = p.Threshold(ks.Level + 1)
			if !ks.HeldSince.IsZero() {
				r.GraduatesAt = stamp(ks.HeldSince.Add(hold))
			}
		}
		rep.Keys = append(rep.Keys, r)
	}
	sort.Slice(rep.Keys, func(i, j int) bool {
		if rep.Keys[i].Agent != rep.Keys[j].Agent {
			return rep.Keys[i].Agent < rep.Keys[j].Agent
		}
		return rep.Keys[i].Scope < rep.Keys[j].Scope
	})
	var changes []trust.Change
	for _, c := range s.History {
		if match(c.Agent, c.Scope) {
			changes = append(changes, c)
		}
	}
	if *hist >= 0 && len(changes) > *hist {
		changes = changes[len(changes)-*hist:]
	}
	rep.History = append(rep.History, changes...)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(stderr, "docket: warning: %s\n", w)
	}
	fmt.Fprintf(stdout, "trust levels as of %s (mode %s", rep.Clock, rep.Mode)
	if rep.Mode == trust.ModeObserve {
		fmt.Fprint(stdout, ": recorded, not enforced")
	}
	fmt.Fprintln(stdout, ")")
	if len(rep.Keys) == 0 {
		fmt.Fprintln(stdout, "no rated actions yet: every agent is at level 0 (review-all)")
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "AGENT\tSCOPE\tLEVEL\tSCORE\tACTIONS\tNEXT")
		for _, r := range rep.Keys {
			next := "-"
			if r.Level < trust.MaxLevel {
				next = fmt.Sprintf("%.2f", r.Next)
				if r.GraduatesAt != "" {
					next += " held, graduates " + r.GraduatesAt
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%d %s\t%.3f\t%d\t%s\n", r.Agent, r.Scope, r.Level, r.LevelName, r.Score, r.Actions, next)
		}
		tw.Flush()
	}
	if len(rep.History) > 0 {
		fmt.Fprintln(stdout, "\nchanges:")
		for _, c := range rep.History {
			fmt.Fprintf(stdout, "  %s  %s %s  %d -> %d  %s\n", stamp(c.Time), c.Agent, c.Scope, c.From, c.To, c.Reason)
		}
	}
	return nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func round4(f float64) float64 { return float64(int64(f*10000+0.5)) / 10000 }
