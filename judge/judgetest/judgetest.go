// Package judgetest is the judge conformance suite. Every JudgeBackend
// runs it through a Harness that knows how to make the backend return a
// given outcome:
//
//	func TestConformance(t *testing.T) { judgetest.Run(t, myHarness) }
//
// The suite checks the backend contract (valid judgments for every
// supported outcome, no mutation, timeouts, concurrency, policy_version,
// Close) and the framework around it with the backend in the chain
// (amendments re-classified, stricter class wins, one revise, failure
// policy, side channel, audit entry, read-audit, escalation, hashing,
// policy floor, runtime config kept out of prompts). Run it with -race.
package judgetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

// Script says what a backend under test must answer for every proposal
// it sees: Outcome, and for revise, the mechanical amendment that
// replaces every From in the Bash command with To (From "" means a
// revise that needs the actor's rework). Delay makes Evaluate take at
// least that long (backends that honour ctx may return earlier with an
// unavailable error when ctx ends).
type Script struct {
	Outcome  judge.Outcome
	From, To string
	Delay    time.Duration
}

// Harness adapts one backend to the suite.
type Harness struct {
	// New returns the backend under test following s, and the policy set
	// the framework must use with it (base, or base plus whatever rules
	// the backend needs to follow s).
	New func(t *testing.T, base *judge.PolicySet, s Script) (judge.JudgeBackend, *judge.PolicySet)
	// Prompt returns the last prompt b sent to a model; ok is false for
	// backends without prompts.
	Prompt func(b judge.JudgeBackend) (prompt string, ok bool)
	// Secrets are runtime-configuration values the harness gave the
	// backend (keys, endpoints, budgets) that must never reach a prompt.
	Secrets []string
}

// JudgesMD is the judges.md the suite judges under: every class asks for
// the second judge (the backend under test), no class needs a human.
const JudgesMD = `---
schema: docket.judges.v1
chain: [policy, llm]
classes:
  read_only:            {llm: true, recall: false, human: false}
  reversible_write:     {llm: true, recall: false, human: false}
  external_side_effect: {llm: true, recall: false, human: false}
  high_risk:            {llm: true, recall: false, human: false}
escalation: {timeout: 2s, headless: never}
---
Suite policy.
`

// BaseSet returns the suite's policy set: the embedded tools registry and
// the given judges.md text (JudgesMD when empty).
func BaseSet(t testing.TB, judgesMD string) *judge.PolicySet {
	t.Helper()
	if judgesMD == "" {
		judgesMD = JudgesMD
	}
	td, err := policies.Default(policies.ToolsFile)
	if err != nil {
		t.Fatal(err)
	}
	tsrc := policies.Source{Name: policies.ToolsFile, Origin: "embedded:tools.yaml", Data: td}
	tools, err := policies.ParseTools(tsrc)
	if err != nil {
		t.Fatal(err)
	}
	j, err := policies.ResolveJudges(policies.Source{Name: policies.JudgesFile, Origin: "suite:judges.md", Data: []byte(judgesMD)})
	if err != nil {
		t.Fatal(err)
	}
	return judge.NewPolicySet(tools, tsrc, j)
}

// Event returns a PreToolUse Bash event for command in a temporary
// project directory.
func Event(t testing.TB, cwd, command string) *hooks.Event {
	in, _ := json.Marshal(map[string]any{"command": command, "description": "suite"})
	return &hooks.Event{Runtime: hooks.Claude, Name: hooks.PreToolUse, RawName: hooks.PreToolUse, SessionID: "suite-session",
		Cwd: cwd, ToolName: "Bash", ToolInput: in, ToolUseID: "toolu_suite_" + strings.NewReplacer(" ", "_", "/", "_").Replace(command)}
}

type env struct {
	t     *testing.T
	h     home.Home
	cwd   string
	led   *judge.MemLedger
	store *judge.MemStore
}

func newEnv(t *testing.T) *env {
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, h: h, cwd: t.TempDir(), led: &judge.MemLedger{}, store: &judge.MemStore{}}
}

func (e *env) engine(set *judge.PolicySet, b judge.JudgeBackend) *judge.Engine {
	en := judge.NewEngine(e.h, set)
	en.LLM = b
	en.Ledger = e.led
	en.Writer = e.store
	en.Approvals = e.store
	return en
}

func (e *env) proposal(set *judge.PolicySet, command string) *judge.ActionProposal {
	p, err := judge.Assemble(Event(e.t, e.cwd, command), set.Tools)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func jctx(p *judge.ActionProposal, set *judge.PolicySet) *judge.JudgmentContext {
	return &judge.JudgmentContext{
		Policy:  judge.PolicyContext{Class: p.Action.RiskClass, ClassPolicy: set.Judges.Classes[p.Action.RiskClass], PolicyText: set.Judges.Prose},
		Runtime: judge.RuntimeConfig{StateRoot: "/suite/state", Endpoint: "https://suite.invalid", APIKeyEnv: "SUITE_KEY_ENV", BudgetLeft: 4242},
	}
}

// Command is the Bash command the suite judges; scripts rewrite "danger".
const Command = "echo danger"

// Run runs the conformance suite against the harness.
func Run(t *testing.T, hs Harness) {
	tests := []struct {
		name string
		fn   func(*testing.T, Harness)
	}{
		{"ValidJudgmentPerOutcome", testOutcomes},
		{"NoMutation", testNoMutation},
		{"TimeoutIsUnavailable", testTimeout},
		{"ConcurrentEvaluate", testConcurrent},
		{"PolicyVersion", testPolicyVersion},
		{"AmendedReclassifiedStricterWins", testAmendedReclassified},
		{"InvalidAmendmentRejected", testInvalidAmendment},
		{"ReviseLoopBounded", testReviseLoop},
		{"ReviseNeedsRework", testReviseRework},
		{"FailurePolicyMapping", testFailurePolicy},
		{"SideChannelMismatch", testSideChannel},
		{"AuditEntryFields", testAuditEntry},
		{"ReadAuditBypass", testReadAudit},
		{"EscalationPendingResolved", testEscalation},
		{"HashDeterminism", testHashes},
		{"FloorCannotBeRelaxed", testFloor},
		{"RuntimeConfigNotInPrompt", testPromptSecrets},
		{"CloseIdempotent", testClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, hs) })
	}
}

func testOutcomes(t *testing.T, hs Harness) {
	base := BaseSet(t, "")
	probe, _ := hs.New(t, base, Script{Outcome: judge.Allow})
	supported := probe.SupportedOutcomes()
	probe.Close()
	if len(supported) == 0 {
		t.Fatal("SupportedOutcomes is empty")
	}
	e := newEnv(t)
	for _, o := range supported {
		s := Script{Outcome: o}
		if o == judge.Revise {
			s.From, s.To = "danger", "safe"
		}
		b, set := hs.New(t, base, s)
		p := e.proposal(set, Command)
		j, err := b.Evaluate(context.Background(), p, jctx(p, set))
		if err != nil {
			t.Fatalf("%s: Evaluate: %v", o, err)
		}
		if j.Outcome != o {
			t.Errorf("outcome = %s, want %s", j.Outcome, o)
		}
		if err := judge.ValidJudgment(j, supported); err != nil {
			t.Errorf("%s: invalid judgment: %v", o, err)
		}
		if o == judge.Revise {
			var in map[string]any
			if err := json.Unmarshal(j.Amendment, &in); err != nil || in["command"] != "echo safe" {
				t.Errorf("revise amendment = %s, want command %q", j.Amendment, "echo safe")
			}
		}
		b.Close()
	}
}

func deepCopy(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testNoMutation(t *testing.T, hs Harness) {
	e := newEnv(t)
	for _, o := range []judge.Outcome{judge.Allow, judge.Block, judge.Revise} {
		s := Script{Outcome: o}
		if o == judge.Revise {
			s.From, s.To = "danger", "safe"
		}
		b, set := hs.New(t, BaseSet(t, ""), s)
		p := e.proposal(set, Command)
		jc := jctx(p, set)
		jc.Policy.Recall = judge.Recall{Status: "ok", Memories: []judge.Memory{{ID: "m1", Summary: "Bash echo was fine", Provenance: "observed", UsePolicy: "can_use_as_evidence"}}}
		before, beforeIn, beforeCtx := deepCopy(t, p), append([]byte(nil), p.Input...), deepCopy(t, jc)
		beforeReasons := append([]string(nil), p.Context.ClassReasons...)
		if _, err := b.Evaluate(context.Background(), p, jc); err != nil {
			t.Fatal(err)
		}
		if string(deepCopy(t, p)) != string(before) || string(p.Input) != string(beforeIn) || !reflect.DeepEqual(p.Context.ClassReasons, beforeReasons) {
			t.Errorf("%s: Evaluate mutated the proposal", o)
		}
		if string(deepCopy(t, jc)) != string(beforeCtx) {
			t.Errorf("%s: Evaluate mutated the judgment context", o)
		}
		b.Close()
	}
}

func testTimeout(t *testing.T, hs Harness) {
	e := newEnv(t)
	b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Allow, Delay: 2 * time.Second})
	defer b.Close()
	p := e.proposal(set, Command)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if b.JudgeID() == "policy" {
		<-ctx.Done() // a deterministic judge is never slow: hand it a spent deadline
	}
	start := time.Now()
	_, err := b.Evaluate(ctx, p, jctx(p, set))
	if err == nil {
		t.Fatal("Evaluate past its deadline returned no error")
	}
	if time.Since(start) > time.Second {
		t.Errorf("Evaluate took %s after a 50ms deadline", time.Since(start))
	}
	if !errors.Is(err, judge.ErrUnavailable) || judge.FailureKind(err) != judge.KindUnavailable {
		t.Errorf("timeout error %v is not unavailable", err)
	}
	if o := judge.FailureOutcome(err, set.Judges.FailurePolicy); o != judge.Block {
		t.Errorf("failure policy maps timeout to %s, want block", o)
	}
}

func testConcurrent(t *testing.T, hs Harness) {
	e := newEnv(t)
	b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Block})
	defer b.Close()
	en := e.engine(set, b)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				cmd := fmt.Sprintf("echo danger %d-%d", g, i)
				p := e.proposal(set, cmd)
				j, err := b.Evaluate(context.Background(), p, jctx(p, set))
				if err != nil || j.Outcome != judge.Block {
					errs <- fmt.Errorf("Evaluate %s: %v %v", cmd, j.Outcome, err)
					return
				}
				a, d := en.Decide(context.Background(), Event(t, e.cwd, cmd))
				if a.Decision != hooks.Deny || d.Outcome != judge.Block {
					errs <- fmt.Errorf("Decide %s: %q %s", cmd, a.Decision, d.Outcome)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(e.led.Snapshot()); n != 64 {
		t.Errorf("ledger has %d entries after 64 concurrent decisions", n)
	}
	if n := len(e.store.Decisions()); n != 64 {
		t.Errorf("store has %d decisions after 64 concurrent decisions", n)
	}
}

func testPolicyVersion(t *testing.T, hs Harness) {
	a, _ := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Allow})
	a2, _ := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Allow})
	b, _ := hs.New(t, BaseSet(t, strings.Replace(JudgesMD, "Suite policy.", "Suite policy, amended.", 1)), Script{Outcome: judge.Allow})
	defer a.Close()
	defer a2.Close()
	defer b.Close()
	if a.PolicyVersion() == "" || !strings.HasPrefix(a.PolicyVersion(), "pv1:") {
		t.Errorf("policy_version %q", a.PolicyVersion())
	}
	if a.PolicyVersion() != a2.PolicyVersion() {
		t.Errorf("same sources, different policy_version: %s %s", a.PolicyVersion(), a2.PolicyVersion())
	}
	if a.PolicyVersion() == b.PolicyVersion() {
		t.Error("policy_version did not change with the judges.md source")
	}
	bad := []byte(strings.Replace(JudgesMD, "Suite", "Suite \xff", 1))
	_, err := policies.ResolveJudges(policies.Source{Name: policies.JudgesFile, Origin: "suite", Data: bad})
	if err == nil || judge.FailureKind(err) != judge.KindPolicyInvalid {
		t.Errorf("invalid UTF-8 judges.md: err %v, want a policy_invalid error", err)
	}
}

func testAmendedReclassified(t *testing.T, hs Harness) {
	for _, tc := range []struct {
		name, command, from, to string
		orig, amended           policies.RiskClass
	}{
		{"raised", "echo danger", "echo danger", "rm -rf ./build", policies.ReadOnly, policies.HighRisk},
		{"lowered keeps the stricter", "rm -rf ./danger", "rm -rf ./danger", "ls ./danger", policies.HighRisk, policies.HighRisk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Revise, From: tc.from, To: tc.to})
			defer b.Close()
			ev := Event(t, e.cwd, tc.command)
			_, d := e.engine(set, b).Decide(context.Background(), ev)
			if d.RiskClass != tc.orig {
				t.Errorf("original class %s, want %s", d.RiskClass, tc.orig)
			}
			if d.AmendedRiskClass != tc.amended {
				t.Errorf("amended class %s, want %s (re-classified by the framework, stricter wins)", d.AmendedRiskClass, tc.amended)
			}
			if d.AmendedArgsHash == "" || d.AmendedArgsHash == d.ArgumentsHash {
				t.Errorf("amended arguments hash %q not recomputed", d.AmendedArgsHash)
			}
			if d.Proposal == nil || d.Proposal.Action.RiskClass != tc.amended {
				t.Errorf("judged proposal class not the amended class")
			}
		})
	}
}

func testInvalidAmendment(t *testing.T, hs Harness) {
	e := newEnv(t)
	b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Revise, From: "echo danger", To: ""})
	defer b.Close()
	a, d := e.engine(set, b).Decide(context.Background(), Event(t, e.cwd, Command))
	if d.FailureKind != judge.KindAmendedRejected {
		t.Errorf("failure kind %q, want %s", d.FailureKind, judge.KindAmendedRejected)
	}
	if a.Decision != hooks.Deny || a.UpdatedInput != nil {
		t.Errorf("answer %q with input %s, want deny without updatedInput", a.Decision, a.UpdatedInput)
	}
	if err := judge.ValidateAmendment("Bash", json.RawMessage(`{"command":"ls"}`), json.RawMessage(`{"command":"ls -l","tool_name":"Write"}`)); err == nil {
		t.Error("amendment adding a field the tool does not take was accepted")
	}
	if err := judge.ValidateAmendment("Bash", json.RawMessage(`{"command":"ls"}`), json.RawMessage(`["ls"]`)); err == nil {
		t.Error("non-object amendment was accepted")
	}
}

func testReviseLoop(t *testing.T, hs Harness) {
	e := newEnv(t)
	b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Revise, From: "danger", To: "more danger"})
	defer b.Close()
	a, d := e.engine(set, b).Decide(context.Background(), Event(t, e.cwd, Command))
	if d.Outcome != judge.Block || !strings.Contains(d.Reason, judge.ReasonReviseLoopExhausted) {
		t.Errorf("second revise: outcome %s reason %q, want block with %s", d.Outcome, d.Reason, judge.ReasonReviseLoopExhausted)
	}
	if d.RawOutcome != judge.Revise {
		t.Errorf("raw outcome %s, want revise", d.RawOutcome)
	}
	if a.Decision != hooks.Deny || a.UpdatedInput != nil {
		t.Errorf("answer %q %s, want deny without updatedInput", a.Decision, a.UpdatedInput)
	}
}

func testReviseRework(t *testing.T, hs Harness) {
	e := newEnv(t)
	b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Revise})
	defer b.Close()
	a, d := e.engine(set, b).Decide(context.Background(), Event(t, e.cwd, Command))
	if a.Decision != hooks.Deny || d.EnforcementAction != judge.EnforceRevisionNeeded || !strings.Contains(a.Reason, "revision") {
		t.Errorf("non-mechanical revise: %q %q %s", a.Decision, a.Reason, d.EnforcementAction)
	}
	b2, set2 := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Revise, From: "danger", To: "safe"})
	defer b2.Close()
	a, d = e.engine(set2, b2).Decide(context.Background(), Event(t, e.cwd, Command))
	var in map[string]any
	_ = json.Unmarshal(a.UpdatedInput, &in)
	if a.Decision != hooks.Allow || in["command"] != "echo safe" || d.EnforcementAction != judge.EnforceUpdatedInput {
		t.Errorf("mechanical revise: %q %s %s", a.Decision, a.UpdatedInput, d.EnforcementAction)
	}
}

func testFailurePolicy(t *testing.T, hs Harness) {
	kinds := map[string]error{
		judge.KindUnavailable:     judge.ErrUnavailable,
		judge.KindPolicyInvalid:   judge.ErrPolicyInvalid,
		judge.KindBudgetExhausted: judge.ErrBudgetExhausted,
		judge.KindProposalInvalid: judge.ErrProposalInvalid,
		judge.KindAmendedRejected: judge.ErrAmendedRejected,
	}
	for kind, sentinel := range kinds {
		err := fmt.Errorf("wrapped: %w", &judge.Error{Kind: kind, Judge: "suite", Err: errors.New("x")})
		if !errors.Is(err, sentinel) || judge.FailureKind(err) != kind {
			t.Errorf("%s: errors.Is/FailureKind broken", kind)
		}
		if o := judge.FailureOutcome(err, BaseSet(t, "").Judges.FailurePolicy); o != judge.Block {
			t.Errorf("%s maps to %s by default, want block", kind, o)
		}
		for _, o := range []judge.Outcome{judge.Allow, judge.Escalate, judge.Block} {
			if got := judge.FailureOutcome(err, map[string]judge.Outcome{kind: o}); got != o {
				t.Errorf("%s with policy %s maps to %s", kind, o, got)
			}
		}
	}
	if judge.FailureKind(errors.New("mystery")) != judge.KindUnavailable {
		t.Error("an unknown error is not treated as unavailable")
	}
	// through the engine: a slow backend under failure_policy unavailable: escalate
	md := strings.Replace(JudgesMD, "escalation:", "failure_policy: {unavailable: escalate}\nescalation:", 1)
	e := newEnv(t)
	b, set := hs.New(t, BaseSet(t, md), Script{Outcome: judge.Allow, Delay: 2 * time.Second})
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if b.JudgeID() == "policy" {
		<-ctx.Done()
	}
	a, d := e.engine(set, b).Decide(ctx, Event(t, e.cwd, Command))
	if d.FailureKind != judge.KindUnavailable || d.Outcome != judge.Escalate || a.Decision != hooks.Ask {
		t.Errorf("failure through engine: kind %q outcome %s answer %q, want unavailable → escalate → ask", d.FailureKind, d.Outcome, a.Decision)
	}
}

func testSideChannel(t *testing.T, hs Harness) {
	b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Allow})
	defer b.Close()
	digest := func(cmd string) string {
		d, _ := canonjson.Digest(Event(t, "", cmd).ToolInput)
		return d
	}
	for _, tc := range []struct {
		name   string
		stmts  []judge.Statement
		want   string
		authed bool
	}{
		{"missing", nil, judge.SideChannelMissing, false},
		{"bound", []judge.Statement{{Tool: "Bash", ArgsDigest: digest(Command), Authorization: "user asked: echo it"}}, judge.SideChannelBound, true},
		{"unbound arguments", []judge.Statement{{Tool: "Bash", ArgsDigest: digest("echo other"), Authorization: "x"}}, judge.SideChannelUnbound, false},
		{"unbound tool", []judge.Statement{{Tool: "Write", ArgsDigest: digest(Command), Authorization: "x"}}, judge.SideChannelUnbound, false},
		{"duplicate", []judge.Statement{{Tool: "Bash", ArgsDigest: digest(Command), Authorization: "a"}, {Tool: "Bash", ArgsDigest: digest(Command), Authorization: "b"}}, judge.SideChannelDuplicate, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, st := range tc.stmts {
				st.Session = "suite-session"
				if _, err := judge.WriteStatement(e.h, st); err != nil {
					t.Fatal(err)
				}
			}
			_, d := e.engine(set, b).Decide(context.Background(), Event(t, e.cwd, Command))
			if d.SideChannel != tc.want {
				t.Errorf("side channel %q, want %q", d.SideChannel, tc.want)
			}
			if authed := d.Proposal.Authorization.ClaimedUserAuthorization != nil; authed != tc.authed {
				t.Errorf("authorization applied = %v, want %v", authed, tc.authed)
			}
			if d.Proposal.Action.RiskClass != policies.ReadOnly || d.Proposal.Tool.Name != "Bash" {
				t.Error("side channel changed framework-derived fields")
			}
			if tc.want == judge.SideChannelBound || tc.want == judge.SideChannelDuplicate {
				_, d2 := e.engine(set, b).Decide(context.Background(), Event(t, e.cwd, Command))
				if d2.SideChannel != judge.SideChannelMissing {
					t.Errorf("statement not consumed: second call is %q", d2.SideChannel)
				}
			}
		})
	}
}

func testAuditEntry(t *testing.T, hs Harness) {
	e := newEnv(t)
	b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Block})
	defer b.Close()
	ev := Event(t, e.cwd, Command)
	_, d := e.engine(set, b).Decide(context.Background(), ev)
	ents := e.led.Snapshot()
	if len(ents) != 1 {
		t.Fatalf("%d ledger entries, want 1", len(ents))
	}
	r := ents[0].Record
	if ents[0].Session != ev.SessionID || r.Kind != ledger.KindJudgeDecision || r.Event != hooks.PreToolUse || r.Tool != "Bash" || r.ToolUseID != ev.ToolUseID || string(r.Args) != string(ev.ToolInput) {
		t.Errorf("ledger record header %+v", r)
	}
	body, err := canonjson.Marshal(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	for _, f := range []string{"tool_definition_hash", "arguments_hash", "tool_use_id", "raw_outcome", "outcome", "enforcement_action", "cost_source", "judge_id", "policy_version", "memories_used", "proposal_digest", "risk_class"} {
		if v, ok := m[f]; !ok || v == "" {
			t.Errorf("audit body lacks %s", f)
		}
	}
	if m["cost_source"] != "judge" || m["raw_outcome"] != "block" || m["enforcement_action"] != judge.EnforceDeny || m["policy_version"] != set.Version {
		t.Errorf("audit body values: %v", m)
	}
	if want, _ := canonjson.Digest(ev.ToolInput); m["arguments_hash"] != want {
		t.Errorf("arguments_hash %v, want %s", m["arguments_hash"], want)
	}
	ds := e.store.Decisions()
	if len(ds) != 1 || ds[0].Decision != judge.Block || ds[0].IdempotencyKey != d.IdempotencyKey || ds[0].ArgumentsDigest != d.ArgumentsHash {
		t.Errorf("store write-back %+v", ds)
	}
}

func testReadAudit(t *testing.T, hs Harness) {
	md := strings.Replace(JudgesMD, "chain:", "mode: read_audit\nchain:", 1)
	e := newEnv(t)
	probe, _ := hs.New(t, BaseSet(t, md), Script{Outcome: judge.Allow})
	if !probe.SupportsReadAudit() {
		probe.Close()
		t.Skip("backend does not support read-audit")
	}
	probe.Close()
	b, set := hs.New(t, BaseSet(t, md), Script{Outcome: judge.Block})
	defer b.Close()
	a, d := e.engine(set, b).Decide(context.Background(), Event(t, e.cwd, Command))
	if a.Decision != "" || a.UpdatedInput != nil {
		t.Errorf("read-audit enforced: %q", a.Decision)
	}
	if d.EnforcementAction != judge.EnforceAuditBypass || d.RawOutcome != judge.Block {
		t.Errorf("read-audit recorded %s / %s, want audit_bypass / block", d.EnforcementAction, d.RawOutcome)
	}
	if len(e.led.Snapshot()) != 1 {
		t.Error("read-audit decision not recorded")
	}
}

func testEscalation(t *testing.T, hs Harness) {
	md := strings.Replace(JudgesMD, "escalation: {timeout: 2s, headless: never}", "escalation: {timeout: 5s, headless: always}", 1)
	for _, tc := range []struct {
		name   string
		res    judge.Resolution
		answer string
		action string
	}{
		{"approved", judge.Resolution{Status: judge.ApprovalApproved, By: "suite"}, hooks.Allow, judge.EnforceApprovalGranted},
		{"denied", judge.Resolution{Status: judge.ApprovalDenied, Note: "no"}, hooks.Deny, judge.EnforceApprovalDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			b, set := hs.New(t, BaseSet(t, md), Script{Outcome: judge.Escalate})
			defer b.Close()
			en := e.engine(set, b)
			type result struct {
				a hooks.Answer
				d *judge.Decision
			}
			done := make(chan result, 1)
			go func() {
				a, d := en.Decide(context.Background(), Event(t, e.cwd, Command))
				done <- result{a, d}
			}()
			var id string
			for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); {
				if p := e.store.Pending(); len(p) > 0 {
					id = p[0]
				} else {
					time.Sleep(2 * time.Millisecond)
				}
			}
			if id == "" {
				t.Fatal("no pending approval item appeared")
			}
			if !e.store.Resolve(id, tc.res) {
				t.Fatal("resolve failed")
			}
			r := <-done
			if r.a.Decision != tc.answer || r.d.EnforcementAction != tc.action || r.d.EscalationID != id || r.d.Approval != tc.res.Status {
				t.Errorf("answer %q action %s id %s approval %s", r.a.Decision, r.d.EnforcementAction, r.d.EscalationID, r.d.Approval)
			}
		})
	}
	t.Run("expired fails closed", func(t *testing.T) {
		e := newEnv(t)
		short := strings.Replace(md, "timeout: 5s", "timeout: 50ms", 1)
		b, set := hs.New(t, BaseSet(t, short), Script{Outcome: judge.Escalate})
		defer b.Close()
		a, d := e.engine(set, b).Decide(context.Background(), Event(t, e.cwd, Command))
		if a.Decision != hooks.Deny || d.EnforcementAction != judge.EnforceApprovalExpired || d.Approval != judge.ApprovalExpired {
			t.Errorf("expired approval: %q %s %s", a.Decision, d.EnforcementAction, d.Approval)
		}
	})
	t.Run("interactive asks", func(t *testing.T) {
		e := newEnv(t)
		b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Escalate})
		defer b.Close()
		a, d := e.engine(set, b).Decide(context.Background(), Event(t, e.cwd, Command))
		if a.Decision != hooks.Ask || d.EnforcementAction != judge.EnforceAsk {
			t.Errorf("interactive escalation: %q %s", a.Decision, d.EnforcementAction)
		}
	})
}

func testHashes(t *testing.T, hs Harness) {
	set := BaseSet(t, "")
	cwd := t.TempDir()
	ev1 := Event(t, cwd, Command)
	ev2 := Event(t, cwd, Command)
	ev2.ToolInput = json.RawMessage(`{ "description":"suite",  "command":"echo danger" }`)
	ev3 := Event(t, cwd, "echo dangers")
	p1, _ := judge.Assemble(ev1, set.Tools)
	p2, _ := judge.Assemble(ev2, set.Tools)
	p3, _ := judge.Assemble(ev3, set.Tools)
	if p1.Binding.ArgumentsHash != p2.Binding.ArgumentsHash || p1.Digest() != p2.Digest() || p1.Binding.ToolDefinitionHash != p2.Binding.ToolDefinitionHash {
		t.Error("hashes depend on key order or whitespace")
	}
	if p1.Binding.ArgumentsHash == p3.Binding.ArgumentsHash || p1.Digest() == p3.Digest() {
		t.Error("hashes insensitive to a one-byte argument change")
	}
	if p1.IdempotencyKey != p2.IdempotencyKey {
		t.Error("idempotency key not deterministic")
	}
	w := *ev1
	w.ToolName = "Write"
	w.ToolInput = json.RawMessage(`{"file_path":"/x","content":"y"}`)
	pw, _ := judge.Assemble(&w, set.Tools)
	if pw.Binding.ToolDefinitionHash == p1.Binding.ToolDefinitionHash {
		t.Error("tool_definition_hash does not depend on the tool")
	}
}

func testFloor(t *testing.T, hs Harness) {
	base := policies.Source{Name: policies.JudgesFile, Origin: "project", Data: []byte(JudgesMD)}
	for _, tc := range []struct {
		name, front string
		ok          bool
	}{
		{"tighten human", "classes: {read_only: {human: true}}", true},
		{"relax llm", "classes: {read_only: {llm: false}}", false},
		{"relax failure policy", "failure_policy: {unavailable: allow}", false},
		{"relax mode", "mode: read_audit", false},
		{"drop a judge", "chain: [policy]", false},
		{"longer escalation wait", "escalation: {timeout: 1h}", false},
		{"set the model", "model: {provider: openai, name: x}", false},
		{"auto approve", "classes: {high_risk: {auto_approve: true}}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			del := policies.Source{Name: policies.JudgesFile, Origin: "sub/.docket/judges.md", Data: []byte("---\nschema: docket.judges.v1\n" + tc.front + "\n---\n")}
			_, err := policies.ResolveJudges(base, del)
			var fe *policies.FloorError
			if tc.ok && err != nil {
				t.Errorf("tightening rejected: %v", err)
			}
			if !tc.ok && (!errors.As(err, &fe) || judge.FailureKind(err) != judge.KindPolicyInvalid) {
				t.Errorf("relaxation accepted or wrong error: %v", err)
			}
		})
	}
}

func testPromptSecrets(t *testing.T, hs Harness) {
	if hs.Prompt == nil {
		t.Skip("backend sends no prompts")
	}
	e := newEnv(t)
	b, set := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Allow})
	defer b.Close()
	p := e.proposal(set, Command)
	jc := jctx(p, set)
	if _, err := b.Evaluate(context.Background(), p, jc); err != nil {
		t.Fatal(err)
	}
	prompt, ok := hs.Prompt(b)
	if !ok || prompt == "" {
		t.Fatal("no prompt captured")
	}
	if !strings.Contains(prompt, "echo danger") || !strings.Contains(prompt, p.Binding.ArgumentsHash) {
		t.Error("prompt lacks the proposal")
	}
	secrets := append([]string{jc.Runtime.StateRoot, jc.Runtime.Endpoint, jc.Runtime.APIKeyEnv, "4242"}, hs.Secrets...)
	for _, s := range secrets {
		if s != "" && strings.Contains(prompt, s) {
			t.Errorf("prompt contains runtime configuration %q", s)
		}
	}
}

func testClose(t *testing.T, hs Harness) {
	b, _ := hs.New(t, BaseSet(t, ""), Script{Outcome: judge.Allow})
	if err := b.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if b.JudgeID() == "" || b.PolicyVersion() == "" || len(b.SupportedOutcomes()) == 0 {
		t.Error("metadata unavailable after Close")
	}
}
