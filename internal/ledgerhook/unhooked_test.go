package ledgerhook

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// TestRecordUnhooked: Codex ran an MCP call that failed and no
// PostToolUse reported it; its rollout (a real one,
// codex-rollout-mcp-failed.jsonl, cut where the next call's PreToolUse
// reads it) is the only record. The failure is recorded when the
// judge's signed decision let that very call run, and only then: the
// rollout is the agent's file, and a line it adds must not become a
// failed attempt.
func TestRecordUnhooked(t *testing.T) {
	b, err := os.ReadFile("../../testdata/hooks/captured/codex-rollout-mcp-failed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rollout := string(b)
	rollout = rollout[:strings.Index(rollout, `"id":"fc_call_docket_04"`)]
	rollout = rollout[:strings.LastIndexByte(rollout, '\n')+1]
	const (
		tool = "mcp__term__run_command"
		id   = "call_docket_03"
	)
	canon, _ := canonjson.Canonical([]byte(`{"command":"ls /nonexistent-dir"}`))
	ranWith := canonjson.SHA256(canon)
	other := canonjson.SHA256([]byte(`{"command":"true"}`))
	for _, tc := range []struct {
		name     string
		decision map[string]any // the judge_decision's body; nil for none
		tool     string
		want     int
	}{
		{"allowed", map[string]any{"enforcement_action": "none", "arguments_hash": ranWith}, tool, 1},
		{"revised to it", map[string]any{"enforcement_action": "updated_input", "arguments_hash": other, "amended_arguments_hash": ranWith}, tool, 1},
		{"approved by a human", map[string]any{"enforcement_action": "approval_granted", "arguments_hash": ranWith}, tool, 1},
		{"never judged", nil, tool, 0},
		{"refused", map[string]any{"enforcement_action": "deny", "arguments_hash": ranWith}, tool, 0},
		{"still waiting", map[string]any{"enforcement_action": "approval_pending", "arguments_hash": ranWith}, tool, 0},
		{"judged with other arguments", map[string]any{"enforcement_action": "none", "arguments_hash": other}, tool, 0},
		{"judged for another tool", map[string]any{"enforcement_action": "none", "arguments_hash": ranWith}, "mcp__term__other", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("DOCKET_HOME", t.TempDir())
			h, _ := home.Resolve()
			if _, err := ledger.Init(h); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.Open(h)
			if err != nil {
				t.Fatal(err)
			}
			const session = "01a20c98-bfd4-7122-b150-f54b293a0ced"
			if tc.decision != nil {
				if _, err := l.Append(session, ledger.Record{Kind: ledger.KindJudgeDecision, Runtime: "codex", Event: hooks.PreToolUse,
					Tool: tc.tool, ToolUseID: id, Body: tc.decision}); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(t.TempDir(), "rollout.jsonl")
			if err := os.WriteFile(path, []byte(rollout), 0o600); err != nil {
				t.Fatal(err)
			}
			ev := &hooks.Event{Runtime: hooks.Codex, Name: hooks.PreToolUse, SessionID: session, TranscriptPath: path, Cwd: "/home/dev/proj"}
			calls := hooks.CodexUnhookedFailures(ev, nil)
			if len(calls) != 1 {
				t.Fatalf("the rollout's failed calls: %+v", calls)
			}
			for round := 0; round < 2; round++ { // the second finds it recorded
				n, err := RecordUnhooked(ev, calls, l)
				if want := tc.want * (1 - round); err != nil || n != want {
					t.Fatalf("round %d: recorded %d (%v), want %d", round, n, err, want)
				}
			}
			es, err := l.ReadVerified(session)
			if err != nil {
				t.Fatal(err)
			}
			var got []*ledger.Entry
			for _, e := range es {
				if e.Kind != ledger.KindJudgeDecision {
					got = append(got, e)
				}
			}
			if len(got) != tc.want {
				t.Fatalf("%d entries besides the decision, want %d", len(got), tc.want)
			}
			if tc.want == 0 {
				return
			}
			e := got[0]
			var body map[string]any
			json.Unmarshal(e.Body, &body)
			if e.Kind != ledger.KindToolFailure || e.Tool != tool || e.ToolUseID != id || e.Runtime != "codex" ||
				body["failed"] != true || body["tool_kind"] != "mcp" || body["recorded_from"] != "rollout" ||
				!strings.Contains(body["error"].(string), "No such file or directory") {
				t.Errorf("entry %+v body %s", e, e.Body)
			}
			for name, want := range map[string]string{"input.json": `{"command":"ls /nonexistent-dir"}`, "payload.json": `"status":"failed"`} {
				r, err := l.OpenArtifact(e, name)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				a, _ := io.ReadAll(r)
				r.Close()
				if !strings.Contains(string(a), want) {
					t.Errorf("%s = %s, want %s in it", name, a, want)
				}
			}
		})
	}
}
