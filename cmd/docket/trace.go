package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/trust"
)

const traceUsage = `usage: docket trace [--json] O-TAG

Prints the causal chain an origin started: the user prompt (an O-Tag
"ot_…", as decisions record it in o_tag) and, in ledger order, every
judge decision, tool call, validator run and gate decision that followed
it in its session until the next prompt, with each decision's R-Tag and
V-Pol. For a runtime's task or flow id ("task:ID", "flow:ID") it prints
the decisions that name it, in every session. Every ledger read is
verified first.

A decision inside the chain whose o_tag names another origin, or has
none, is marked "o_tag mismatch"; so is a gate decision or validator run
whose o_tag names another origin.

Exit codes: 0 printed, 1 no such origin, 2 could not run.
`

func init() {
	commands["trace"] = command{summary: "print the causal chain from an origin (O-Tag)", run: runTrace}
}

// traceStep is one entry of a chain.
type traceStep struct {
	Session  string          `json:"session"`
	Seq      uint64          `json:"seq"`
	Time     string          `json:"time"`
	Kind     ledger.Kind     `json:"kind"`
	Tool     string          `json:"tool,omitempty"`
	AgentID  string          `json:"agent_id,omitempty"`
	Summary  string          `json:"summary"`
	RTag     string          `json:"r_tag,omitempty"`
	OTag     string          `json:"o_tag,omitempty"`
	VPol     json.RawMessage `json:"v_pol,omitempty"`
	Mismatch bool            `json:"o_tag_mismatch,omitempty"`
}

type traceReport struct {
	OTag   string      `json:"o_tag"`
	Origin *traceStep  `json:"origin,omitempty"`
	Steps  []traceStep `json:"steps"`
}

func runTrace(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, traceUsage) }
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		return exitCode(2, nil)
	}
	if fs.NArg() != 1 {
		return usageError("trace needs exactly one O-Tag", "decisions carry it as o_tag; docket-ledger prints none, see the judge_decision entries")
	}
	tag := fs.Arg(0)
	h, err := home.Resolve()
	if err != nil {
		return exitCode(2, err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		return exitCode(2, fmt.Errorf("open ledger: %w", err))
	}
	rep, err := trace(h, l, tag)
	if err != nil {
		return exitCode(2, err)
	}
	if rep.Origin == nil && len(rep.Steps) == 0 {
		return exitCode(1, fmt.Errorf("no origin %s in any ledger", tag))
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if o := rep.Origin; o != nil {
		fmt.Fprintf(stdout, "origin %s: %s (session %s, seq %d, %s)\n", tag, o.Summary, o.Session, o.Seq, o.Time)
	} else {
		fmt.Fprintf(stdout, "origin %s (a runtime's id; no prompt entry)\n", tag)
	}
	for _, s := range rep.Steps {
		line := fmt.Sprintf("  %s #%d  %s  %s", s.Session, s.Seq, s.Time, s.Kind)
		if s.Tool != "" {
			line += " " + s.Tool
		}
		line += ": " + s.Summary
		if s.RTag != "" {
			line += "  [" + s.RTag
			if len(s.VPol) > 0 {
				var v struct{ Version, Rule string }
				_ = json.Unmarshal(s.VPol, &v)
				line += " v_pol " + short(v.Version) + " " + v.Rule
			}
			line += "]"
		}
		if s.Mismatch {
			line += "  o_tag mismatch: " + nonEmptyStr(s.OTag, "none")
		}
		fmt.Fprintln(stdout, line)
	}
	return nil
}

// trace collects the chain of tag from every ledger under h.
func trace(h home.Home, l *ledger.Ledger, tag string) (*traceReport, error) {
	rep := &traceReport{OTag: tag, Steps: []traceStep{}}
	ents, err := os.ReadDir(h.LedgerDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("list ledgers: %w", err)
	}
	var sessions []string
	for _, e := range ents {
		if s, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && home.ValidSessionID(s) {
			sessions = append(sessions, s)
		}
	}
	sort.Strings(sessions)
	prompt := strings.HasPrefix(tag, "ot_")
	for _, sess := range sessions {
		entries, err := l.ReadVerified(sess)
		if err != nil {
			return nil, fmt.Errorf("session %s does not verify: %w", sess, err)
		}
		in := false // inside the chain the prompt started
		for _, e := range entries {
			if e.Kind == ledger.KindUserPrompt {
				in = prompt && trust.OTagOf(e) == tag
				if in {
					o := step(sess, e)
					rep.Origin = &o
				}
				continue
			}
			s := step(sess, e)
			switch {
			case in:
				// a decision must name the chain; a stop or a validator's
				// entry (which carry it since they were given one) must not
				// name another
				s.Mismatch = s.OTag != tag && (e.Kind == ledger.KindJudgeDecision || s.OTag != "")
				rep.Steps = append(rep.Steps, s)
			case s.OTag == tag:
				rep.Steps = append(rep.Steps, s)
			}
		}
	}
	return rep, nil
}

// step summarizes one entry.
func step(session string, e *ledger.Entry) traceStep {
	s := traceStep{Session: session, Seq: e.Seq, Time: e.Time, Kind: e.Kind, Tool: e.Tool, AgentID: e.AgentID}
	var b struct {
		// judge_decision; o_tag on gate and validator entries too
		Outcome           string          `json:"outcome"`
		EnforcementAction string          `json:"enforcement_action"`
		RiskClass         string          `json:"risk_class"`
		Reason            string          `json:"reason"`
		RTag              string          `json:"r_tag"`
		OTag              string          `json:"o_tag"`
		VPol              json.RawMessage `json:"v_pol"`
		Trust             *struct {
			Level    int    `json:"level"`
			Action   string `json:"action"`
			Enforced bool   `json:"enforced"`
		} `json:"trust"`
		// tool_call
		Failed   bool
		ExitCode *int `json:"exit_code"`
		// validator_*
		Claim, Result string
		// gate_decision
		Decision string
		Claims   []struct{ Type, Status string }
		// user_prompt
		PromptSHA256 string `json:"prompt_sha256"`
		PromptBytes  int    `json:"prompt_bytes"`
	}
	_ = json.Unmarshal(e.Body, &b)
	s.OTag = b.OTag // judge, gate and validator entries
	switch e.Kind {
	case ledger.KindUserPrompt:
		s.Summary = fmt.Sprintf("user prompt %s (%d bytes; artifact prompt.txt)", short(b.PromptSHA256), b.PromptBytes)
	case ledger.KindJudgeDecision:
		s.RTag, s.VPol = b.RTag, b.VPol
		s.Summary = fmt.Sprintf("%s (%s, %s)", b.Outcome, b.EnforcementAction, b.RiskClass)
		if b.Trust != nil {
			s.Summary += fmt.Sprintf(" trust level %d", b.Trust.Level)
			switch {
			case b.Trust.Action == "none" || b.Trust.Action == "":
			case b.Trust.Enforced:
				s.Summary += " " + b.Trust.Action
			default:
				s.Summary += " (would " + b.Trust.Action + ")"
			}
		}
		if b.Reason != "" {
			s.Summary += ": " + judge.Truncate(b.Reason, 120)
		}
	case ledger.KindToolCall, ledger.KindToolFailure:
		s.Summary = "ran"
		if b.Failed {
			s.Summary = "failed"
		}
		if b.ExitCode != nil {
			s.Summary += fmt.Sprintf(" (exit %d)", *b.ExitCode)
		}
	case ledger.KindValidatorPass, ledger.KindValidatorFail:
		s.Summary = fmt.Sprintf("claim %s: %s", b.Claim, nonEmptyStr(b.Result, string(e.Kind)))
	case ledger.KindGateDecision:
		var cs []string
		for _, c := range b.Claims {
			cs = append(cs, c.Type+" "+c.Status)
		}
		s.Summary = b.Decision
		if len(cs) > 0 {
			s.Summary += " (" + strings.Join(cs, ", ") + ")"
		}
	default:
		s.Summary = string(e.Kind)
	}
	return s
}

func short(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
