package hooks

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/docket/docket/internal/canonjson"
	"github.com/tidwall/gjson"
)

// Gemini CLI hooks (docs/hooks/reference.md of google-gemini/gemini-cli):
// every payload carries session_id, transcript_path, cwd, hook_event_name
// and timestamp. Tool names are Gemini's own (run_shell_command,
// write_file, replace, mcp_<server>_<tool>); docket keeps them as sent
// and maps them onto its kinds (tools.go). Hook timeouts in settings.json
// are milliseconds.
//
// What Gemini CLI 0.61 sends that the other runtimes do not (see
// testdata/hooks/captured):
//
//   - no tool call id. docket derives one (DerivedToolUseID) from the
//     session, the tool name and the canonical digest of its input, so a
//     BeforeTool and the AfterTool of the same call carry the same id.
//     Two identical calls in one session share it too; Gemini runs a
//     turn's calls one after another, so consumers pair the n-th AfterTool
//     of an id with the n-th BeforeTool of that id.
//   - an MCP server's tool is named mcp_<server>_<tool>, which cannot be
//     split where either part holds an underscore; mcp_context names the
//     server and the tool (server_name, tool_name). docket takes the call
//     as that server's (KindMCP, Event.MCPName).
//   - AfterTool's tool_response is {llmContent, returnDisplay}; a shell
//     call's exit status is only a line of llmContent ("Exit Code: 2"),
//     present when it is not 0, beside "Signal: …" and "Error: …" lines.

// geminiNames maps Gemini CLI events onto docket's.
var geminiNames = table[string]{
	{"BeforeTool", PreToolUse},
	{"AfterTool", PostToolUse},
	{"AfterAgent", Stop},
	// BeforeAgent carries the user's prompt before the agent plans.
	{"BeforeAgent", UserPromptSubmit},
}

// GeminiEventName returns the Gemini CLI event that carries docket's
// normalized event, or "" when Gemini has none (PostToolUseFailure arrives
// as an AfterTool with an error; there is no SubagentStop).
func GeminiEventName(event string) string {
	for _, p := range geminiNames {
		if p.val == event {
			return p.key
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
	return decodeGemini(payload)
}

// decodeGemini is DecodeGemini on a payload checkObject accepted.
func decodeGemini(payload []byte) (*Event, error) {
	p := gjson.ParseBytes(payload)
	if err := stringFields(p, "hook_event_name", "session_id", "transcript_path", "cwd",
		"tool_name", "prompt_response", "prompt"); err != nil {
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
	if n, ok := geminiNames.lookup(e.RawName); ok {
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
	if e.ToolName != "" {
		e.ToolKind = KindOf(e.ToolName)
		// an MCP server's tool, whatever its name (mcp_<server>_<tool>)
		mc := p.Get("mcp_context")
		server, tool := mc.Get("server_name"), mc.Get("tool_name")
		if mc.IsObject() && server.Type == gjson.String && tool.Type == gjson.String && server.Str != "" && tool.Str != "" {
			e.MCPServer, e.MCPTool = server.Str, tool.Str
			e.ToolKind = KindMCP
		}
	}
	if e.IsTool() && e.ToolName != "" {
		e.ToolUseID = DerivedToolUseID(e.SessionID, e.ToolName, e.ToolInput)
		e.ToolUseIDDerived = true
	}
	if e.Name == PostToolUse && e.ToolKind == KindShell && !e.Failed {
		geminiShellStatus(e)
	}
	if v := p.Get("prompt_response"); v.Type == gjson.String {
		e.LastAssistantMessage = v.String()
		e.HasLastAssistantMessage = true
	}
	if v := p.Get("prompt"); e.Name == UserPromptSubmit && v.Type == gjson.String {
		e.Prompt, e.HasPrompt = v.String(), true
	}
	if e.IsTool() && e.ToolName == "" {
		return nil, &FieldError{Field: "tool_name", Reason: "missing"}
	}
	return e, nil
}

// DerivedToolUseID is the tool call id docket gives a Gemini CLI call:
// "gemini_" and 24 hex digits of SHA-256 over the session, the tool name
// and the canonical JSON of the input (the raw input when it is not
// JSON), NUL-separated.
func DerivedToolUseID(session, tool string, input json.RawMessage) string {
	in := []byte(input)
	if c, err := canonjson.Canonical(input); err == nil {
		in = c
	}
	d := canonjson.SHA256([]byte(session + "\x00" + tool + "\x00" + string(in)))
	return "gemini_" + strings.TrimPrefix(d, "sha256:")[:24]
}

// geminiShellStatus reads a run_shell_command result's status from its
// llmContent: the last "Exit Code: N" line (absent when N is 0) and the
// last "Signal: S" line (the command was killed). A result with neither
// leaves the exit code unknown.
func geminiShellStatus(e *Event) {
	c := gjson.GetBytes(e.ToolResponse, "llmContent")
	if c.Type != gjson.String {
		return
	}
	s := c.String()
	if m, ok := lastLine(s, geminiExitCode); ok {
		if code, err := strconv.Atoi(m); err == nil {
			e.ExitCode = &code
			if code != 0 {
				e.Failed = true
			}
		}
	}
	if m, ok := lastLine(s, geminiSignal); ok && m != "(none)" {
		e.Failed, e.Interrupted = true, true
	}
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
