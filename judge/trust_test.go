package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/trust"
)

// trustEngine is an engine over a real state root (keys, trust files)
// whose agent claude/main is at level for every scope.
func trustEngine(t testing.TB, level int, mode string) (*Engine, *Trust) {
	t.Helper()
	h, _ := home.At(t.TempDir())
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	keys, err := ledger.LoadKeys(h)
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{Home: h, Protector: &Protector{Home: h, UserHome: "/home/u", XDGState: "/home/u/.local/state"}, Approvals: &MemStore{}}
	e.SetPolicy(defaultSet(t))
	tr := LoadTrust(h, keys)
	tr.Policy.Mode = mode
	tr.NoRecord = true
	tr.Summary = summaryAt(level)
	e.Trust = tr
	return e, tr
}

func summaryAt(level int) *trust.Summary {
	sm := &trust.Summary{Keys: map[string]trust.SummaryKey{}, Hold: 30, Min: 20, Thr: [4]float64{0.7, 0.8, 0.9, 0.95}}
	for _, sc := range []string{trust.AllScope, trust.ToolScope("Write"), trust.ToolScope("Read"), trust.ToolScope("Edit"),
		trust.ClassScope("reversible_write"), trust.ClassScope("read_only")} {
		sm.Keys[trust.KeyName("claude/main", sc)] = trust.SummaryKey{Level: level, Score: 0.99, Actions: 100}
	}
	return sm
}

func writeCall(path string) *hooks.Event {
	return ev("Write", map[string]any{"file_path": path, "content": "x"})
}

func TestTrustLevels(t *testing.T) {
	read := func() *hooks.Event { return ev("Read", map[string]any{"file_path": "/home/u/proj/a.go"}) }
	tests := []struct {
		name     string
		level    int
		mode     string
		event    *hooks.Event
		decision string
		action   string
		enforced bool
	}{
		{"level 0 escalates a write", 0, trust.ModeEnforce, writeCall("/home/u/proj/a.go"), hooks.Ask, "escalate", true},
		{"level 0 leaves reads alone", 0, trust.ModeEnforce, read(), "", "none", false},
		{"observe mode only records", 0, trust.ModeObserve, writeCall("/home/u/proj/a.go"), "", "escalate", false},
		{"level 2 allows and queues a review", 2, trust.ModeEnforce, writeCall("/home/u/proj/a.go"), "", "post_exec_review", true},
		{"level 4 allows", 4, trust.ModeEnforce, writeCall("/home/u/proj/a.go"), "", "none", false},
		{"level 4 never lifts a block", 4, trust.ModeEnforce, writeCall("/etc/passwd"), hooks.Deny, "none", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := trustEngine(t, tt.level, tt.mode)
			a, d := e.Decide(context.Background(), tt.event)
			if a.Decision != tt.decision || d.Trust == nil || d.Trust.Action != tt.action || d.Trust.Enforced != tt.enforced || d.Trust.Level != tt.level {
				t.Errorf("answer %q, trust %+v; want %q, action %s enforced %v", a.Decision, d.Trust, tt.decision, tt.action, tt.enforced)
			}
			if tt.action == "post_exec_review" {
				if d.Trust.ReviewID == "" || len(e.Approvals.(*MemStore).Pending()) != 1 {
					t.Errorf("no review item queued: %+v", d.Trust)
				}
			}
		})
	}
}

// The level is the lowest of the tool's, the class's and the agent's.
func TestTrustLowestScope(t *testing.T) {
	e, tr := trustEngine(t, 4, trust.ModeEnforce)
	tr.Summary.Keys[trust.KeyName("claude/main", trust.ToolScope("Write"))] = trust.SummaryKey{Level: 0}
	a, d := e.Decide(context.Background(), writeCall("/home/u/proj/a.go"))
	if a.Decision != hooks.Ask || d.Trust.Scope != "tool:Write" {
		t.Errorf("%q %+v", a.Decision, d.Trust)
	}
	// a subagent has its own keys: unknown, so level 0
	x := writeCall("/home/u/proj/a.go")
	x.AgentType, x.AgentID = "Explore", "a1"
	if _, d := e.Decide(context.Background(), x); d.Trust.Agent != "claude/Explore" || d.Trust.Level != 0 {
		t.Errorf("subagent: %+v", d.Trust)
	}
}

func TestTrustSampling(t *testing.T) {
	e, tr := trustEngine(t, 1, trust.ModeEnforce)
	tr.Policy.SampleRate = 0.25
	n, asked := 400, 0
	first := map[string]string{}
	for i := 0; i < n; i++ {
		path := fmt.Sprintf("/home/u/proj/f%d.go", i)
		a, _ := e.Decide(context.Background(), writeCall(path))
		if a.Decision == hooks.Ask {
			asked++
		}
		first[path] = a.Decision
	}
	if asked < n/8 || asked > n*3/8 {
		t.Errorf("%d of %d sampled at rate 0.25", asked, n)
	}
	// deterministic: the same call gets the same answer
	for i := 0; i < 50; i++ {
		path := fmt.Sprintf("/home/u/proj/f%d.go", i)
		if a, _ := e.Decide(context.Background(), writeCall(path)); a.Decision != first[path] {
			t.Fatalf("%s: %q then %q", path, first[path], a.Decision)
		}
	}
	tr.Policy.SampleRate = 0
	if a, _ := e.Decide(context.Background(), writeCall("/home/u/proj/x.go")); a.Decision != "" {
		t.Errorf("rate 0 sampled a call: %q", a.Decision)
	}
}

// A forged level file: every key at level 0.
func TestTrustForgedSummary(t *testing.T) {
	e, tr := trustEngine(t, 4, trust.ModeEnforce)
	dir := filepath.Join(tr.Home.Root, trust.Dir)
	_ = os.MkdirAll(dir, 0o700)
	forged := `{"v":1,"key_id":"hk1-0000000000000000","mac":"00","payload":{"keys":{"claude/main *":{"level":4},"claude/main tool:Write":{"level":4},"claude/main class:reversible_write":{"level":4}}}}`
	if err := os.WriteFile(filepath.Join(dir, trust.LevelsFile), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, _ := ledger.LoadKeys(tr.Home)
	tr2 := LoadTrust(tr.Home, keys)
	tr2.Policy.Mode = trust.ModeEnforce
	e.Trust = tr2
	a, d := e.Decide(context.Background(), writeCall("/home/u/proj/a.go"))
	if a.Decision != hooks.Ask || d.Trust.Level != 0 || !strings.Contains(d.Trust.Warning, "does not verify") {
		t.Errorf("forged summary: %q %+v", a.Decision, d.Trust)
	}
}

// A critical violation demotes at once: the next call of the agent is
// at level 0, and the block itself stands.
func TestTrustCriticalRecordedAtOnce(t *testing.T) {
	e, tr := trustEngine(t, 4, trust.ModeEnforce)
	tr.NoRecord = false
	now := time.Now()
	e.Now = func() time.Time { return now }
	// give the state some history so the demotion is visible
	st := &trust.Store{Home: tr.Home, Keys: tr.Keys}
	p := tr.Policy
	p.MinActions, p.GraduationDays = 1, 1
	var sigs []trust.Signal
	for i := 0; i < 5; i++ {
		sigs = append(sigs, trust.Signal{ID: fmt.Sprint("a", i), Time: now.Add(-10 * 24 * time.Hour), Agent: "claude/main", Tool: "Write", Class: "reversible_write", Rating: 1})
	}
	if err := st.Record(&p, sigs, now); err != nil {
		t.Fatal(err)
	}
	tr.Policy = p
	l, _ := ledger.Open(tr.Home)
	e.Ledger = l
	a, d := e.Decide(context.Background(), ev("Read", map[string]any{"file_path": tr.Home.HMACKeyPath()}))
	if a.Decision != hooks.Deny || len(d.RuleIDs) == 0 || d.RuleIDs[0] != ProtectKeys {
		t.Fatalf("key read: %q %v", a.Decision, d.RuleIDs)
	}
	sm, err := trust.LoadSummary(tr.Home, tr.Keys)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := sm.Level("claude/main", trust.ToolScope("Write"), now); k.Level != 0 {
		t.Errorf("after a key read, Write is at level %d", k.Level)
	}
	s, _ := st.Load()
	last := s.History[len(s.History)-1]
	if last.To != 0 || !strings.Contains(last.Reason, ProtectKeys) || last.Signal != d.RTag {
		t.Errorf("history: %+v (r_tag %s)", last, d.RTag)
	}
	// the ledger scan meets the same decision later: applied once
	s, err = st.Refresh(&p, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range s.History {
		if strings.HasPrefix(c.Reason, "critical") && c.Scope == trust.AllScope {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d critical changes of the agent after the refresh, want 1: %+v", n, s.History)
	}
}

func TestTagTrinity(t *testing.T) {
	e, tr := trustEngine(t, 4, trust.ModeEnforce)
	_, d := e.Decide(context.Background(), writeCall("/home/u/proj/a.go"))
	if !strings.HasPrefix(d.RTag, "rt_") || d.OTag != "" || d.VPol == nil || d.VPol.Version != d.PolicyVersion || d.VPol.Rule == "" {
		t.Fatalf("without a prompt: %+v %+v", d.Tags, d.VPol)
	}
	// a prompt starts a chain; its calls inherit the O-Tag and the
	// chain's policy version, each with its own R-Tag
	if err := trust.WriteOrigin(tr.Home, tr.Keys, trust.Origin{OTag: "ot_abc", Session: "s1", Seq: 3}); err != nil {
		t.Fatal(err)
	}
	_, d1 := e.Decide(context.Background(), writeCall("/home/u/proj/a.go"))
	o, _, _ := trust.ReadOrigin(tr.Home, tr.Keys, "s1")
	o.PolicyVersion = "sha256:older"
	_ = trust.WriteOrigin(tr.Home, tr.Keys, o)
	x := writeCall("/home/u/proj/b.go")
	x.ToolUseID = "toolu_2"
	_, d2 := e.Decide(context.Background(), x)
	if d1.OTag != "ot_abc" || d2.OTag != "ot_abc" || d1.RTag == d2.RTag || d2.VPol.Version != "sha256:older" {
		t.Errorf("chain: %+v / %+v", d1.Tags, d2.Tags)
	}
	if o.PolicyVersion == "" {
		t.Error("the chain's first decision did not set its policy version")
	}
	// another session's origin file copied over this one is not used
	b, _ := os.ReadFile(filepath.Join(tr.Home.RunDir(), "origin", "s1.json"))
	_ = os.WriteFile(filepath.Join(tr.Home.RunDir(), "origin", "s2.json"), b, 0o600)
	y := writeCall("/home/u/proj/c.go")
	y.SessionID = "s2"
	if _, d := e.Decide(context.Background(), y); d.OTag != "" {
		t.Errorf("a copied origin was used: %q", d.OTag)
	}
	// the tags are in the ledger entry's body
	ml := &MemLedger{}
	e.Ledger = ml
	_, d3 := e.Decide(context.Background(), writeCall("/home/u/proj/a.go"))
	body, _ := json.Marshal(d3)
	for _, k := range []string{`"r_tag":"rt_`, `"o_tag":"ot_abc"`, `"v_pol":{"version":`, `"trust":{"agent":"claude/main"`} {
		if !strings.Contains(string(body), k) {
			t.Errorf("body lacks %s: %s", k, body)
		}
	}
}

func TestEvaluateTags(t *testing.T) {
	e, _ := trustEngine(t, 4, trust.ModeEnforce)
	flow := "flow-42"
	in := &ActionProposal{SchemaVersion: "action_proposal.v1", WorkspaceID: "w", ActionID: "a1", IdempotencyKey: "k1", FlowID: &flow,
		Runtime: RuntimeRef{Name: "openclaw"}, Actor: Actor{AgentID: "planner"},
		Tool: ToolRef{Name: "Read"}, Action: Action{RiskClass: "read_only", ArgumentsDigest: "sha256:00"}}
	ev := e.Evaluate(context.Background(), in, json.RawMessage(`{"file_path":"/home/u/proj/a.go"}`), "s9")
	if ev.OTag != "flow:flow-42" || !strings.HasPrefix(ev.RTag, "rt_") || ev.Trust == nil || ev.Trust.Agent != "openclaw/planner" {
		t.Errorf("%+v %+v", ev.Tags, ev.Trust)
	}
}

// BenchmarkTrustLevel measures what the judge hook pays per call for
// levels: reading the trust policy and the MAC'd summary, and looking up
// the three keys of one call.
func BenchmarkTrustLevel(b *testing.B) {
	for _, size := range []struct{ agents, tools int }{{2, 24}, {20, 48}} {
		b.Run(fmt.Sprintf("keys=%d", size.agents*(size.tools+2)), func(b *testing.B) {
			h, _ := home.At(b.TempDir())
			if _, err := ledger.Init(h); err != nil {
				b.Fatal(err)
			}
			keys, _ := ledger.LoadKeys(h)
			p := trust.DefaultPolicy()
			var sigs []trust.Signal
			now := time.Now()
			for a := 0; a < size.agents; a++ {
				for sc := 0; sc < size.tools; sc++ {
					sigs = append(sigs, trust.Signal{ID: fmt.Sprint(a, "-", sc), Time: now.Add(-time.Hour), Agent: fmt.Sprint("claude/a", a),
						Tool: fmt.Sprint("T", sc), Class: "reversible_write", Rating: 1})
				}
			}
			st := &trust.Store{Home: h, Keys: keys}
			if err := st.Record(&p, sigs, now); err != nil {
				b.Fatal(err)
			}
			fi, _ := os.Stat(filepath.Join(h.Root, trust.Dir, trust.LevelsFile))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tr := LoadTrust(h, keys)
				if l, _, scope := tr.Level("claude/a1", "T7", "reversible_write", now); l != 0 || scope == "" {
					b.Fatal(l)
				}
			}
			b.ReportMetric(float64(fi.Size()), "summary-bytes")
		})
	}
}

// A human's edited approval is recorded (amended_arguments_hash), so
// trust rates it neutral rather than as a plain approval.
func TestHumanModificationRecorded(t *testing.T) {
	e, _ := testEngine(t, defaultSet(t))
	e.Headless = true
	e.Approvals = &editingApprovals{args: json.RawMessage(`{"command":"git push origin main --dry-run"}`)}
	_, d := e.Decide(context.Background(), ev("Bash", map[string]any{"command": "git push origin main"}))
	if d.EnforcementAction != EnforceApprovalGranted || !strings.HasPrefix(d.AmendedArgsHash, "sha256:") || d.AmendedArgsHash == d.ArgumentsHash {
		t.Errorf("%s amended %q args %q", d.EnforcementAction, d.AmendedArgsHash, d.ArgumentsHash)
	}
	e.Approvals = &editingApprovals{}
	if _, d := e.Decide(context.Background(), ev("Bash", map[string]any{"command": "git push origin main"})); d.AmendedArgsHash != "" {
		t.Errorf("a plain approval recorded an amendment %q", d.AmendedArgsHash)
	}
}

type denyingApprovals struct{}

func (denyingApprovals) Submit(ctx context.Context, it ApprovalItem) (string, error) {
	return "apr_d", nil
}

func (denyingApprovals) Wait(ctx context.Context, id string, timeout time.Duration) (Resolution, error) {
	return Resolution{Status: ApprovalDenied, By: "ana"}, nil
}

// The loop: level 0 escalates, humans answer, the ledger records it, and
// the next refresh rates the agent from those answers.
func TestTrustLoop(t *testing.T) {
	e, tr := trustEngine(t, 0, trust.ModeEnforce)
	tr.Summary = &trust.Summary{Keys: map[string]trust.SummaryKey{}}
	l, err := ledger.Open(tr.Home)
	if err != nil {
		t.Fatal(err)
	}
	e.Ledger = l
	e.Headless = true
	e.Approvals = &editingApprovals{}
	for i := 0; i < 3; i++ {
		x := writeCall(fmt.Sprintf("/home/u/proj/f%d.go", i))
		x.ToolUseID = fmt.Sprint("toolu_", i)
		a, d := e.Decide(context.Background(), x)
		if a.Decision != hooks.Allow || d.EnforcementAction != EnforceApprovalGranted || d.Trust.Action != "escalate" {
			t.Fatalf("call %d: %q %s %+v", i, a.Decision, d.EnforcementAction, d.Trust)
		}
	}
	e.Approvals = denyingApprovals{}
	if a, _ := e.Decide(context.Background(), writeCall("/home/u/proj/g.go")); a.Decision != hooks.Deny {
		t.Fatalf("denied call answered %q", a.Decision)
	}
	st := &trust.Store{Home: tr.Home, Keys: tr.Keys}
	s, err := st.Refresh(&tr.Policy, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ks := s.Keys[trust.KeyName("claude/main", trust.ToolScope("Write"))]
	if ks == nil || ks.Actions != 4 || ks.Score != 0.75 || len(ks.Misaligned) != 1 {
		t.Fatalf("Write key after 3 approvals and a rejection: %+v", ks)
	}
}

// BenchmarkDecideTrust measures a whole Decide over the mix of calls
// without trust, and with trust as the hook wires it (the summary and
// the session's origin read per call, as a fresh hook process does).
func BenchmarkDecideTrust(b *testing.B) {
	for _, withTrust := range []bool{false, true} {
		b.Run(fmt.Sprintf("trust=%v", withTrust), func(b *testing.B) {
			e, tr := trustEngine(b, 2, trust.ModeEnforce)
			e.Approvals = nil
			_ = trust.WriteOrigin(tr.Home, tr.Keys, trust.Origin{OTag: "ot_x", Session: "s1", PolicyVersion: "v"})
			var evs []*hooks.Event
			for _, c := range benchCalls {
				evs = append(evs, ev(c.tool, c.input))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if withTrust {
					e.Trust = LoadTrust(tr.Home, tr.Keys)
				} else {
					e.Trust = nil
				}
				e.Decide(context.Background(), evs[i%len(evs)])
			}
		})
	}
}
