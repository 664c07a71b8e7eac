package hooks

import (
	"encoding/json"
	"strconv"

	"github.com/tidwall/gjson"
)

// DecodeClaude decodes a Claude Code hook payload. Unknown fields are
// ignored; the payload must be one JSON object with a session_id and a
// hook_event_name.
func DecodeClaude(payload []byte) (*Event, error) {
	if err := checkObject(payload); err != nil {
		return nil, err
	}
	e, err := decodeClaudeShape(gjson.ParseBytes(payload), Claude)
	if err != nil {
		return nil, err
	}
	classifyFailure(e)
	return e, nil
}

// decodeClaudeShape reads the fields of Claude Code's payload shape, which
// Codex CLI shares, and checks the two every event must have.
func decodeClaudeShape(p gjson.Result, rt Runtime) (*Event, error) {
	e := &Event{
		Runtime:                 rt,
		RawName:                 p.Get("hook_event_name").String(),
		SessionID:               p.Get("session_id").String(),
		TurnID:                  p.Get("turn_id").String(),
		TranscriptPath:          p.Get("transcript_path").String(),
		Cwd:                     p.Get("cwd").String(),
		PermissionMode:          p.Get("permission_mode").String(),
		Model:                   p.Get("model").String(),
		AgentID:                 p.Get("agent_id").String(),
		AgentType:               p.Get("agent_type").String(),
		AgentTranscriptPath:     p.Get("agent_transcript_path").String(),
		ToolName:                p.Get("tool_name").String(),
		ToolUseID:               p.Get("tool_use_id").String(),
		DurationMS:              p.Get("duration_ms").Int(),
		Error:                   p.Get("error").String(),
		Interrupted:             p.Get("is_interrupt").Bool(),
		StopHookActive:          p.Get("stop_hook_active").Bool(),
		LastAssistantMessage:    p.Get("last_assistant_message").String(),
		HasLastAssistantMessage: p.Get("last_assistant_message").Type == gjson.String,
	}
	e.Name = e.RawName
	if e.ToolName != "" {
		e.ToolKind = KindOf(e.ToolName)
	}
	if v := p.Get("tool_input"); v.Exists() {
		e.ToolInput = json.RawMessage(v.Raw)
	}
	if v := p.Get("tool_response"); v.Exists() {
		e.ToolResponse = json.RawMessage(v.Raw)
	}
	if v := p.Get("prompt"); e.Name == UserPromptSubmit && v.Type == gjson.String {
		e.Prompt, e.HasPrompt = v.String(), true
	}
	if e.RawName == "" {
		return nil, &FieldError{Field: "hook_event_name", Reason: "missing"}
	}
	if e.SessionID == "" {
		return nil, &FieldError{Field: "session_id", Reason: "missing"}
	}
	return e, nil
}

// classifyFailure marks an event failed from whatever evidence its runtime
// gives: the failure event itself, an is_error flag, an explicit exit
// code, an interrupted flag, or a string result that starts with its exit
// code: "Error: Exit code N" (Claude Code's failed Bash call) and "Exit
// code: N" (Codex's apply_patch and shell output), with or without the
// colon (claudeExitCode).
func classifyFailure(e *Event) {
	if e.Name == PostToolUseFailure {
		e.Failed = true
	}
	r := gjson.ParseBytes(e.ToolResponse)
	if r.Get("is_error").Bool() || r.Get("interrupted").Bool() {
		e.Failed = true
	}
	if r.Get("interrupted").Bool() {
		e.Interrupted = true
	}
	for _, k := range []string{"exit_code", "exitCode", "returncode", "metadata.exit_code"} {
		if v := r.Get(k); v.Type == gjson.Number {
			code := int(v.Int())
			e.ExitCode = &code
		}
	}
	if r.Type == gjson.String {
		if m, ok := claudeExitCode(r.String()); ok {
			code, _ := strconv.Atoi(m)
			e.ExitCode = &code
		}
	}
	if e.ExitCode != nil && *e.ExitCode != 0 {
		e.Failed = true
	}
	if e.Interrupted {
		e.Failed = true
	}
}
