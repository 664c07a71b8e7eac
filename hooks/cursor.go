package hooks

import (
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"

	"github.com/tidwall/gjson"
)

// Cursor hooks (.cursor/hooks.json, version 1): every payload carries
// conversation_id, generation_id, hook_event_name (camelCase) and
// workspace_roots. docket maps:
//
//	beforeShellExecution {command, cwd}          → PreToolUse of "Bash" {"command"}
//	beforeMCPExecution   {tool_name, tool_input} → PreToolUse of tool_name (KindMCP)
//	preToolUse           {tool_name, tool_input} → PreToolUse
//	afterFileEdit        {file_path, edits}      → PostToolUse of "Edit" {"file_path","edits"}
//	afterShellExecution  {command, output}       → PostToolUse of "Bash"
//	afterMCPExecution    {tool_name, result_json}→ PostToolUse of tool_name (KindMCP)
//	postToolUse, postToolUseFailure              → PostToolUse, PostToolUseFailure
//	stop                 {status, loop_count}    → Stop
//	subagentStop                                 → SubagentStop
//	beforeSubmitPrompt   {prompt}                → UserPromptSubmit
//
// The conversation is the session (conversation_id) and the generation
// the turn (generation_id). Cursor's MCP events name the tool alone,
// its server only by url or command (cursorMCPServer names it from
// them), and send tool_input and result_json as JSON text, which is read
// as the JSON value it holds. Cursor's stop payload carries no final
// message; the gate falls back to transcript_path when Cursor sends one.
var cursorNames = table[string]{
	{"beforeShellExecution", PreToolUse},
	{"beforeMCPExecution", PreToolUse},
	{"preToolUse", PreToolUse},
	{"afterFileEdit", PostToolUse},
	{"afterShellExecution", PostToolUse},
	{"afterMCPExecution", PostToolUse},
	{"postToolUse", PostToolUse},
	{"postToolUseFailure", PostToolUseFailure},
	{"stop", Stop},
	{"subagentStop", SubagentStop},
	{"beforeSubmitPrompt", UserPromptSubmit},
}

// CursorShellTool and CursorEditTool are the tool names docket gives
// Cursor's shell and file-edit events, so the same policies apply to them
// as to Claude Code's Bash and Edit.
const (
	CursorShellTool = "Bash"
	CursorEditTool  = "Edit"
)

// DecodeCursor decodes a Cursor hook payload; see the mapping above.
func DecodeCursor(payload []byte) (*Event, error) {
	if err := checkObject(payload); err != nil {
		return nil, err
	}
	return decodeCursor(payload)
}

// decodeCursor is DecodeCursor on a payload checkObject accepted.
func decodeCursor(payload []byte) (*Event, error) {
	p := gjson.ParseBytes(payload)
	if err := stringFields(p, "hook_event_name", "conversation_id", "generation_id", "cwd",
		"command", "tool_name", "file_path", "transcript_path", "status", "prompt"); err != nil {
		return nil, err
	}
	e := &Event{
		Runtime:        Cursor,
		RawName:        p.Get("hook_event_name").String(),
		SessionID:      p.Get("conversation_id").String(),
		TurnID:         p.Get("generation_id").String(),
		TranscriptPath: p.Get("transcript_path").String(),
		Cwd:            p.Get("cwd").String(),
		Model:          p.Get("model").String(),
		ToolUseID:      p.Get("tool_use_id").String(),
		StopHookActive: p.Get("loop_count").Int() > 0,
	}
	if e.RawName == "" {
		return nil, &FieldError{Field: "hook_event_name", Reason: "missing"}
	}
	if e.SessionID == "" {
		return nil, &FieldError{Field: "conversation_id", Reason: "missing"}
	}
	if roots := p.Get("workspace_roots"); roots.Exists() && !roots.IsArray() {
		return nil, &FieldError{Field: "workspace_roots", Reason: "not an array"}
	} else if e.Cwd == "" {
		e.Cwd = roots.Get("0").String()
	}
	e.Name = e.RawName
	if n, ok := cursorNames.lookup(e.RawName); ok {
		e.Name = n
	}
	if v := p.Get("prompt"); e.Name == UserPromptSubmit && v.Type == gjson.String {
		e.Prompt, e.HasPrompt = v.String(), true
	}
	if d := p.Get("duration"); d.Type == gjson.Number {
		e.DurationMS = d.Int()
	}
	var err error
	switch e.RawName {
	case "beforeShellExecution", "afterShellExecution":
		cmd := p.Get("command")
		if cmd.Type != gjson.String {
			return nil, &FieldError{Field: "command", Reason: "missing"}
		}
		e.ToolName = CursorShellTool
		e.ToolInput, err = rawObject(map[string]any{"command": cmd.String()})
		if out := p.Get("output"); err == nil && out.Exists() {
			e.ToolResponse, err = rawObject(map[string]any{"output": json.RawMessage(out.Raw)})
		}
	case "afterFileEdit":
		fp := p.Get("file_path")
		if fp.Type != gjson.String || fp.String() == "" {
			return nil, &FieldError{Field: "file_path", Reason: "missing"}
		}
		edits := p.Get("edits")
		if edits.Exists() && !edits.IsArray() {
			return nil, &FieldError{Field: "edits", Reason: "not an array"}
		}
		in := map[string]any{"file_path": fp.String()}
		if edits.Exists() {
			in["edits"] = json.RawMessage(edits.Raw)
		}
		e.ToolName = CursorEditTool
		e.ToolInput, err = rawObject(in)
	default:
		e.ToolName = p.Get("tool_name").String()
		mcp := e.RawName == "beforeMCPExecution" || e.RawName == "afterMCPExecution"
		if v := p.Get("tool_input"); v.Exists() {
			e.ToolInput = json.RawMessage(v.Raw)
			if mcp {
				e.ToolInput = jsonText(v)
			}
		}
		for _, k := range []string{"tool_output", "tool_response", "result_json"} {
			if v := p.Get(k); v.Exists() {
				e.ToolResponse = json.RawMessage(v.Raw)
				if mcp {
					e.ToolResponse = jsonText(v)
				}
				break
			}
		}
		if v := p.Get("error"); v.Type == gjson.String {
			e.Error = v.String()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("decode cursor payload: %w", err)
	}
	if e.IsTool() && e.ToolName == "" {
		return nil, &FieldError{Field: "tool_name", Reason: "missing"}
	}
	if e.IsTool() {
		e.ToolKind = KindOf(e.ToolName)
		server := cursorMCPServer(p.Get("url").String(), p.Get("command").String())
		if (e.RawName == "beforeMCPExecution" || e.RawName == "afterMCPExecution") && server != "" {
			e.MCPServer, e.MCPTool = server, mcpPart(e.ToolName)
			e.ToolKind = KindMCP
		}
		classifyFailure(e)
	}
	return e, nil
}

// cursorMCPServer names the MCP server of a Cursor call, which Cursor
// gives only as the url or the command it reaches it by: the url's host
// ("mcp-linear-app" for https://mcp.linear.app/sse), else the base name of
// the command's last word that makes a name ("server-github" for npx -y
// @modelcontextprotocol/server-github); "" when neither makes one.
func cursorMCPServer(rawURL, command string) string {
	if u, err := url.Parse(rawURL); rawURL != "" && err == nil {
		return mcpPart(u.Hostname())
	}
	words := strings.Fields(command)
	for i := len(words) - 1; i >= 0; i-- {
		if s := mcpPart(path.Base(words[i])); s != "" {
			return s
		}
	}
	return ""
}

// mcpPart is s made a part of an MCP name: every character an MCP
// name cannot hold turned into '-'; "" unless it then starts with a
// letter.
func mcpPart(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	if !safeMCPPart(string(b)) {
		return ""
	}
	return string(b)
}

// jsonText is v, or, when v is a string holding a JSON value, that value.
func jsonText(v gjson.Result) json.RawMessage {
	if v.Type == gjson.String && gjson.Valid(v.Str) {
		return json.RawMessage(v.Str)
	}
	return json.RawMessage(v.Raw)
}

func rawObject(v map[string]any) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	return json.RawMessage(b), err
}

// EncodeCursor renders an Answer per Cursor's hooks contract: exit 0 with
// JSON.
//
//   - PreToolUse: {"permission":"allow"|"deny"|"ask"} with the reason as
//     agent_message and user_message (also written in the camelCase
//     spelling of Cursor 1.7). Cursor cannot rewrite a command, so a
//     revision (UpdatedInput) is a deny whose message carries the revised
//     input for the agent to retry with.
//   - Stop, SubagentStop block: {"followup_message": reason}, which Cursor
//     submits as the next user message (bounded by loop_limit).
//   - PostToolUse: Cursor's after-events are observe-only; nothing.
func EncodeCursor(a Answer) ([]byte, int, error) {
	out := map[string]any{}
	switch a.Event {
	case PreToolUse:
		perm, msg := a.Decision, a.Reason
		switch a.Decision {
		case Allow, Deny, Ask, "":
		default:
			return nil, 0, fmt.Errorf("encode answer: decision %q is not valid for Cursor %s", a.Decision, a.Event)
		}
		if a.UpdatedInput != nil {
			perm = Deny
			msg = "docket: revise the call and retry with this input: " + string(a.UpdatedInput)
			if a.Reason != "" {
				msg = a.Reason + "\n" + msg
			}
		}
		if perm == Deny {
			msg = nonEmptyReason(msg, "docket denied this tool call")
		}
		if perm != "" {
			out["permission"] = perm
			if msg != "" {
				out["agent_message"] = msg
				out["user_message"] = msg
				out["agentMessage"] = msg
				out["userMessage"] = msg
			}
		}
	case Stop, SubagentStop:
		if a.Decision == Block {
			out["followup_message"] = nonEmptyReason(a.Reason, "docket blocked the stop: no reason was given")
		}
	case PostToolUse, PostToolUseFailure:
	default:
		return nil, 0, fmt.Errorf("encode answer: no Cursor answer for event %q", a.Event)
	}
	return marshalAnswer(out)
}
