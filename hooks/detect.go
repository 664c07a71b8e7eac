package hooks

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Runtimes lists every runtime docket speaks, in the order the CLI shows
// them.
var Runtimes = []Runtime{Claude, Codex, Gemini, Cursor}

// ParseRuntime maps a --runtime flag value to a Runtime. It accepts the
// four names and a few spellings users type ("claude-code", "codex-cli",
// "gemini-cli").
func ParseRuntime(s string) (Runtime, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "claude", "claude-code", "claudecode":
		return Claude, nil
	case "codex", "codex-cli":
		return Codex, nil
	case "gemini", "gemini-cli":
		return Gemini, nil
	case "cursor":
		return Cursor, nil
	}
	return "", fmt.Errorf("unknown runtime %q (want claude, codex, gemini or cursor)", s)
}

// isGeminiEvent reports whether only Gemini CLI uses the event name.
func isGeminiEvent(name string) bool {
	switch name {
	case "BeforeTool", "AfterTool",
		"BeforeAgent", "AfterAgent",
		"BeforeModel", "AfterModel",
		"BeforeToolSelection", "PreCompress":
		return true
	}
	return false
}

// Cursor's event names are camelCase; no other runtime uses a lowercase
// first letter.
func isCursorEvent(name string) bool {
	return name != "" && name[0] >= 'a' && name[0] <= 'z'
}

// DetectRuntime says which runtime sent payload, from the fields only that
// runtime sends. It returns "" when payload is not a JSON object. The
// signals, strongest first:
//
//   - Cursor: a camelCase hook_event_name (beforeShellExecution, stop, …)
//     or any of conversation_id, generation_id, workspace_roots;
//   - Gemini CLI: a Gemini event name (BeforeTool, AfterTool, AfterAgent,
//     …), or a top-level timestamp without permission_mode on the event
//     names Gemini shares with Claude Code (SessionStart, SessionEnd,
//     Notification);
//   - Codex CLI: a turn_id, a null transcript_path, or a transcript under
//     a .codex directory;
//   - otherwise Claude Code.
func DetectRuntime(payload []byte) Runtime {
	if checkObject(payload) != nil {
		return ""
	}
	return detectRuntime(payload)
}

// detectRuntime is DetectRuntime on a payload checkObject accepted.
func detectRuntime(payload []byte) Runtime {
	var f [len(detectFields)]gjson.Result
	topFields(gjson.ParseBytes(payload), detectFields[:], f[:])
	name := f[dfHookEventName].String()
	switch {
	case isCursorEvent(name),
		f[dfConversationID].Exists(),
		f[dfGenerationID].Exists(),
		f[dfWorkspaceRoots].Exists():
		return Cursor
	case isGeminiEvent(name):
		return Gemini
	case f[dfTurnID].Exists():
		return Codex
	}
	tp := f[dfTranscriptPath]
	if (tp.Exists() && tp.Type == gjson.Null) || strings.Contains(tp.String(), "/.codex/") {
		return Codex
	}
	if f[dfTimestamp].Exists() && !f[dfPermissionMode].Exists() {
		return Gemini
	}
	return Claude
}

// detectFields are the members DetectRuntime reads (topFields), indexed
// by the df constants.
var detectFields = [...]string{
	dfHookEventName: "hook_event_name", dfConversationID: "conversation_id",
	dfGenerationID: "generation_id", dfWorkspaceRoots: "workspace_roots", dfTurnID: "turn_id",
	dfTranscriptPath: "transcript_path", dfTimestamp: "timestamp", dfPermissionMode: "permission_mode",
}

const (
	dfHookEventName = iota
	dfConversationID
	dfGenerationID
	dfWorkspaceRoots
	dfTurnID
	dfTranscriptPath
	dfTimestamp
	dfPermissionMode
)

// BlockExitCode is the exit code with which a hook of runtime rt blocks
// when it cannot produce its JSON answer (the fail-closed path): the
// runtime then shows stderr as the reason. Every runtime docket speaks
// uses 2; Codex CLI honours it only when stderr is non-empty, so callers
// must always write a reason there.
func BlockExitCode(rt Runtime) int { return 2 }

// TimeoutUnit is the unit of the "timeout" field in rt's hook settings:
// "ms" for Gemini CLI, "s" for the others.
func TimeoutUnit(rt Runtime) string {
	if rt == Gemini {
		return "ms"
	}
	return "s"
}

// nonEmptyReason returns r, or fallback when r is blank: Codex CLI and
// Gemini CLI reject a deny or block without a reason, and an unexplained
// refusal helps nobody.
func nonEmptyReason(r, fallback string) string {
	if strings.TrimSpace(r) == "" {
		return fallback
	}
	return r
}
