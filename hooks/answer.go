package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Decisions an Answer can carry. Which ones apply depends on the event:
// PreToolUse takes Allow, Deny or Ask; Stop and SubagentStop take Block.
// The empty decision means "no opinion": the runtime proceeds as it would
// without docket.
const (
	Allow = "allow"
	Deny  = "deny"
	Ask   = "ask"
	Block = "block"
)

// Answer is what a docket hook tells the runtime.
type Answer struct {
	Event    string // the normalized event being answered
	Decision string
	Reason   string
	// UpdatedInput replaces the tool input (PreToolUse revise).
	UpdatedInput json.RawMessage
	// SystemMessage is shown to the user, not the model.
	SystemMessage string
}

// Encode renders a for runtime rt: the bytes for stdout (nil for none) and
// the exit code.
func Encode(rt Runtime, a Answer) ([]byte, int, error) {
	switch rt {
	case Claude, "":
		return EncodeClaude(a)
	case Codex:
		return EncodeCodex(a)
	case Gemini:
		return EncodeGemini(a)
	case Cursor:
		return EncodeCursor(a)
	}
	return nil, 0, fmt.Errorf("encode answer: unknown runtime %q", rt)
}

// Decode decodes payload for runtime rt; the empty runtime detects it from
// the payload (DetectRuntime).
func Decode(payload []byte, rt Runtime) (*Event, error) {
	if rt == "" {
		// one validation of the payload for detection and decoding: it
		// costs a pass over the whole tool output
		if err := checkObject(payload); err != nil {
			return nil, err
		}
		switch detectRuntime(payload) {
		case Codex:
			return decodeCodex(payload)
		case Gemini:
			return decodeGemini(payload)
		case Cursor:
			return decodeCursor(payload)
		default:
			return decodeClaude(payload)
		}
	}
	switch rt {
	case Claude, "":
		return DecodeClaude(payload)
	case Codex:
		return DecodeCodex(payload)
	case Gemini:
		return DecodeGemini(payload)
	case Cursor:
		return DecodeCursor(payload)
	}
	return nil, fmt.Errorf("decode hook payload: unknown runtime %q", rt)
}

// EncodeClaude renders an Answer per the Claude Code hooks contract. It
// always exits 0: a JSON answer on exit 0 is how Claude Code reads
// decisions, and exit 2 would make it ignore the JSON.
func EncodeClaude(a Answer) ([]byte, int, error) {
	out := map[string]any{}
	switch a.Event {
	case PreToolUse:
		if a.Decision != "" || a.UpdatedInput != nil {
			hso := map[string]any{"hookEventName": PreToolUse}
			if a.Decision != "" {
				hso["permissionDecision"] = a.Decision
				hso["permissionDecisionReason"] = a.Reason
			}
			if a.UpdatedInput != nil {
				hso["updatedInput"] = a.UpdatedInput
			}
			out["hookSpecificOutput"] = hso
		}
	case Stop, SubagentStop, PostToolUse, PostToolUseFailure:
		if a.Decision == Block {
			out["decision"] = Block
			out["reason"] = a.Reason
		}
	default:
		return nil, 0, fmt.Errorf("encode answer: no Claude Code answer for event %q", a.Event)
	}
	if a.SystemMessage != "" {
		out["systemMessage"] = a.SystemMessage
	}
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
