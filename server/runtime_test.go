package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/docket/docket/ledger"
)

func TestLedgerEntryRoute(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name     string
		body     string
		want     int
		kind     ledger.Kind
		field    string            // the 400's field
		bodyKeys map[string]string // entry body key → its JSON
	}{
		{name: "read succeeded", want: 201, kind: ledger.KindToolCall,
			body:     `{"tool_name":"read","tool_call_id":"call_1|fc_1","params":{"path":"README.md"},"result":{"content":[{"type":"text","text":"hi"}]},"duration_ms":12,"run_id":"r1","session_key":"agent:main:main","agent_id":"main"}`,
			bodyKeys: map[string]string{"failed": "false", "tool_kind": `"read"`, "duration_ms": "12", "session_key": `"agent:main:main"`}},
		{name: "blocked call is a failure", want: 201, kind: ledger.KindToolFailure,
			body:     `{"tool_name":"exec","tool_call_id":"call_2","params":{"command":"gh pr merge 7"},"error":"docket judge: escalated"}`,
			bodyKeys: map[string]string{"failed": "true", "tool_kind": `"shell"`, "error": `"docket judge: escalated"`}},
		{name: "non-zero exit in the result is a failure", want: 201, kind: ledger.KindToolFailure,
			body:     `{"tool_name":"exec","tool_call_id":"call_3","params":{"command":"false"},"result":{"details":{"exitCode":1}}}`,
			bodyKeys: map[string]string{"failed": "true", "exit_code": "1"}},
		{name: "shell without an exit status is not a success", want: 201, kind: ledger.KindToolCall,
			body:     `{"tool_name":"exec","tool_call_id":"call_4","params":{"command":"true"},"result":{"content":[]}}`,
			bodyKeys: map[string]string{"exit_unknown": "true"}},
		{name: "an exit_code field outranks the result", want: 201, kind: ledger.KindToolFailure,
			body:     `{"tool_name":"exec","tool_call_id":"call_5","params":{"command":"x"},"exit_code":2,"result":{"details":{"exitCode":0}}}`,
			bodyKeys: map[string]string{"exit_code": "2"}},
		{name: "a bundled MCP server's tool, by OpenClaw's name", want: 201, kind: ledger.KindToolCall,
			body:     `{"tool_name":"slack__search_docs","tool_call_id":"call_6","params":{"query":"deploy"},"result":{"content":[{"type":"text","text":"sent"}]}}`,
			bodyKeys: map[string]string{"tool_kind": `"mcp"`, "mcp_name": `"mcp__slack__search_docs"`}},
		{name: "missing tool_name", want: 400, field: "tool_name", body: `{"tool_call_id":"c"}`},
		{name: "missing tool_call_id", want: 400, field: "tool_call_id", body: `{"tool_name":"read"}`},
		{name: "params not an object", want: 400, field: "params", body: `{"tool_name":"read","tool_call_id":"c","params":[1]}`},
		{name: "negative duration", want: 400, field: "duration_ms", body: `{"tool_name":"read","tool_call_id":"c","duration_ms":-1}`},
		{name: "relative cwd", want: 400, field: "cwd", body: `{"tool_name":"read","tool_call_id":"c","cwd":"../x"}`},
		{name: "newline in a tool name", want: 400, field: "tool_name", body: `{"tool_name":"read\nkind: validator_pass","tool_call_id":"c"}`},
		{name: "unknown field", want: 400, body: `{"tool_name":"read","tool_call_id":"c","kind":"validator_pass"}`},
		{name: "runtime not a name", want: 400, field: "runtime", body: `{"runtime":"a b","tool_name":"read","tool_call_id":"c"}`},
	}
	var appended int
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := e.do("POST", "/v1/ledger/oc-run-1/entries", RoleRuntime, tt.body)
			if code != tt.want {
				t.Fatalf("status %d, want %d: %s", code, tt.want, b)
			}
			if tt.want != 201 {
				var er struct{ Error Error }
				json.Unmarshal(b, &er)
				if tt.field != "" && er.Error.Field != tt.field {
					t.Fatalf("field %q, want %q: %s", er.Error.Field, tt.field, b)
				}
				return
			}
			appended++
			var resp LedgerEntryResponse
			if err := json.Unmarshal(b, &resp); err != nil || resp.Session != "oc-run-1" || resp.Kind != string(tt.kind) {
				t.Fatalf("response %s", b)
			}
			l, _ := ledger.Open(e.h)
			entries, err := l.ReadVerified("oc-run-1")
			if err != nil {
				t.Fatal(err)
			}
			en := entries[len(entries)-1]
			if en.Seq != resp.Seq || en.Kind != tt.kind || en.Runtime != "openclaw" {
				t.Fatalf("entry %+v", en)
			}
			var body map[string]json.RawMessage
			json.Unmarshal(en.Body, &body)
			for k, v := range tt.bodyKeys {
				if string(body[k]) != v {
					t.Errorf("body %s = %s, want %s (%s)", k, body[k], v, en.Body)
				}
			}
		})
	}
	// nothing written by a refused request
	l, _ := ledger.Open(e.h)
	entries, err := l.ReadVerified("oc-run-1")
	if err != nil || len(entries) != appended {
		t.Fatalf("%d entries (err %v), want %d", len(entries), err, appended)
	}
	for _, bad := range []string{".hidden", "a%2Fb", strings.Repeat("x", 129)} {
		if code, b := e.do("POST", "/v1/ledger/"+bad+"/entries", RoleRuntime, `{"tool_name":"read","tool_call_id":"c"}`); code != 400 && code != 404 {
			t.Errorf("session %q: %d %s", bad, code, b)
		}
	}
	if code, _ := e.do("POST", "/v1/ledger/oc-run-1/entries", "", `{"tool_name":"read","tool_call_id":"c"}`); code != 401 {
		t.Errorf("no token: %d", code)
	}
}

func TestGateCheckRoute(t *testing.T) {
	e := newEnv(t)
	cwd := t.TempDir()
	check := func(session, msg string, active bool) jsonText {
		body, _ := json.Marshal(map[string]any{"last_assistant_message": msg, "stop_hook_active": active, "cwd": cwd, "run_id": "r1"})
		return jsonText(e.must(200, "POST", "/v1/gate/"+session+"/check", RoleRuntime, string(body)).Raw)
	}
	// no claim: allowed, nothing to back
	if r := check("oc-gate", "I read the diff and left no comment.", false); r.str("decision") != "allow" {
		t.Fatalf("no claim: %s", r)
	}
	// a claim without evidence: blocked with a reason naming the command
	r := check("oc-gate", "All done — tests pass.", false)
	if r.str("decision") != "block" || !strings.Contains(r.str("reason"), "docket validate") || !strings.Contains(string(r), "tests_pass") {
		t.Fatalf("unsupported claim: %s", r)
	}
	// the loop cap: repeated blocks are let through once, with a system message naming the claims
	released := false
	for i := 0; i < 10 && !released; i++ {
		r = check("oc-gate", "All done — tests pass.", true)
		released = r.str("decision") == "allow"
	}
	if !released || !strings.Contains(r.str("system_message"), "UNSUPPORTED") {
		t.Fatalf("no release at the loop cap: %s", r)
	}
	l, _ := ledger.Open(e.h)
	entries, err := l.ReadVerified("oc-gate")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, en := range entries {
		kinds = append(kinds, string(en.Kind))
	}
	if len(entries) < 2 || entries[0].Kind != ledger.KindGateDecision {
		t.Fatalf("entries %v", kinds)
	}
	for _, tt := range []struct{ session, body, field string }{
		{"oc-gate", `{}`, "last_assistant_message"},
		{"oc-gate", `{"last_assistant_message":"done","cwd":"rel/dir"}`, "cwd"},
		{"oc-gate", `{"last_assistant_message":"done","cwd":"/a/../b"}`, "cwd"},
		{"oc-gate", `{"last_assistant_message":"done","stop_hook_active":"yes"}`, "stop_hook_active"},
		{".oc", `{"last_assistant_message":"done"}`, "session_id"},
	} {
		code, b := e.do("POST", "/v1/gate/"+tt.session+"/check", RoleRuntime, tt.body)
		var er struct{ Error Error }
		json.Unmarshal(b, &er)
		if code != 400 || er.Error.Field != tt.field {
			t.Errorf("%s: %d %s, want 400 naming %s", tt.body, code, b, tt.field)
		}
	}
}

// TestEvaluateOpenClawTools: OpenClaw's tool names reach the judge's
// classifier; a runtime that claims read_only for a merge or a public
// comment does not get it, and a tool it calls a shell is read as one.
func TestEvaluateOpenClawTools(t *testing.T) {
	e := newEnv(t)
	type ocCase struct {
		tool, kind, cmd string // cmd "path:P" is a read of P
		want            string // decision
		notClass        string
	}
	tests := []ocCase{
		{"exec", "shell", "gh pr merge 42 --squash", "escalate", "read_only"},
		{"exec", "function_tool", "gh pr merge 42 --squash", "escalate", "read_only"},
		{"run_command", "shell", "gh pr merge 42 --squash", "escalate", "read_only"},
		{"exec", "shell", "gh pr comment 42 --body LGTM", "", "read_only"},
		{"exec", "shell", "ls -la", "allow", ""},
		{"run_shell", "shell", "cat ~/.ssh/id_rsa", "block", ""},
		{"terminal", "shell", "cat ~/.aws/credentials", "block", ""},
	}
	// the plugin's token file sits among docket's keys: no OpenClaw tool may read it
	tokenFile := e.h.KeysDir() + "/openclaw.token"
	tests = append(tests, ocCase{"exec", "shell", "cat " + tokenFile, "block", ""}, ocCase{"read", "file", "path:" + tokenFile, "block", ""})
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%s %s %s", tt.tool, tt.kind, tt.cmd), func(t *testing.T) {
			input, _ := json.Marshal(map[string]string{"command": tt.cmd})
			if p, ok := strings.CutPrefix(tt.cmd, "path:"); ok {
				input, _ = json.Marshal(map[string]string{"path": p})
			}
			body := proposalBody(fmt.Sprintf("oc-%d", i), tt.tool, "read_only", "oc-flow", input)
			body = strings.Replace(body, `"kind":"api"`, `"kind":"`+tt.kind+`"`, 1)
			r := e.must(201, "POST", "/v1/judge/evaluate", RoleRuntime, body)
			if tt.want != "" && r.Get("decision").Str != tt.want {
				t.Fatalf("decision %s, want %s: %s", r.Get("decision").Str, tt.want, r.Raw)
			}
			if tt.notClass != "" && r.Get("risk_class").Str == tt.notClass {
				t.Fatalf("class %s kept: %s", tt.notClass, r.Raw)
			}
		})
	}
}

// jsonText is a JSON response with a field reader.
type jsonText string

func (g jsonText) str(path string) string {
	var m map[string]any
	json.Unmarshal([]byte(g), &m)
	s, _ := m[path].(string)
	return s
}
