package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// Codex CLI hooks (codex-rs/hooks) speak Claude Code's shape with three
// differences that matter here:
//
//   - every turn-scoped payload carries a turn_id, and transcript_path may
//     be null;
//   - a deny or block without a non-empty reason is rejected as invalid
//     (the hook "failed" and the action proceeds), as are
//     permissionDecision "allow" without updatedInput and "ask";
//   - exit 2 blocks only when stderr is non-empty; other non-zero exits
//     fail open.
//
// There is no PostToolUseFailure event: a failed tool call arrives as a
// PostToolUse whose tool_response says so.

// codexTurnEvent reports whether the event's payloads always carry a
// turn_id.
func codexTurnEvent(name string) bool {
	switch name {
	case PreToolUse, PostToolUse, Stop, SubagentStop, "UserPromptSubmit", "PermissionRequest":
		return true
	}
	return false
}

// DecodeCodex decodes a Codex CLI hook payload. Unknown fields are
// ignored; the payload must be one JSON object with a session_id and a
// hook_event_name, and turn-scoped events (tool events, Stop,
// SubagentStop) must carry a turn_id.
func DecodeCodex(payload []byte) (*Event, error) {
	if err := checkObject(payload); err != nil {
		return nil, err
	}
	return decodeCodex(payload)
}

// decodeCodex is DecodeCodex on a payload checkObject accepted.
func decodeCodex(payload []byte) (*Event, error) {
	p := gjson.ParseBytes(payload)
	if err := stringFields(p, "hook_event_name", "session_id", "turn_id", "transcript_path",
		"cwd", "tool_name", "tool_use_id", "last_assistant_message", "agent_id", "prompt"); err != nil {
		return nil, err
	}
	e, err := decodeClaudeShape(p, Codex)
	if err != nil {
		return nil, err
	}
	if codexTurnEvent(e.Name) && e.TurnID == "" {
		return nil, &FieldError{Field: "turn_id", Reason: "missing on a Codex " + e.Name + " payload"}
	}
	if e.IsTool() && e.ToolName == "" {
		return nil, &FieldError{Field: "tool_name", Reason: "missing"}
	}
	classifyFailure(e)
	if e.Name == PostToolUse && e.Kind() == KindShell && e.ExitCode == nil && !e.Failed {
		// Codex's Bash tool_response is the command's output and nothing
		// else: success and failure look alike (ResolveExit looks in the
		// session's rollout).
		e.ExitUnknown = true
	}
	return e, nil
}

// codexDefaultDeny is the reason given when docket denies without one:
// Codex ignores a deny whose reason is empty.
const codexDefaultDeny = "docket denied this tool call"

// EncodeCodex renders an Answer per the Codex CLI hooks contract. It
// always exits 0 with JSON, the channel Codex parses most strictly and
// reports best; every deny and block carries a non-empty reason.
//
//   - PreToolUse deny: hookSpecificOutput.permissionDecision "deny" with
//     permissionDecisionReason.
//   - PreToolUse ask: Codex has no "ask", so docket fails closed: a deny
//     whose reason says a human must approve the call first.
//   - PreToolUse allow: nothing, unless the input is revised, then
//     permissionDecision "allow" with updatedInput (Codex rejects a bare
//     allow).
//   - Stop, SubagentStop, PostToolUse block: {"decision":"block","reason"}.
func EncodeCodex(a Answer) ([]byte, int, error) {
	out := map[string]any{}
	switch a.Event {
	case PreToolUse:
		hso := map[string]any{"hookEventName": PreToolUse}
		switch a.Decision {
		case Deny:
			hso["permissionDecision"] = Deny
			hso["permissionDecisionReason"] = nonEmptyReason(a.Reason, codexDefaultDeny)
		case Ask:
			hso["permissionDecision"] = Deny
			hso["permissionDecisionReason"] = askAsDeny(a.Reason)
		case Allow, "":
			if a.UpdatedInput != nil {
				hso["permissionDecision"] = Allow
				hso["updatedInput"] = a.UpdatedInput
			}
		default:
			return nil, 0, fmt.Errorf("encode answer: decision %q is not valid for Codex %s", a.Decision, a.Event)
		}
		if len(hso) > 1 {
			out["hookSpecificOutput"] = hso
		}
	case Stop, SubagentStop, PostToolUse, PostToolUseFailure:
		if a.Decision == Block {
			out["decision"] = Block
			out["reason"] = nonEmptyReason(a.Reason, "docket blocked: no reason was given")
		}
	default:
		return nil, 0, fmt.Errorf("encode answer: no Codex answer for event %q", a.Event)
	}
	if a.SystemMessage != "" {
		out["systemMessage"] = a.SystemMessage
	}
	return marshalAnswer(out)
}

// askAsDeny words an escalation for a runtime that cannot ask the user.
func askAsDeny(reason string) string {
	if reason == "" {
		return "docket: this call needs a human's approval first"
	}
	return "docket: needs a human's approval first: " + reason
}

// marshalAnswer encodes out as one JSON line, or nothing when out is empty.
func marshalAnswer(out map[string]any) ([]byte, int, error) {
	if len(out) == 0 {
		return nil, 0, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, 0, fmt.Errorf("encode answer: %w", err)
	}
	return buf.Bytes(), 0, nil
}
