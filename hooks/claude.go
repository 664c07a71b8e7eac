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
	return decodeClaude(payload)
}

// decodeClaude is DecodeClaude on a payload checkObject accepted.
func decodeClaude(payload []byte) (*Event, error) {
	e, err := decodeClaudeShape(gjson.ParseBytes(payload), Claude)
	if err != nil {
		return nil, err
	}
	classifyFailure(e)
	return e, nil
}

// claudeFields are the members decodeClaudeShape reads, indexed by the
// cf constants.
var claudeFields = [...]string{
	cfHookEventName: "hook_event_name", cfSessionID: "session_id", cfTurnID: "turn_id",
	cfTranscriptPath: "transcript_path", cfCwd: "cwd", cfPermissionMode: "permission_mode",
	cfModel: "model", cfAgentID: "agent_id", cfAgentType: "agent_type",
	cfAgentTranscriptPath: "agent_transcript_path", cfToolName: "tool_name",
	cfToolUseID: "tool_use_id", cfDurationMS: "duration_ms", cfError: "error",
	cfIsInterrupt: "is_interrupt", cfStopHookActive: "stop_hook_active",
	cfLastAssistantMessage: "last_assistant_message", cfToolInput: "tool_input",
	cfToolResponse: "tool_response", cfPrompt: "prompt",
}

const (
	cfHookEventName = iota
	cfSessionID
	cfTurnID
	cfTranscriptPath
	cfCwd
	cfPermissionMode
	cfModel
	cfAgentID
	cfAgentType
	cfAgentTranscriptPath
	cfToolName
	cfToolUseID
	cfDurationMS
	cfError
	cfIsInterrupt
	cfStopHookActive
	cfLastAssistantMessage
	cfToolInput
	cfToolResponse
	cfPrompt
)

// decodeClaudeShape reads the fields of Claude Code's payload shape, which
// Codex CLI shares, and checks the two every event must have.
func decodeClaudeShape(p gjson.Result, rt Runtime) (*Event, error) {
	var f [len(claudeFields)]gjson.Result
	topFields(p, claudeFields[:], f[:])
	e := &Event{
		Runtime:                 rt,
		RawName:                 f[cfHookEventName].String(),
		SessionID:               f[cfSessionID].String(),
		TurnID:                  f[cfTurnID].String(),
		TranscriptPath:          f[cfTranscriptPath].String(),
		Cwd:                     f[cfCwd].String(),
		PermissionMode:          f[cfPermissionMode].String(),
		Model:                   f[cfModel].String(),
		AgentID:                 f[cfAgentID].String(),
		AgentType:               f[cfAgentType].String(),
		AgentTranscriptPath:     f[cfAgentTranscriptPath].String(),
		ToolName:                f[cfToolName].String(),
		ToolUseID:               f[cfToolUseID].String(),
		DurationMS:              f[cfDurationMS].Int(),
		Error:                   f[cfError].String(),
		Interrupted:             f[cfIsInterrupt].Bool(),
		StopHookActive:          f[cfStopHookActive].Bool(),
		LastAssistantMessage:    f[cfLastAssistantMessage].String(),
		HasLastAssistantMessage: f[cfLastAssistantMessage].Type == gjson.String,
	}
	e.Name = e.RawName
	if e.ToolName != "" {
		e.ToolKind = KindOf(e.ToolName)
	}
	if v := f[cfToolInput]; v.Exists() {
		e.ToolInput = json.RawMessage(v.Raw)
	}
	if v := f[cfToolResponse]; v.Exists() {
		e.ToolResponse = json.RawMessage(v.Raw)
	}
	if v := f[cfPrompt]; e.Name == UserPromptSubmit && v.Type == gjson.String {
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
// gives: the failure event itself, an is_error flag (isError: an MCP
// tool's result, as Codex forwards it), an explicit exit
// code, an interrupted flag, or a string result that starts with its exit
// code: "Error: Exit code N" (Claude Code's failed Bash call) and "Exit
// code: N" (Codex's apply_patch and shell output), with or without the
// colon (claudeExitCode).
func classifyFailure(e *Event) {
	if e.Name == PostToolUseFailure {
		e.Failed = true
	}
	r := gjson.ParseBytes(e.ToolResponse)
	if r.Get("is_error").Bool() || r.Get("isError").Bool() || r.Get("interrupted").Bool() {
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
