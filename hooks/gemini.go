package hooks

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// Gemini CLI hooks (docs/hooks/reference.md of google-gemini/gemini-cli):
// every payload carries session_id, transcript_path, cwd, hook_event_name
// and timestamp. Tool names are Gemini's own (run_shell_command,
// write_file, replace, mcp__<server>__<tool>); docket keeps them as sent
// and the tools registry globs over them. Hook timeouts in settings.json
// are milliseconds.

// geminiNames maps Gemini CLI events onto docket's.
var geminiNames = map[string]string{
	"BeforeTool": PreToolUse,
	"AfterTool":  PostToolUse,
	"AfterAgent": Stop,
}

// GeminiEventName returns the Gemini CLI event that carries docket's
// normalized event, or "" when Gemini has none (PostToolUseFailure arrives
// as an AfterTool with an error; there is no SubagentStop).
func GeminiEventName(event string) string {
	for g, n := range geminiNames {
		if n == event {
			return g
		}
	}
	return ""
}

// DecodeGemini decodes a Gemini CLI hook payload. BeforeTool becomes
// PreToolUse, AfterTool PostToolUse (failed when tool_response.error is
// set), AfterAgent Stop with prompt_response as the last assistant
// message. Other events keep their Gemini name.
func DecodeGemini(payload []byte) (*Event, error) {
	if err := checkObject(payload); err != nil {
		return nil, err
	}
	p := gjson.ParseBytes(payload)
	if err := stringFields(p, "hook_event_name", "session_id", "transcript_path", "cwd",
		"tool_name", "prompt_response"); err != nil {
		return nil, err
	}
	e := &Event{
		Runtime:        Gemini,
		RawName:        p.Get("hook_event_name").String(),
		SessionID:      p.Get("session_id").String(),
		TranscriptPath: p.Get("transcript_path").String(),
		Cwd:            p.Get("cwd").String(),
		ToolName:       p.Get("tool_name").String(),
		StopHookActive: p.Get("stop_hook_active").Bool(),
	}
	if e.RawName == "" {
		return nil, &FieldError{Field: "hook_event_name", Reason: "missing"}
	}
	if e.SessionID == "" {
		return nil, &FieldError{Field: "session_id", Reason: "missing"}
	}
	e.Name = e.RawName
	if n, ok := geminiNames[e.RawName]; ok {
		e.Name = n
	}
	if v := p.Get("tool_input"); v.Exists() {
		e.ToolInput = json.RawMessage(v.Raw)
	}
	if v := p.Get("tool_response"); v.Exists() {
		e.ToolResponse = json.RawMessage(v.Raw)
		if er := v.Get("error"); er.Exists() && er.Type != gjson.Null && er.Raw != `""` && er.Type != gjson.False {
			e.Failed = true
			if er.Type == gjson.String {
				e.Error = er.String()
			} else if m := er.Get("message"); m.Type == gjson.String {
				e.Error = m.String()
			} else {
				e.Error = er.Raw
			}
		}
	}
	if v := p.Get("prompt_response"); v.Type == gjson.String {
		e.LastAssistantMessage = v.String()
		e.HasLastAssistantMessage = true
	}
	if e.IsTool() && e.ToolName == "" {
		return nil, &FieldError{Field: "tool_name", Reason: "missing"}
	}
	return e, nil
}

// EncodeGemini renders an Answer per the Gemini CLI hooks contract:
// exit 0 with JSON.
//
//   - PreToolUse (BeforeTool) deny: {"decision":"deny","reason"}; Gemini has
//     no "ask", so an escalation is a deny saying a human must approve.
//     A revised input goes in hookSpecificOutput.tool_input (merged over
//     the model's arguments) with decision "allow".
//   - Stop (AfterAgent) block: {"decision":"deny","reason"}, which makes
//     Gemini retry the turn with reason as the next prompt.
//   - PostToolUse (AfterTool) block: {"decision":"deny","reason"}, which
//     replaces the tool result the model sees.
func EncodeGemini(a Answer) ([]byte, int, error) {
	out := map[string]any{}
	switch a.Event {
	case PreToolUse:
		switch a.Decision {
		case Deny:
			out["decision"] = Deny
			out["reason"] = nonEmptyReason(a.Reason, "docket denied this tool call")
		case Ask:
			out["decision"] = Deny
			out["reason"] = askAsDeny(a.Reason)
		case Allow, "":
			if a.UpdatedInput != nil {
				out["decision"] = Allow
				out["hookSpecificOutput"] = map[string]any{"tool_input": a.UpdatedInput}
			} else if a.Decision == Allow {
				out["decision"] = Allow
			}
		default:
			return nil, 0, fmt.Errorf("encode answer: decision %q is not valid for Gemini %s", a.Decision, a.Event)
		}
	case Stop, SubagentStop, PostToolUse, PostToolUseFailure:
		if a.Decision == Block {
			out["decision"] = Deny
			out["reason"] = nonEmptyReason(a.Reason, "docket blocked: no reason was given")
		}
	default:
		return nil, 0, fmt.Errorf("encode answer: no Gemini CLI answer for event %q", a.Event)
	}
	if a.SystemMessage != "" {
		out["systemMessage"] = a.SystemMessage
	}
	return marshalAnswer(out)
}
