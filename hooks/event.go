// Package hooks is the only package that knows a runtime's hook JSON. It
// decodes each runtime's stdin payload into one Event and encodes docket's
// answers (Answer) back into that runtime's stdout and exit code. The
// ledger, gate and judge see Events and Answers only.
package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Runtime names an agent runtime whose hooks docket speaks.
type Runtime string

const (
	Claude Runtime = "claude"
	Codex  Runtime = "codex"
	Gemini Runtime = "gemini"
	Cursor Runtime = "cursor"
)

// Normalized event names. Each adapter maps its runtime's names onto these.
const (
	PreToolUse         = "PreToolUse"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	Stop               = "Stop"
	SubagentStop       = "SubagentStop"
	// UserPromptSubmit is a user's prompt, before the agent sees it
	// (Claude Code and Codex UserPromptSubmit, Gemini BeforeAgent, Cursor
	// beforeSubmitPrompt): the origin of what the agent does next.
	UserPromptSubmit = "UserPromptSubmit"
)

// MaxPayload bounds how much of stdin a hook reads. Larger payloads are
// rejected with ErrPayloadTooLarge rather than truncated.
const MaxPayload = 64 << 20

// Event is one hook invocation, whatever runtime sent it.
type Event struct {
	Runtime Runtime
	// Name is the normalized event name; RawName is what the runtime said.
	Name    string
	RawName string

	SessionID      string
	TurnID         string // Codex turn_id; Cursor generation_id
	TranscriptPath string
	Cwd            string
	PermissionMode string
	Model          string

	// Subagent context: set on tool events fired inside a subagent and on
	// SubagentStop.
	AgentID             string
	AgentType           string
	AgentTranscriptPath string

	// Tool events.
	ToolName string
	// ToolKind is what the tool does, in docket's vocabulary (KindOf the
	// tool name); "" for events that are not about a tool.
	ToolKind ToolKind
	// MCPServer and MCPTool name the MCP server and tool a call goes to
	// where the runtime says so apart from the tool's name (Gemini CLI's
	// mcp_context); "" otherwise. See MCPName.
	MCPServer, MCPTool string
	ToolInput          json.RawMessage // as sent; nil when absent
	ToolResponse       json.RawMessage // as sent; nil when absent
	ToolUseID          string
	// ToolUseIDDerived is set when the runtime sent no tool call id and
	// ToolUseID was derived from the call (Gemini CLI; see DecodeGemini).
	ToolUseIDDerived bool
	DurationMS       int64

	// Failure: set for PostToolUseFailure, an error result, a non-zero
	// exit, or an interrupted call.
	Failed      bool
	Error       string
	Interrupted bool
	ExitCode    *int
	// ExitUnknown is set on a shell call's result that carries no exit
	// status (Codex's Bash tool_response is the output only); ResolveExit
	// may find it elsewhere. Such a call is not known to have succeeded.
	ExitUnknown bool

	// Prompt is the user's prompt (UserPromptSubmit); HasPrompt says the
	// payload carried one.
	Prompt    string
	HasPrompt bool

	// Stop events.
	StopHookActive bool
	// LastAssistantMessage is the final message when the runtime sent it.
	LastAssistantMessage    string
	HasLastAssistantMessage bool
}

// IsTool reports whether the event is about a tool call.
func (e *Event) IsTool() bool {
	switch e.Name {
	case PreToolUse, PostToolUse, PostToolUseFailure:
		return true
	}
	return false
}

// IsStop reports whether the event ends a turn.
func (e *Event) IsStop() bool { return e.Name == Stop || e.Name == SubagentStop }

var (
	// ErrPayloadTooLarge is returned for stdin over MaxPayload.
	ErrPayloadTooLarge = errors.New("hook payload exceeds 64 MiB")
	errNotObject       = errors.New("hook payload is not a JSON object")
)

// FieldError reports a missing or malformed field in a payload.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("hook payload: %s: %s", e.Field, e.Reason) }
