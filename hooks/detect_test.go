package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realPayloads returns the real payloads of one runtime from
// testdata/hooks/<dir>, keyed by file name.
func realPayloads(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "hooks", dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no payloads in testdata/hooks/%s", dir)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// Documented shapes for the runtimes with no real payloads in the
// collection: Gemini CLI (docs/hooks/reference.md) and Cursor
// (cursor-hooks src/types.ts, plus stop's loop_count).
var (
	geminiBeforeTool = `{"session_id":"g-1","transcript_path":"/home/u/.gemini/tmp/abc/chats/session.json","cwd":"/work/p","hook_event_name":"BeforeTool","timestamp":"2026-01-15T10:00:00.000Z","tool_name":"run_shell_command","tool_input":{"command":"go test ./...","description":"run tests"}}`
	geminiAfterTool  = `{"session_id":"g-1","transcript_path":"/t","cwd":"/work/p","hook_event_name":"AfterTool","timestamp":"2026-01-15T10:00:01.000Z","tool_name":"run_shell_command","tool_input":{"command":"go test ./..."},"tool_response":{"llmContent":"ok","returnDisplay":"ok","error":null}}`
	geminiAfterFail  = `{"session_id":"g-1","transcript_path":"/t","cwd":"/work/p","hook_event_name":"AfterTool","timestamp":"2026-01-15T10:00:01.000Z","tool_name":"write_file","tool_input":{"file_path":"/x"},"tool_response":{"llmContent":"","returnDisplay":"","error":{"message":"permission denied"}}}`
	geminiAfterAgent = `{"session_id":"g-1","transcript_path":"/t","cwd":"/work/p","hook_event_name":"AfterAgent","timestamp":"2026-01-15T10:00:02.000Z","prompt":"fix it","prompt_response":"Done, all tests pass.","stop_hook_active":true}`
	geminiSession    = `{"session_id":"g-1","transcript_path":"/t","cwd":"/work/p","hook_event_name":"SessionStart","timestamp":"2026-01-15T09:59:00.000Z","source":"startup"}`

	cursorShell = `{"conversation_id":"c-1","generation_id":"gen-1","hook_event_name":"beforeShellExecution","workspace_roots":["/work/p"],"command":"rm -rf build","cwd":"/work/p/sub"}`
	cursorMCP   = `{"conversation_id":"c-1","generation_id":"gen-1","hook_event_name":"beforeMCPExecution","workspace_roots":["/work/p"],"tool_name":"create_issue","tool_input":{"title":"x"},"url":"https://mcp.example"}`
	cursorEdit  = `{"conversation_id":"c-1","generation_id":"gen-2","hook_event_name":"afterFileEdit","workspace_roots":["/work/p"],"file_path":"/work/p/main.go","edits":[{"old_string":"a","new_string":"b"}]}`
	cursorStop  = `{"conversation_id":"c-1","generation_id":"gen-3","hook_event_name":"stop","workspace_roots":["/work/p"],"status":"completed","loop_count":1}`
)

func TestDetectRuntime(t *testing.T) {
	for dir, want := range map[string]Runtime{"claude": Claude, "codex": Codex} {
		for name, p := range realPayloads(t, dir) {
			if got := DetectRuntime(p); got != want {
				t.Errorf("%s/%s: DetectRuntime = %q, want %q", dir, name, got, want)
			}
		}
	}
	tests := []struct {
		name    string
		payload string
		want    Runtime
	}{
		{"gemini BeforeTool", geminiBeforeTool, Gemini},
		{"gemini AfterTool", geminiAfterTool, Gemini},
		{"gemini AfterAgent", geminiAfterAgent, Gemini},
		{"gemini SessionStart by timestamp", geminiSession, Gemini},
		{"cursor shell", cursorShell, Cursor},
		{"cursor mcp", cursorMCP, Cursor},
		{"cursor edit", cursorEdit, Cursor},
		{"cursor stop", cursorStop, Cursor},
		{"cursor by conversation_id alone", `{"conversation_id":"c","hook_event_name":"X"}`, Cursor},
		{"codex by turn_id", `{"session_id":"s","turn_id":"t","hook_event_name":"Stop"}`, Codex},
		{"codex by null transcript", `{"session_id":"s","transcript_path":null,"hook_event_name":"SessionStart"}`, Codex},
		{"claude minimal", `{"session_id":"s","hook_event_name":"Stop"}`, Claude},
		{"claude with permission_mode and timestamp", `{"session_id":"s","hook_event_name":"SessionStart","permission_mode":"default","timestamp":"x"}`, Claude},
		{"not json", `nope`, ""},
		{"array", `[{"turn_id":"t"}]`, ""},
		{"empty", ``, ""},
	}
	for _, tt := range tests {
		if got := DetectRuntime([]byte(tt.payload)); got != tt.want {
			t.Errorf("%s: DetectRuntime = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDecodeDispatchesByDetection(t *testing.T) {
	tests := []struct {
		payload string
		runtime Runtime
		name    string
	}{
		{geminiBeforeTool, Gemini, PreToolUse},
		{cursorStop, Cursor, Stop},
		{`{"session_id":"s","turn_id":"t","hook_event_name":"Stop","last_assistant_message":"ok"}`, Codex, Stop},
		{`{"session_id":"s","hook_event_name":"Stop"}`, Claude, Stop},
	}
	for _, tt := range tests {
		e, err := Decode([]byte(tt.payload), "")
		if err != nil {
			t.Errorf("Decode(%.40s…): %v", tt.payload, err)
			continue
		}
		if e.Runtime != tt.runtime || e.Name != tt.name {
			t.Errorf("Decode(%.40s…) = %s %s, want %s %s", tt.payload, e.Runtime, e.Name, tt.runtime, tt.name)
		}
	}
	// A forced runtime wins over detection.
	if _, err := Decode([]byte(cursorStop), Claude); err == nil {
		t.Error("Decode(cursor payload, Claude) succeeded; want a missing session_id error")
	}
	if _, err := Decode([]byte(`{}`), "martian"); err == nil || !strings.Contains(err.Error(), "unknown runtime") {
		t.Errorf("Decode with unknown runtime: err = %v", err)
	}
}

func TestParseRuntime(t *testing.T) {
	tests := []struct {
		in   string
		want Runtime
		ok   bool
	}{
		{"claude", Claude, true}, {"Claude-Code", Claude, true}, {"codex", Codex, true},
		{"gemini-cli", Gemini, true}, {"cursor", Cursor, true}, {"", "", false}, {"vim", "", false},
	}
	for _, tt := range tests {
		got, err := ParseRuntime(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseRuntime(%q) = %q, %v; want %q ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestTimeoutUnit(t *testing.T) {
	for _, rt := range Runtimes {
		want := "s"
		if rt == Gemini {
			want = "ms"
		}
		if got := TimeoutUnit(rt); got != want {
			t.Errorf("TimeoutUnit(%s) = %q, want %q", rt, got, want)
		}
		if BlockExitCode(rt) != 2 {
			t.Errorf("BlockExitCode(%s) = %d, want 2", rt, BlockExitCode(rt))
		}
	}
}
