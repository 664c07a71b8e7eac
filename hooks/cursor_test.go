package hooks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeCursor(t *testing.T) {
	tests := []struct {
		name, payload string
		event, tool   string
		input         string // expected canonical tool_input, "" to skip
		cwd           string
		stopActive    bool
	}{
		{"shell", cursorShell, PreToolUse, "Bash", `{"command":"rm -rf build"}`, "/work/p/sub", false},
		{"mcp", cursorMCP, PreToolUse, "create_issue", `{"title":"x"}`, "/work/p", false},
		// Cursor's documented form: the arguments as JSON text
		{"mcp, arguments as text", `{"conversation_id":"c","hook_event_name":"beforeMCPExecution","tool_name":"create_issue","tool_input":"{\"title\":\"x\"}","command":"npx server"}`,
			PreToolUse, "create_issue", `{"title":"x"}`, "", false},
		{"edit", cursorEdit, PostToolUse, "Edit", `{"edits":[{"old_string":"a","new_string":"b"}],"file_path":"/work/p/main.go"}`, "/work/p", false},
		{"stop", cursorStop, Stop, "", "", "/work/p", true},
		{"after shell", `{"conversation_id":"c","hook_event_name":"afterShellExecution","command":"make","output":"ok","duration":12}`,
			PostToolUse, "Bash", `{"command":"make"}`, "", false},
		{"subagent stop", `{"conversation_id":"c","hook_event_name":"subagentStop"}`, SubagentStop, "", "", "", false},
		{"prompt", `{"conversation_id":"c","hook_event_name":"beforeSubmitPrompt","prompt":"hi"}`, UserPromptSubmit, "", "", "", false},
		{"unknown event kept", `{"conversation_id":"c","hook_event_name":"afterAgentThought","text":"hi"}`, "afterAgentThought", "", "", "", false},
	}
	for _, tt := range tests {
		e, err := DecodeCursor([]byte(tt.payload))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if e.Runtime != Cursor || e.Name != tt.event || e.ToolName != tt.tool || e.Cwd != tt.cwd ||
			e.StopHookActive != tt.stopActive || e.SessionID == "" {
			t.Errorf("%s: decoded %+v", tt.name, e)
		}
		if tt.input != "" {
			var got, want any
			json.Unmarshal(e.ToolInput, &got)
			json.Unmarshal([]byte(tt.input), &want)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(want)
			if string(gb) != string(wb) {
				t.Errorf("%s: tool_input %s, want %s", tt.name, e.ToolInput, tt.input)
			}
		}
	}
	e, _ := DecodeCursor([]byte(cursorShell))
	if e.SessionID != "c-1" || e.TurnID != "gen-1" || e.RawName != "beforeShellExecution" {
		t.Errorf("ids: %+v", e)
	}
}

// Cursor's MCP events name the tool alone, and the server only by the
// url or command it is reached by: the call is an MCP server's, named
// from those. Arguments and result sent as JSON text are read as JSON;
// text that is not JSON stays text.
func TestDecodeCursorMCP(t *testing.T) {
	for _, tc := range []struct {
		name, payload, mcp, input, response string
	}{
		{"by url", cursorMCP, "mcp__mcp-example__create_issue", `{"title":"x"}`, ""},
		{"by command", `{"conversation_id":"c","hook_event_name":"afterMCPExecution","tool_name":"search","tool_input":"{\"q\":\"go\"}","result_json":"{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}","command":"npx -y @modelcontextprotocol/server-github","duration":5}`,
			"mcp__server-github__search", `{"q":"go"}`, `{"content":[{"type":"text","text":"ok"}]}`},
		{"a command ending in a number", `{"conversation_id":"c","hook_event_name":"beforeMCPExecution","tool_name":"get.page","tool_input":{},"command":"node ./srv/web.js --port 3000"}`,
			"mcp__web-js__get-page", `{}`, ""},
		{"text that is not JSON", `{"conversation_id":"c","hook_event_name":"afterMCPExecution","tool_name":"search","tool_input":"{","result_json":"plain","url":"http://127.0.0.1:9/mcp"}`,
			"", `"{"`, `"plain"`},
		{"no server named", `{"conversation_id":"c","hook_event_name":"beforeMCPExecution","tool_name":"search","tool_input":{}}`, "", `{}`, ""},
	} {
		e, err := DecodeCursor([]byte(tc.payload))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		wantKind := KindMCP
		if tc.mcp == "" {
			wantKind = KindOther
		}
		if e.MCPName() != tc.mcp || e.Kind() != wantKind {
			t.Errorf("%s: MCP name %q kind %q, want %q %q", tc.name, e.MCPName(), e.Kind(), tc.mcp, wantKind)
		}
		if string(e.ToolInput) != tc.input || tc.response != "" && string(e.ToolResponse) != tc.response {
			t.Errorf("%s: input %s response %s, want %s and %s", tc.name, e.ToolInput, e.ToolResponse, tc.input, tc.response)
		}
	}
}

func TestDecodeCursorErrors(t *testing.T) {
	tests := []struct{ name, payload, field string }{
		{"no event", `{"conversation_id":"c"}`, "hook_event_name"},
		{"no conversation", `{"hook_event_name":"stop"}`, "conversation_id"},
		{"shell without command", `{"conversation_id":"c","hook_event_name":"beforeShellExecution"}`, "command"},
		{"edit without path", `{"conversation_id":"c","hook_event_name":"afterFileEdit","edits":[]}`, "file_path"},
		{"edits not array", `{"conversation_id":"c","hook_event_name":"afterFileEdit","file_path":"/x","edits":{}}`, "edits"},
		{"mcp without tool", `{"conversation_id":"c","hook_event_name":"beforeMCPExecution"}`, "tool_name"},
		{"roots not array", `{"conversation_id":"c","hook_event_name":"stop","workspace_roots":"/x"}`, "workspace_roots"},
		{"command not string", `{"conversation_id":"c","hook_event_name":"beforeShellExecution","command":["ls"]}`, "command"},
	}
	for _, tt := range tests {
		_, err := DecodeCursor([]byte(tt.payload))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: err = %v, want FieldError on %s", tt.name, err, tt.field)
		}
	}
}

func TestEncodeCursor(t *testing.T) {
	tests := []struct {
		name string
		a    Answer
		want string
	}{
		{"deny", Answer{Event: PreToolUse, Decision: Deny, Reason: "no"},
			`{"agentMessage":"no","agent_message":"no","permission":"deny","userMessage":"no","user_message":"no"}`},
		{"ask", Answer{Event: PreToolUse, Decision: Ask, Reason: "push"},
			`{"agentMessage":"push","agent_message":"push","permission":"ask","userMessage":"push","user_message":"push"}`},
		{"allow", Answer{Event: PreToolUse, Decision: Allow}, `{"permission":"allow"}`},
		{"no opinion", Answer{Event: PreToolUse}, ""},
		{"stop block", Answer{Event: Stop, Decision: Block, Reason: "run docket validate"}, `{"followup_message":"run docket validate"}`},
		{"stop allow", Answer{Event: Stop}, ""},
		{"after edit is observe-only", Answer{Event: PostToolUse, Decision: Block, Reason: "x"}, ""},
	}
	for _, tt := range tests {
		out, code, err := Encode(Cursor, tt.a)
		if err != nil || code != 0 {
			t.Errorf("%s: code %d err %v", tt.name, code, err)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
	out, _, err := EncodeCursor(Answer{Event: PreToolUse, Decision: Allow, UpdatedInput: json.RawMessage(`{"command":"ls"}`)})
	if err != nil || !strings.Contains(string(out), `"permission":"deny"`) || !strings.Contains(string(out), `{\"command\":\"ls\"}`) {
		t.Errorf("revise on Cursor = %s, %v; want a deny carrying the revised input", out, err)
	}
	if _, _, err := EncodeCursor(Answer{Event: "sessionStart"}); err == nil {
		t.Error("EncodeCursor(sessionStart) succeeded")
	}
}
