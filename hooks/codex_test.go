package hooks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestDecodeCodexRealPayloads(t *testing.T) {
	for name, p := range realPayloads(t, "codex") {
		e, err := DecodeCodex(p)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		wantName := strings.SplitN(name, "__", 2)[0]
		if e.Runtime != Codex || e.Name != wantName || e.RawName != wantName {
			t.Errorf("%s: runtime %q name %q raw %q", name, e.Runtime, e.Name, e.RawName)
		}
		if e.SessionID == "" {
			t.Errorf("%s: no session id", name)
		}
		if codexTurnEvent(e.Name) && e.TurnID == "" {
			t.Errorf("%s: no turn id", name)
		}
		if e.IsTool() && (e.ToolName == "" || e.ToolUseID == "" || e.ToolInput == nil) {
			t.Errorf("%s: tool event without tool name, id or input: %+v", name, e)
		}
		if e.Name == PostToolUse && e.ToolResponse == nil {
			t.Errorf("%s: PostToolUse without tool_response", name)
		}
		if e.IsStop() && !e.HasLastAssistantMessage {
			t.Errorf("%s: stop without last_assistant_message", name)
		}
	}
}

func TestDecodeCodexFields(t *testing.T) {
	p := realPayloads(t, "codex")
	e, err := DecodeCodex(p["PreToolUse__gptme-contrib-codex__001.json"])
	if err != nil {
		t.Fatal(err)
	}
	want := Event{
		Runtime: Codex, Name: PreToolUse, RawName: PreToolUse,
		SessionID:      "019f0bd1-a96e-7802-aeba-f7f8e1ec18f1",
		TurnID:         "019f12ec-91d4-7c12-b9fb-b3b59bd75ca5",
		AgentID:        "019f12ec-9178-75f2-8cf1-3ec35b5dfc2a",
		AgentType:      "explorer",
		Cwd:            "/home/skogix/.local/src/gptme-contrib",
		Model:          "gpt-5.5",
		PermissionMode: "bypassPermissions",
		ToolName:       "Bash",
		ToolUseID:      "exec-a1ec5b3e-c538-437d-bea9-4ee21497923a",
	}
	got := *e
	got.ToolInput, got.TranscriptPath = nil, ""
	if got.Runtime != want.Runtime || got.Name != want.Name || got.SessionID != want.SessionID ||
		got.TurnID != want.TurnID || got.AgentID != want.AgentID || got.AgentType != want.AgentType ||
		got.Cwd != want.Cwd || got.Model != want.Model || got.PermissionMode != want.PermissionMode ||
		got.ToolName != want.ToolName || got.ToolUseID != want.ToolUseID {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, want)
	}
	var in struct{ Command string }
	if err := json.Unmarshal(e.ToolInput, &in); err != nil || !strings.HasPrefix(in.Command, "git log") {
		t.Errorf("tool_input = %s (%v)", e.ToolInput, err)
	}

	// A null transcript_path (Codex's ephemeral sessions) decodes as "".
	s, err := DecodeCodex(p["Stop__gptme-contrib-codex__002.json"])
	if err != nil {
		t.Fatal(err)
	}
	if s.TranscriptPath != "" || s.Name != Stop || !strings.Contains(s.LastAssistantMessage, "Normalize codex usage") {
		t.Errorf("stop: %+v", s)
	}
}

func TestDecodeCodexErrors(t *testing.T) {
	tests := []struct {
		name, payload, field string
	}{
		{"no event", `{"session_id":"s","turn_id":"t"}`, "hook_event_name"},
		{"no session", `{"hook_event_name":"Stop","turn_id":"t"}`, "session_id"},
		{"no turn on a tool event", `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash"}`, "turn_id"},
		{"no tool name", `{"session_id":"s","turn_id":"t","hook_event_name":"PostToolUse"}`, "tool_name"},
		{"session not a string", `{"session_id":7,"turn_id":"t","hook_event_name":"Stop"}`, "session_id"},
	}
	for _, tt := range tests {
		_, err := DecodeCodex([]byte(tt.payload))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field {
			t.Errorf("%s: err = %v, want a FieldError on %s", tt.name, err, tt.field)
		}
	}
	for _, bad := range []string{"", "null", "[]", `{"a":`, "\xff"} {
		if _, err := DecodeCodex([]byte(bad)); err == nil {
			t.Errorf("DecodeCodex(%q) succeeded", bad)
		}
	}
	// SessionStart carries no turn_id and is still valid.
	if _, err := DecodeCodex([]byte(`{"session_id":"s","hook_event_name":"SessionStart","transcript_path":null}`)); err != nil {
		t.Errorf("SessionStart without turn_id: %v", err)
	}
}

func TestEncodeCodex(t *testing.T) {
	tests := []struct {
		name string
		a    Answer
		want string // "" for no output
	}{
		{"deny", Answer{Event: PreToolUse, Decision: Deny, Reason: "touches the ledger"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"touches the ledger"}}`},
		{"deny without reason gets one", Answer{Event: PreToolUse, Decision: Deny},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"docket denied this tool call"}}`},
		{"ask fails closed", Answer{Event: PreToolUse, Decision: Ask, Reason: "pushes to main"},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"docket: needs a human's approval first: pushes to main"}}`},
		{"bare allow says nothing", Answer{Event: PreToolUse, Decision: Allow, Reason: "fine"}, ""},
		{"revise", Answer{Event: PreToolUse, Decision: Allow, UpdatedInput: json.RawMessage(`{"command":"ls"}`)},
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"ls"}}}`},
		{"stop block", Answer{Event: Stop, Decision: Block, Reason: "claim done unsupported"},
			`{"decision":"block","reason":"claim done unsupported"}`},
		{"stop block blank reason", Answer{Event: SubagentStop, Decision: Block, Reason: "  "},
			`{"decision":"block","reason":"docket blocked: no reason was given"}`},
		{"stop allow", Answer{Event: Stop}, ""},
		{"system message", Answer{Event: Stop, SystemMessage: "hi"}, `{"systemMessage":"hi"}`},
	}
	for _, tt := range tests {
		out, code, err := Encode(Codex, tt.a)
		if err != nil || code != 0 {
			t.Errorf("%s: code %d err %v", tt.name, code, err)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
	for _, a := range []Answer{{Event: "SessionStart"}, {Event: PreToolUse, Decision: Block}} {
		if _, _, err := EncodeCodex(a); err == nil {
			t.Errorf("EncodeCodex(%+v) succeeded", a)
		}
	}
}
