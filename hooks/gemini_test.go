package hooks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeGemini(t *testing.T) {
	tests := []struct {
		name, payload       string
		event, tool         string
		failed, hasLast     bool
		last, errText       string
		stopActive, hasResp bool
	}{
		{name: "BeforeTool", payload: geminiBeforeTool, event: PreToolUse, tool: "run_shell_command"},
		{name: "AfterTool", payload: geminiAfterTool, event: PostToolUse, tool: "run_shell_command", hasResp: true},
		{name: "AfterTool error", payload: geminiAfterFail, event: PostToolUse, tool: "write_file", failed: true, errText: "permission denied", hasResp: true},
		{name: "AfterAgent", payload: geminiAfterAgent, event: Stop, hasLast: true, last: "Done, all tests pass.", stopActive: true},
		{name: "SessionStart keeps its name", payload: geminiSession, event: "SessionStart"},
		{name: "AfterTool string error", event: PostToolUse, tool: "x", failed: true, errText: "boom", hasResp: true,
			payload: `{"session_id":"g","hook_event_name":"AfterTool","tool_name":"x","tool_response":{"error":"boom"}}`},
	}
	for _, tt := range tests {
		e, err := DecodeGemini([]byte(tt.payload))
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if e.Runtime != Gemini || e.Name != tt.event || e.ToolName != tt.tool || e.Failed != tt.failed ||
			e.HasLastAssistantMessage != tt.hasLast || e.LastAssistantMessage != tt.last ||
			e.Error != tt.errText || e.StopHookActive != tt.stopActive || (e.ToolResponse != nil) != tt.hasResp {
			t.Errorf("%s: decoded %+v", tt.name, e)
		}
	}
	e, _ := DecodeGemini([]byte(geminiBeforeTool))
	if e.SessionID != "g-1" || e.Cwd != "/work/p" || e.RawName != "BeforeTool" || !json.Valid(e.ToolInput) {
		t.Errorf("common fields: %+v", e)
	}
}

func TestDecodeGeminiErrors(t *testing.T) {
	tests := []struct{ name, payload, field string }{
		{"no event", `{"session_id":"s"}`, "hook_event_name"},
		{"no session", `{"hook_event_name":"AfterAgent"}`, "session_id"},
		{"no tool", `{"session_id":"s","hook_event_name":"BeforeTool"}`, "tool_name"},
		{"response not a string", `{"session_id":"s","hook_event_name":"AfterAgent","prompt_response":{}}`, "prompt_response"},
	}
	for _, tt := range tests {
		_, err := DecodeGemini([]byte(tt.payload))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: err = %v, want FieldError on %s", tt.name, err, tt.field)
		}
	}
}

func TestEncodeGemini(t *testing.T) {
	tests := []struct {
		name string
		a    Answer
		want string
	}{
		{"deny", Answer{Event: PreToolUse, Decision: Deny, Reason: "no"}, `{"decision":"deny","reason":"no"}`},
		{"deny blank", Answer{Event: PreToolUse, Decision: Deny}, `{"decision":"deny","reason":"docket denied this tool call"}`},
		{"ask fails closed", Answer{Event: PreToolUse, Decision: Ask}, `{"decision":"deny","reason":"docket: this call needs a human's approval first"}`},
		{"allow", Answer{Event: PreToolUse, Decision: Allow}, `{"decision":"allow"}`},
		{"no opinion", Answer{Event: PreToolUse}, ""},
		{"revise", Answer{Event: PreToolUse, Decision: Allow, UpdatedInput: json.RawMessage(`{"command":"go test ./..."}`)},
			`{"decision":"allow","hookSpecificOutput":{"tool_input":{"command":"go test ./..."}}}`},
		{"stop block retries", Answer{Event: Stop, Decision: Block, Reason: "prove it"}, `{"decision":"deny","reason":"prove it"}`},
		{"stop allow", Answer{Event: Stop}, ""},
		{"post tool", Answer{Event: PostToolUse}, ""},
	}
	for _, tt := range tests {
		out, code, err := Encode(Gemini, tt.a)
		if err != nil || code != 0 {
			t.Errorf("%s: code %d err %v", tt.name, code, err)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
	if _, _, err := EncodeGemini(Answer{Event: "Notification"}); err == nil {
		t.Error("EncodeGemini(Notification) succeeded")
	}
	if GeminiEventName(PreToolUse) != "BeforeTool" || GeminiEventName(Stop) != "AfterAgent" || GeminiEventName(SubagentStop) != "" {
		t.Error("GeminiEventName mapping wrong")
	}
}
