package gate

import (
	"bytes"
	"testing"

	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

// LastWrite reasons about kinds: every runtime's file writes, edits and
// patches are writes, and every runtime's shell commands go through the
// lexicon, whatever the tool is called.
func TestLastWriteByKind(t *testing.T) {
	lex, err := policies.DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		tool  string
		body  map[string]any // nil: an entry from before tool_kind was recorded
		input string
		write bool
	}{
		{"gemini write_file", "write_file", map[string]any{"tool_kind": "file_write"}, `{"file_path":"/w/NOTES.md","content":"x"}`, true},
		{"gemini replace", "replace", map[string]any{"tool_kind": "file_edit"}, `{"file_path":"/w/p.go","old_string":"a","new_string":"b"}`, true},
		{"gemini replace, old entry", "replace", nil, `{"file_path":"/w/p.go"}`, true},
		{"codex apply_patch", "apply_patch", map[string]any{"tool_kind": "patch"}, `{"command":"*** Begin Patch\n*** Update File: p.go\n*** End Patch\n"}`, true},
		{"gemini shell write", "run_shell_command", map[string]any{"tool_kind": "shell"}, `{"command":"sed -i s/a/b/ p.go","description":"d"}`, true},
		{"gemini shell read", "run_shell_command", map[string]any{"tool_kind": "shell"}, `{"command":"go test ./...","description":"d"}`, false},
		{"gemini shell, old entry", "run_shell_command", nil, `{"command":"rm p.go"}`, true},
		{"codex exec_command cmd", "exec_command", map[string]any{"tool_kind": "shell"}, `{"cmd":"gofmt -w p.go"}`, true},
		{"codex shell argv", "shell", nil, `{"command":["bash","-lc","echo x > p.go"]}`, true},
		{"codex shell argv read", "shell", nil, `{"command":["bash","-lc","cat p.go"]}`, false},
		{"shell, unreadable command", "run_shell_command", map[string]any{"tool_kind": "shell"}, `{"description":"no command"}`, true},
		{"gemini read_file", "read_file", map[string]any{"tool_kind": "read"}, `{"file_path":"/w/p.go"}`, false},
		{"gemini glob", "glob", nil, `{"pattern":"**/*.go"}`, false},
		// an MCP file tool, by Claude Code's name and by Gemini CLI's
		// (mcp_<server>_<tool>, its mcp__ name recorded as mcp_name)
		{"mcp write_file", "mcp__fs__write_file", map[string]any{"tool_kind": "mcp"}, `{"path":"/w/p.go","content":"x"}`, true},
		{"gemini mcp write_file", "mcp_fs_write_file", map[string]any{"tool_kind": "mcp", "mcp_name": "mcp__fs__write_file"}, `{"path":"/w/p.go","content":"x"}`, true},
		{"gemini mcp read_file", "mcp_fs_read_file", map[string]any{"tool_kind": "mcp", "mcp_name": "mcp__fs__read_file"}, `{"path":"/w/p.go"}`, false},
		// a body cannot make a writing tool a reader: the lexicon's write
		// tools still count
		{"Write labelled read", "Write", map[string]any{"tool_kind": "read"}, `{"file_path":"/w/a"}`, true},
	} {
		m := &memLedger{}
		m.pass(t, "s1", "done", "go_test_pass", "pass")
		if _, err := m.Append("s1", ledger.Record{Kind: ledger.KindToolCall, Tool: tc.tool, Body: tc.body,
			Artifacts: []ledger.Artifact{{Name: "input.json", Data: bytes.NewReader([]byte(tc.input))}}}); err != nil {
			t.Fatal(err)
		}
		entries, _ := m.ReadVerified("s1")
		w := LastWrite(m, entries, 0, lex)
		if (w != nil) != tc.write {
			t.Errorf("%s: write = %+v, want %v", tc.name, w, tc.write)
		}
	}
}
