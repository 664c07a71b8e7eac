package ledgerhook

import (
	"encoding/json"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// Recorder is the ledger RecordUnhooked reads and appends to.
type Recorder interface {
	Append(session string, r ledger.Record) (*ledger.Entry, error)
	ReadVerified(session string) ([]*ledger.Entry, error)
}

// RecordUnhooked records, as tool_failure entries, the MCP calls of a
// Codex session that failed without a PostToolUse hook (Codex 0.169 runs
// none for a failed MCP call): the judge calls it at the next PreToolUse
// and the gate at Stop, so that what reads failures (the blocked-claim
// ladder's attempts, an auditor) sees them before the agent can ask.
//
// The rollout is the agent's own file, so a failure it records is only
// taken for a call the ledger already holds a judge_decision for (same
// tool_use_id, same tool) that let the call run with those very
// arguments (arguments_hash, or amended_arguments_hash after a revision
// or a human's edit), and that has no tool result yet; a call the judge
// never saw, one it refused, or one recorded already is skipped. The
// entry is what the ledger hook would have written for a
// PostToolUseFailure (the rollout line is its payload artifact, the
// arguments its input.json), with "recorded_from": "rollout".
//
// calls are what hooks.CodexUnhookedFailures found in the rollout of
// ev's session (the caller opens the ledger only when there are some).
// It returns how many entries it appended.
func RecordUnhooked(ev *hooks.Event, calls []hooks.UnhookedCall, l Recorder) (int, error) {
	if len(calls) == 0 || !home.ValidSessionID(ev.SessionID) {
		return 0, nil
	}
	entries, err := l.ReadVerified(ev.SessionID)
	if err != nil {
		return 0, err
	}
	resulted := map[string]bool{}
	ran := map[string][]*ledger.Entry{} // judge decisions that let the call run, by tool_use_id
	for _, e := range entries {
		if e.ToolUseID == "" {
			continue
		}
		switch e.Kind {
		case ledger.KindToolCall, ledger.KindToolFailure:
			resulted[e.ToolUseID] = true
		case ledger.KindJudgeDecision:
			ran[e.ToolUseID] = append(ran[e.ToolUseID], e)
		}
	}
	n := 0
	for _, c := range calls {
		if resulted[c.ID] || !letRun(ran[c.ID], c) {
			continue
		}
		fe := &hooks.Event{
			Runtime: hooks.Codex, Name: hooks.PostToolUseFailure, RawName: hooks.PostToolUseFailure,
			SessionID: ev.SessionID, TranscriptPath: ev.TranscriptPath, Cwd: ev.Cwd, TurnID: ev.TurnID,
			ToolName: c.Tool, ToolKind: hooks.KindMCP, ToolUseID: c.ID, ToolInput: c.Arguments,
			Failed: true, Error: c.Error,
		}
		rec := record(fe, c.Line)
		rec.Body.(map[string]any)["recorded_from"] = "rollout"
		if _, err := l.Append(ev.SessionID, rec); err != nil {
			return n, err
		}
		resulted[c.ID] = true
		n++
	}
	return n, nil
}

// letRun reports whether one of a call's judge decisions let it run
// with the arguments the rollout says it ran with.
func letRun(decisions []*ledger.Entry, c hooks.UnhookedCall) bool {
	canon, err := canonjson.Canonical(c.Arguments)
	if err != nil {
		return false
	}
	sum := canonjson.SHA256(canon)
	for _, d := range decisions {
		if d.Tool != c.Tool {
			continue
		}
		var body struct {
			Enforcement string `json:"enforcement_action"`
			Args        string `json:"arguments_hash"`
			Amended     string `json:"amended_arguments_hash"`
		}
		if json.Unmarshal(d.Body, &body) != nil {
			continue
		}
		switch body.Enforcement {
		case "none", "allow", "updated_input", "approval_granted", "audit_bypass", "ask":
		default:
			continue // refused, or still waiting: the call did not run
		}
		if body.Args == sum || body.Amended != "" && body.Amended == sum {
			return true
		}
	}
	return false
}
