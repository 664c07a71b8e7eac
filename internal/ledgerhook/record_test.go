package ledgerhook

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/tidwall/gjson"
)

// record stores stdout and stderr as the response's first members of
// those names hold them, on every real payload and on responses with
// duplicate, nested and non-string members.
func TestRecordStdoutStderr(t *testing.T) {
	payloads := []string{
		`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":{"stdout":"a","stdout":"b","stderr":"e"}}`,
		`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":{"x":{"stdout":"in"},"stderr":5}}`,
		`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":"stdout"}`,
		`{"session_id":"s","hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":{"stderr":"` + strings.Repeat("z", 40_000) + `","stdout":""}}`,
	}
	files, _ := filepath.Glob("../../testdata/realdata/payloads/*.json")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		payloads = append(payloads, string(b))
	}
	checked := 0
	for _, pl := range payloads {
		ev, err := hooks.Decode([]byte(pl), "")
		if err != nil || ev.ToolResponse == nil {
			continue
		}
		got := map[string]string{}
		for _, a := range record(ev, []byte(pl)).Artifacts {
			b, _ := io.ReadAll(a.Data)
			got[a.Name] = string(b)
		}
		r := gjson.ParseBytes(ev.ToolResponse)
		for _, k := range []string{"stdout", "stderr"} {
			v := r.Get(k)
			g, ok := got[k]
			if (v.Type == gjson.String) != ok || g != v.Str {
				t.Fatalf("%s of %.200s: stored %v %q, want %q (%v)", k, pl, ok, g, v.Str, v.Type)
			}
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d payloads with a response", checked)
	}
}

// An MCP call is recorded as kind mcp under every runtime; Gemini CLI's
// (mcp_term_run_command) also with the name the lexicon and the bindings
// know it by, mcp__term__run_command. Real payloads (captured).
func TestRecordMCP(t *testing.T) {
	for _, tc := range []struct{ file, mcpName string }{
		{"gemini-AfterTool-mcp_term_run_command-error.json", "mcp__term__run_command"},
		{"codex-PostToolUse-mcp__term__run_command.json", ""}, // its own name already
		{"claude-PostToolUseFailure-mcp__term__run_command.json", ""},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hooks", "captured", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		ev, err := hooks.Decode(b, "")
		if err != nil {
			t.Fatal(err)
		}
		body := record(ev, b).Body.(map[string]any)
		if body["tool_kind"] != "mcp" {
			t.Errorf("%s: tool_kind %v", tc.file, body["tool_kind"])
		}
		if got, _ := body["mcp_name"].(string); got != tc.mcpName {
			t.Errorf("%s: mcp_name %q, want %q", tc.file, got, tc.mcpName)
		}
	}
}
