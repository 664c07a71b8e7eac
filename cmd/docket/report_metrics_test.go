package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/gatehook"
	"github.com/docket/docket/internal/judgehook"
	"github.com/docket/docket/internal/ledgerhook"
	"github.com/docket/docket/store"
)

func TestParseWindow(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"7d", 7 * 24 * time.Hour, true}, {"36h", 36 * time.Hour, true}, {"90m", 90 * time.Minute, true},
		{"0d", 0, false}, {"-2h", 0, false}, {"xd", 0, false}, {"week", 0, false}} {
		got, err := parseWindow(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseWindow(%q) = %v, %v", c.in, got, err)
		}
	}
}

func TestReportMetricsUsage(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	if _, stderr, code := docket(t, "report"); code != 2 || !strings.Contains(stderr, "report metrics") {
		t.Errorf("report: exit %d %q", code, stderr)
	}
	if _, stderr, code := docket(t, "report", "metrics", "--since", "soon"); code != 2 || !strings.Contains(stderr, "hint:") {
		t.Errorf("bad --since: exit %d %q", code, stderr)
	}
	if _, _, code := docket(t, "report", "metrics", "extra"); code != 2 {
		t.Errorf("extra argument: exit %d", code)
	}
}

// A real state root: docket init, three PreToolUse calls judged by the
// hook (a project read that then runs, a read of the HMAC key that is
// blocked, a push to main that is asked about and then runs, so a human
// let it run), a Stop judged by the gate, and a lesson confirmed in
// review. Hand-checked: 3 judge decisions, 2 stopped, 1 caught, 1
// override (50%), escalation 1/3, 3 timed PreToolUse entries and 1 Stop.
func TestReportMetricsFromStateRoot(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKET_HOME", dir)
	t.Setenv("DOCKET_STORE_DSN", "")
	t.Setenv("DOCKET_HEADLESS", "")
	t.Setenv("USER", "ana")
	if _, stderr, code := docket(t, "init"); code != 0 {
		t.Fatalf("init: %d %s", code, stderr)
	}
	cwd := t.TempDir()
	ctx := context.Background()
	pre := func(id, tool, input string) string {
		p := fmt.Sprintf(`{"session_id":"s1","hook_event_name":"PreToolUse","cwd":%q,"permission_mode":"default","tool_name":%q,"tool_input":%s,"tool_use_id":%q}`, cwd, tool, input, id)
		var out, errb bytes.Buffer
		if err := judgehook.Run(ctx, []string{"-no-store"}, strings.NewReader(p), &out, &errb, judgehook.Options{}); err != nil {
			t.Fatalf("judge %s: %v %s", id, err, errb.String())
		}
		return out.String()
	}
	post := func(id, tool, input string) {
		p := fmt.Sprintf(`{"session_id":"s1","hook_event_name":"PostToolUse","cwd":%q,"tool_name":%q,"tool_input":%s,"tool_response":{"stdout":"","stderr":"","interrupted":false},"tool_use_id":%q}`, cwd, tool, input, id)
		var out, errb bytes.Buffer
		if err := ledgerhook.Run(ctx, nil, strings.NewReader(p), &out, &errb, ledgerhook.Options{}); err != nil {
			t.Fatalf("ledger %s: %v %s", id, err, errb.String())
		}
	}
	readIn := fmt.Sprintf(`{"file_path":%q}`, filepath.Join(cwd, "main.go"))
	if a := pre("t1", "Read", readIn); a != "" {
		t.Fatalf("project read answered %s", a)
	}
	post("t1", "Read", readIn)
	if a := pre("t2", "Bash", fmt.Sprintf(`{"command":"cat %s/keys/hmac.key"}`, dir)); !strings.Contains(a, `"deny"`) {
		t.Fatalf("key read answered %s", a)
	}
	pushIn := `{"command":"git push origin main"}`
	if a := pre("t3", "Bash", pushIn); !strings.Contains(a, `"ask"`) {
		t.Fatalf("push to main answered %s", a)
	}
	post("t3", "Bash", pushIn)
	var out, errb bytes.Buffer
	stop := `{"session_id":"s1","hook_event_name":"Stop","cwd":"` + cwd + `","stop_hook_active":false,"last_assistant_message":"Shipped it."}`
	if err := gatehook.Run(ctx, nil, strings.NewReader(stop), &out, &errb); err != nil {
		t.Fatalf("gate: %v %s", err, errb.String())
	}
	s := storeEnv2(t)
	res, err := s.WriteDecision(ctx, store.Decision{Workspace: "default", ActionID: "a1", IdempotencyKey: "k1", Decision: store.Escalate,
		ReasoningSummary: "push to main", Confidence: "high", Judge: store.Judge{Kind: "rule"}, ToolName: "Bash",
		MemoryToWrite: store.MemoryToWrite{Lessons: []string{"Ask a human before pushing to main"}}})
	if err != nil || len(res.Review) != 1 {
		t.Fatalf("write decision: %v %+v", err, res)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: res.Review[0], Action: store.ActConfirm, Actor: "ana"}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	stdout, stderr, code := docket(t, "report", "metrics", "--since", "1d", "--json")
	if code != 0 {
		t.Fatalf("report metrics: exit %d %s", code, stderr)
	}
	var m struct {
		Sessions          int                                `json:"sessions"`
		JudgeDecisions    int                                `json:"judge_decisions"`
		Stopped           int                                `json:"stopped"`
		HumanOverrides    int                                `json:"human_overrides"`
		HumanOverrideRate float64                            `json:"human_override_rate"`
		EscalationRate    float64                            `json:"escalation_rate"`
		Caught            int                                `json:"incidents_caught_before_execution"`
		Confirmed         int                                `json:"memories_confirmed"`
		Reviews           int                                `json:"reviews_resolved"`
		Latency           map[string]struct{ Count int }     `json:"latency_added"`
		Definitions       []struct{ Key, Definition string } `json:"definitions"`
	}
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if m.Sessions != 1 || m.JudgeDecisions != 3 || m.Stopped != 2 || m.HumanOverrides != 1 || m.Caught != 1 || m.Confirmed != 1 || m.Reviews != 1 {
		t.Errorf("metrics %+v", m)
	}
	if !near2(m.HumanOverrideRate, 0.5) || !near2(m.EscalationRate, 1.0/3) {
		t.Errorf("rates: override %v escalation %v", m.HumanOverrideRate, m.EscalationRate)
	}
	if m.Latency["PreToolUse"].Count != 3 || m.Latency["Stop"].Count != 1 {
		t.Errorf("latency %+v", m.Latency)
	}
	text, _, code := docket(t, "report", "metrics")
	if code != 0 {
		t.Fatalf("text: exit %d", code)
	}
	for _, d := range m.Definitions {
		if !strings.Contains(text, d.Key) || !strings.Contains(text, d.Definition) {
			t.Errorf("text output lacks %s and its definition", d.Key)
		}
	}
	// a window that ends before everything: nothing counted
	stdout, _, _ = docket(t, "report", "metrics", "--since", "1ns", "--json")
	if !strings.Contains(stdout, `"judge_decisions": 0`) {
		t.Errorf("1ns window counted decisions: %s", stdout)
	}
}

func near2(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func storeEnv2(t *testing.T) store.Store {
	t.Helper()
	s, err := openCLIStore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
