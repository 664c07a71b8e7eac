package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/docket/docket/internal/gatehook"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/judgehook"
	"github.com/docket/docket/internal/ledgerhook"
	"github.com/docket/docket/ledger"
)

// trustEnv is a state root with keys and the cwd of a project.
func trustEnv(t *testing.T) (home.Home, string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("DOCKET_HOME", filepath.Join(dir, "state"))
	t.Setenv("DOCKET_STORE_DSN", "")
	h, err := home.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "proj")
	_ = os.MkdirAll(proj, 0o755)
	return h, proj
}

func hook(t *testing.T, run func(stdin *strings.Reader, stdout, stderr *bytes.Buffer) error, payload map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(payload)
	var out, errb bytes.Buffer
	if err := run(strings.NewReader(string(b)), &out, &errb); err != nil {
		t.Fatalf("hook: %v (%s)", err, errb.String())
	}
	return out.String()
}

func ledgerHook(t *testing.T, payload map[string]any) string {
	return hook(t, func(in *strings.Reader, out, errb *bytes.Buffer) error {
		return ledgerhook.Run(context.Background(), []string{"--runtime", "claude"}, in, out, errb, ledgerhook.Options{})
	}, payload)
}

func judgeHook(t *testing.T, payload map[string]any) string {
	return hook(t, func(in *strings.Reader, out, errb *bytes.Buffer) error {
		return judgehook.Run(context.Background(), []string{"--runtime", "claude", "-no-store"}, in, out, errb, judgehook.Options{Getenv: func(string) string { return "" }})
	}, payload)
}

// A prompt, a judged call, its result: trace follows the chain and trust
// rates the call.
func TestTrustAndTraceCommands(t *testing.T) {
	h, proj := trustEnv(t)
	const sess = "sess-trust-1"
	// the prompt: nothing on stdout (it would become model context)
	if out := ledgerHook(t, map[string]any{"session_id": sess, "hook_event_name": "UserPromptSubmit", "cwd": proj, "prompt": "add a README"}); out != "" {
		t.Fatalf("UserPromptSubmit printed %q", out)
	}
	for i := 0; i < 2; i++ {
		input := map[string]any{"file_path": filepath.Join(proj, fmt.Sprintf("f%d.md", i)), "content": "hello"}
		judgeHook(t, map[string]any{"session_id": sess, "hook_event_name": "PreToolUse", "cwd": proj, "tool_name": "Write",
			"tool_use_id": fmt.Sprint("toolu_", i), "tool_input": input})
		ledgerHook(t, map[string]any{"session_id": sess, "hook_event_name": "PostToolUse", "cwd": proj, "tool_name": "Write",
			"tool_use_id": fmt.Sprint("toolu_", i), "tool_input": input, "tool_response": map[string]any{"success": true}})
	}
	// the turn ends with a claim the gate blocks: its decision is in the chain
	hook(t, func(in *strings.Reader, out, errb *bytes.Buffer) error {
		return gatehook.RunWith(context.Background(), []string{"--runtime", "claude"}, in, out, errb, gatehook.Options{})
	}, map[string]any{"session_id": sess, "hook_event_name": "Stop", "cwd": proj, "transcript_path": "/dev/null", "last_assistant_message": "All done."})
	// a second prompt starts another chain
	ledgerHook(t, map[string]any{"session_id": sess, "hook_event_name": "UserPromptSubmit", "cwd": proj, "prompt": "now delete it"})
	judgeHook(t, map[string]any{"session_id": sess, "hook_event_name": "PreToolUse", "cwd": proj, "tool_name": "Read",
		"tool_use_id": "toolu_9", "tool_input": map[string]any{"file_path": filepath.Join(proj, "f0.md")}})

	l, _ := ledger.Open(h)
	entries, err := l.ReadVerified(sess)
	if err != nil {
		t.Fatal(err)
	}
	var otags []string
	var decisions []map[string]any
	for _, e := range entries {
		switch e.Kind {
		case ledger.KindUserPrompt:
			otags = append(otags, "ot_"+e.Hash[:24])
			var b map[string]any
			_ = json.Unmarshal(e.Body, &b)
			if !strings.HasPrefix(fmt.Sprint(b["prompt_sha256"]), "sha256:") {
				t.Errorf("prompt body %v", b)
			}
			rc, err := l.OpenArtifact(e, "prompt.txt")
			if err != nil {
				t.Fatalf("prompt artifact: %v", err)
			}
			rc.Close()
		case ledger.KindJudgeDecision:
			var b map[string]any
			_ = json.Unmarshal(e.Body, &b)
			decisions = append(decisions, b)
		}
	}
	if len(otags) != 2 || len(decisions) != 3 {
		t.Fatalf("%d prompts, %d decisions", len(otags), len(decisions))
	}
	for i, d := range decisions {
		want := otags[0]
		if i == 2 {
			want = otags[1]
		}
		if d["o_tag"] != want || !strings.HasPrefix(fmt.Sprint(d["r_tag"]), "rt_") || d["v_pol"] == nil {
			t.Errorf("decision %d: o_tag %v r_tag %v v_pol %v, want o_tag %s", i, d["o_tag"], d["r_tag"], d["v_pol"], want)
		}
	}
	if decisions[0]["r_tag"] == decisions[1]["r_tag"] {
		t.Error("two decisions share an R-Tag")
	}

	out, errs, code := docket(t, "trace", otags[0])
	if code != 0 {
		t.Fatalf("trace: exit %d %s", code, errs)
	}
	for _, want := range []string{"origin " + otags[0] + ": user prompt", "judge_decision Write: allow", "tool_call Write: ran", "v_pol", "gate_decision: block"} {
		if !strings.Contains(out, want) {
			t.Errorf("trace lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "mismatch") {
		t.Errorf("trace marks a mismatch:\n%s", out)
	}
	for _, e := range entries {
		if e.Kind == ledger.KindGateDecision && !strings.Contains(string(e.Body), `"o_tag":"`+otags[0]+`"`) {
			t.Errorf("the gate decision does not name its chain: %s", e.Body)
		}
	}
	if strings.Contains(out, "Read") || strings.Count(out, "judge_decision") != 2 {
		t.Errorf("trace crosses into the next chain:\n%s", out)
	}
	var rep traceReport
	out, _, _ = docket(t, "trace", "--json", otags[1])
	if json.Unmarshal([]byte(out), &rep) != nil || len(rep.Steps) != 1 || rep.Steps[0].Tool != "Read" {
		t.Errorf("trace --json of the second chain: %s", out)
	}
	if _, _, code := docket(t, "trace", "ot_000000000000000000000000"); code != 1 {
		t.Errorf("unknown origin: exit %d", code)
	}
	if _, _, code := docket(t, "trace"); code != 2 {
		t.Errorf("no argument: exit %d", code)
	}

	// trust: the allows are rated for claude/main
	out, errs, code = docket(t, "trust", "--json", "--agent", "claude/main")
	var tr trustReport
	if code != 0 || json.Unmarshal([]byte(out), &tr) != nil {
		t.Fatalf("trust --json: exit %d %s %s", code, out, errs)
	}
	found := false
	for _, k := range tr.Keys {
		if k.Scope == "tool:Write" && k.Actions == 2 && k.Score == 1 && k.Level == 0 {
			found = true
		}
	}
	if !found || tr.Mode != "observe" {
		t.Errorf("trust keys: %+v mode %s", tr.Keys, tr.Mode)
	}
	out, _, code = docket(t, "trust", "--tool", "Write")
	if code != 0 || !regexp.MustCompile(`claude/main\s+tool:Write\s+0 review-all\s+1\.000\s+2`).MatchString(out) {
		t.Errorf("trust --tool Write:\n%s", out)
	}
	if out, _, _ := docket(t, "trust", "--agent", "nobody"); !strings.Contains(out, "every agent is at level 0") {
		t.Errorf("unknown agent:\n%s", out)
	}
	if _, _, code := docket(t, "trust", "--tool", "Write", "--class", "read_only"); code != 2 {
		t.Errorf("--tool with --class: exit %d", code)
	}
}
