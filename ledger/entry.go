package ledger

import (
	"encoding/json"
	"io"
)

// Version is the entry format version, written in every entry's "v".
const Version = 1

// Kind says what an entry records.
type Kind string

const (
	KindToolCall      Kind = "tool_call"
	KindToolFailure   Kind = "tool_failure"
	KindValidatorPass Kind = "validator_pass"
	KindValidatorFail Kind = "validator_fail"
	KindJudgeDecision Kind = "judge_decision"
	KindGateDecision  Kind = "gate_decision"
	KindSeal          Kind = "seal"
	// KindUserPrompt records a user prompt (UserPromptSubmit): the origin
	// (O-Tag) of the decisions that follow it in the session.
	KindUserPrompt Kind = "user_prompt"
)

// Entry is one line of a ledger file. Field order here is the encoding's
// field order (docs/FORMAT.md); empty optional fields are omitted.
type Entry struct {
	V         int             `json:"v"`
	Seq       uint64          `json:"seq"`
	Session   string          `json:"session"`
	Time      string          `json:"time"`
	Kind      Kind            `json:"kind"`
	Runtime   string          `json:"runtime,omitempty"`
	Event     string          `json:"event,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	AgentID   string          `json:"agent_id,omitempty"`
	Args      string          `json:"args,omitempty"`      // "sha256:<hex>" of the canonical arguments
	Manifest  string          `json:"manifest,omitempty"`  // "sha256:<hex>" of the artifact manifest
	Artifacts int64           `json:"artifacts,omitempty"` // end offset of the entry's bundle in the session's pack
	Body      json.RawMessage `json:"body,omitempty"`      // kind-specific, canonical JSON object
	Prev      string          `json:"prev"`
	Hash      string          `json:"hash"`
	KeyID     string          `json:"key_id"`
	MAC       string          `json:"mac"`
}

// Record is what a caller asks Append to write. The ledger fills in
// version, seq, session, time, chain, hash and MAC.
type Record struct {
	Kind      Kind
	Runtime   string
	Event     string
	Tool      string
	ToolUseID string
	AgentID   string
	// Args is digested canonically into Entry.Args; nil means no digest.
	Args json.RawMessage
	// Body is encoded canonically into Entry.Body; nil means none. Keep it
	// small: bulk belongs in Artifacts.
	Body any
	// Artifacts are streamed into the session's artifact store; their
	// manifest's digest goes into Entry.Manifest.
	Artifacts []Artifact
}

// Artifact is one raw file stored beside an entry. Name must be a plain
// file name (no separators); Data is read to EOF and streamed to disk.
type Artifact struct {
	Name string
	Data io.Reader
}
