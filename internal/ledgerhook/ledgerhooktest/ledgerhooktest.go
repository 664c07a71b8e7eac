// Package ledgerhooktest sets up, for tests, the Codex session of the
// captured rollout testdata/hooks/captured/codex-rollout-mcp-failed.jsonl:
// an MCP call that failed and that no hook reported, which the judge had
// allowed.
package ledgerhooktest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/docket/docket/ledger"
)

// Session is the captured rollout's session id.
const Session = "01a20c98-bfd4-7122-b150-f54b293a0ced"

// UnhookedFailure writes the captured rollout into dir with mode perm,
// appends to l the judge's allow of its failed call as docket-judge
// records it (arguments_hash of the canonical tool_input), and returns
// the rollout's path.
func UnhookedFailure(t testing.TB, l *ledger.Ledger, dir string, perm os.FileMode) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "hooks", "captured", "codex-rollout-mcp-failed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rollout := filepath.Join(dir, "rollout.jsonl")
	if err := os.WriteFile(rollout, b, perm); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(Session, ledger.Record{Kind: ledger.KindJudgeDecision, Runtime: "codex", Event: "PreToolUse",
		Tool: "mcp__term__run_command", ToolUseID: "call_docket_03",
		Body: map[string]any{"outcome": "allow", "enforcement_action": "none",
			"arguments_hash": "sha256:e825c1abbd835169050cec961143b7c01a7dd7f55b55ba7d60afe044622a0fb6"}}); err != nil {
		t.Fatal(err)
	}
	return rollout
}
