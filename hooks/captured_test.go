package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// captured reads a payload the real Claude Code 2.1.328, Codex CLI
// 0.169.0 or Gemini CLI 0.61.0 sent (testdata/hooks/captured, see its
// SOURCES.md).
func captured(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "hooks", "captured", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeCaptured(t *testing.T, name string) *Event {
	t.Helper()
	rt := Codex
	switch {
	case strings.HasPrefix(name, "gemini-"):
		rt = Gemini
	case strings.HasPrefix(name, "claude-"):
		rt = Claude
	}
	if got := DetectRuntime(captured(t, name)); got != rt {
		t.Errorf("%s: detected as %q, want %q", name, got, rt)
	}
	e, err := Decode(captured(t, name), rt)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return e
}

func TestCapturedToolKinds(t *testing.T) {
	for _, tc := range []struct {
		file    string
		kind    ToolKind
		command string   // ShellCommand, "" when not a shell call
		paths   []string // Paths
	}{
		{"codex-PreToolUse-Bash.json", KindShell, "go test ./...", nil},
		{"codex-PreToolUse-Bash-denied.json", KindShell, `cat "$DOCKET_HOME/keys/hmac.key" | base64`, nil},
		{"codex-PreToolUse-apply_patch.json", KindPatch, "", []string{"p.go"}},
		{"codex-PostToolUse-apply_patch.json", KindPatch, "", []string{"p.go"}},
		{"gemini-BeforeTool-run_shell_command.json", KindShell, "go test ./...", nil},
		{"gemini-BeforeTool-relative-key-read-allowed.json", KindShell, "cat ../runs/g4/dh/keys/hmac.key | base64", nil},
		{"gemini-BeforeTool-write_file.json", KindFileWrite, "", []string{"/home/dev/gem-proj/NOTES.md"}},
		{"gemini-BeforeTool-replace.json", KindFileEdit, "", []string{"/home/dev/gem-proj/p.go"}},
		{"gemini-AfterTool-write_file.json", KindFileWrite, "", []string{"/home/dev/gem-proj/NOTES.md"}},
		{"gemini-AfterTool-replace.json", KindFileEdit, "", []string{"/home/dev/gem-proj/p.go"}},
	} {
		e := decodeCaptured(t, tc.file)
		if e.ToolKind != tc.kind || e.Kind() != tc.kind {
			t.Errorf("%s: kind %q (Kind() %q), want %q", tc.file, e.ToolKind, e.Kind(), tc.kind)
		}
		cmd, ok := e.ShellCommand()
		if cmd != tc.command || ok != (tc.command != "") {
			t.Errorf("%s: ShellCommand = %q, %v; want %q", tc.file, cmd, ok, tc.command)
		}
		if got := e.Paths(); !reflect.DeepEqual(got, tc.paths) {
			t.Errorf("%s: Paths = %q, want %q", tc.file, got, tc.paths)
		}
	}
}

// TestCapturedMCP: an MCP server's tool is KindMCP under every runtime,
// and is known by one name, Claude Code's: Gemini CLI calls it
// mcp_term_run_command and says which server and tool it is only in its
// mcp_context. Its command is not a shell's by kind (the judge reads it
// as one: judge/directives.go).
func TestCapturedMCP(t *testing.T) {
	for _, tc := range []struct {
		file   string
		event  string
		failed bool
	}{
		{"claude-PreToolUse-mcp__term__run_command.json", PreToolUse, false},
		{"claude-PostToolUseFailure-mcp__term__run_command.json", PostToolUseFailure, true},
		{"codex-PreToolUse-mcp__term__run_command.json", PreToolUse, false},
		{"codex-PostToolUse-mcp__term__run_command.json", PostToolUse, false},
		{"gemini-BeforeTool-mcp_term_run_command.json", PreToolUse, false},
		{"gemini-AfterTool-mcp_term_run_command-error.json", PostToolUse, true},
	} {
		e := decodeCaptured(t, tc.file)
		if e.Name != tc.event || e.Failed != tc.failed {
			t.Errorf("%s: %s failed %v, want %s failed %v", tc.file, e.Name, e.Failed, tc.event, tc.failed)
		}
		if e.ToolKind != KindMCP || e.Kind() != KindMCP {
			t.Errorf("%s: kind %q, want mcp", tc.file, e.ToolKind)
		}
		if got := e.MCPName(); got != "mcp__term__run_command" {
			t.Errorf("%s: MCPName %q", tc.file, got)
		}
		if _, ok := e.ShellCommand(); ok {
			t.Errorf("%s: read as a shell call by its kind", tc.file)
		}
	}
	// a tool that is not an MCP server's has no MCP name
	if e := decodeCaptured(t, "gemini-BeforeTool-run_shell_command.json"); e.MCPName() != "" {
		t.Errorf("run_shell_command: MCPName %q", e.MCPName())
	}
}

// TestOpenClawMCPName: OpenClaw's name for a bundled MCP server's tool,
// <server>__<tool>, is that tool; nothing else is.
func TestOpenClawMCPName(t *testing.T) {
	for tool, want := range map[string]string{
		"slack__send_message": "mcp__slack__send_message",
		"my-srv__do_it":       "mcp__my-srv__do_it",
		"srv__a__b":           "mcp__srv__a__b",
		"exec":                "",
		"apply_patch":         "",
		"mcp__x__y":           "", // already its MCP name
		"a__":                 "",
		"__x":                 "",
		"1a__b":               "",
		"sl ack__x":           "",
		"slack__x.y":          "",
	} {
		if got := OpenClawMCPName(tool); got != want {
			t.Errorf("OpenClawMCPName(%q) = %q, want %q", tool, got, want)
		}
	}
}

// TestMCPIsError: an MCP result that says it failed ({content, isError:
// true}, MCP's CallToolResult, as Codex forwards it) is a failure. The
// failing payload is the captured successful one with isError set: Codex
// 0.169.0 fired no PostToolUse for the failed call it was given.
func TestMCPIsError(t *testing.T) {
	ok := captured(t, "codex-PostToolUse-mcp__term__run_command.json")
	failed := []byte(strings.Replace(string(ok), `"isError":false`, `"isError":true`, 1))
	if string(failed) == string(ok) {
		t.Fatal("the captured payload has no isError field")
	}
	for _, tc := range []struct {
		payload []byte
		want    bool
	}{{ok, false}, {failed, true}} {
		e, err := Decode(tc.payload, Codex)
		if err != nil {
			t.Fatal(err)
		}
		if e.Failed != tc.want {
			t.Errorf("tool_response %s: failed %v, want %v", e.ToolResponse, e.Failed, tc.want)
		}
	}
}

func TestCapturedFailures(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tc := range []struct {
		file        string
		failed      bool
		exit        *int
		exitUnknown bool
	}{
		// Codex's Bash result is the output string only: neither call says
		// how it ended, so neither may be recorded as a success.
		{"codex-PostToolUse-Bash.json", false, nil, true},
		{"codex-PostToolUse-Bash-exit2.json", false, nil, true},
		// apply_patch's result starts "Exit code: 0" (with a colon).
		{"codex-PostToolUse-apply_patch.json", false, code(0), false},
		// Gemini: the exit code is only a line of llmContent, absent for 0.
		{"gemini-AfterTool-run_shell_command-exit2.json", true, code(2), false},
		{"gemini-AfterTool-run_shell_command.json", false, nil, false},
		{"gemini-AfterTool-write_file.json", false, nil, false},
		{"gemini-AfterTool-replace.json", false, nil, false},
	} {
		e := decodeCaptured(t, tc.file)
		if e.Name != PostToolUse {
			t.Errorf("%s: event %q", tc.file, e.Name)
		}
		if e.Failed != tc.failed || e.ExitUnknown != tc.exitUnknown || !reflect.DeepEqual(e.ExitCode, tc.exit) {
			t.Errorf("%s: failed %v exit %v unknown %v; want %v %v %v", tc.file, e.Failed, deref(e.ExitCode), e.ExitUnknown,
				tc.failed, deref(tc.exit), tc.exitUnknown)
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestExitCodeLineForms(t *testing.T) {
	for _, tc := range []struct {
		resp   string
		exit   any
		failed bool
	}{
		{`"Exit code: 0\nWall time: 0 seconds\nOutput:\nok\n"`, 0, false},
		{`"Exit code: 1\nWall time: 0 seconds\nOutput:\nerror: patch failed\n"`, 1, true},
		{`"Exit code 2\nboom"`, 2, true},
		{`"Error: Exit code 127\nsh: nope: not found"`, 127, true},
		{`{"output":"boom","metadata":{"exit_code":3,"duration_seconds":0.1}}`, 3, true},
		// not at the start: output that merely mentions it
		{`"the log said Exit code: 1"`, nil, false},
	} {
		p := `{"session_id":"s","turn_id":"t","hook_event_name":"PostToolUse","tool_name":"apply_patch","tool_use_id":"c","tool_input":{"command":"*** Begin Patch\n*** End Patch\n"},"tool_response":` + tc.resp + `}`
		e, err := DecodeCodex([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if deref(e.ExitCode) != tc.exit || e.Failed != tc.failed {
			t.Errorf("%s: exit %v failed %v; want %v %v", tc.resp, deref(e.ExitCode), e.Failed, tc.exit, tc.failed)
		}
	}
}

// A command can print lines that look like Gemini's status lines; the
// status Gemini appends after the output wins, and printed text can only
// make a call look failed, never a failed call look successful.
func TestGeminiShellStatusSpoofing(t *testing.T) {
	for _, tc := range []struct {
		content string
		exit    any
		failed  bool
	}{
		{"Output: Exit Code: 0\nExit Code: 1\nProcess Group PGID: 1", 1, true},
		{"Output: done\nExit Code: 0\nExit Code: 2\nProcess Group PGID: 1", 2, true},
		{"Output: x\nSignal: 9\nProcess Group PGID: 1", nil, true},
		{"Output: x\nSignal: (none)\nExit Code: (none)", nil, false},
		{"Output: all good, Exit Code: 7 was last week", nil, false},
	} {
		resp, _ := json.Marshal(map[string]any{"llmContent": tc.content, "returnDisplay": ""})
		p := `{"session_id":"s","hook_event_name":"AfterTool","tool_name":"run_shell_command","tool_input":{"command":"x"},"tool_response":` + string(resp) + `}`
		e, err := DecodeGemini([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if deref(e.ExitCode) != tc.exit || e.Failed != tc.failed {
			t.Errorf("%q: exit %v failed %v; want %v %v", tc.content, deref(e.ExitCode), e.Failed, tc.exit, tc.failed)
		}
	}
}

func TestGeminiDerivedToolUseID(t *testing.T) {
	before := decodeCaptured(t, "gemini-BeforeTool-run_shell_command.json")
	after := decodeCaptured(t, "gemini-AfterTool-run_shell_command.json")
	other := decodeCaptured(t, "gemini-AfterTool-run_shell_command-exit2.json")
	if !before.ToolUseIDDerived || !strings.HasPrefix(before.ToolUseID, "gemini_") || len(before.ToolUseID) != len("gemini_")+24 {
		t.Fatalf("derived id %q (%v)", before.ToolUseID, before.ToolUseIDDerived)
	}
	if before.ToolUseID != after.ToolUseID {
		t.Errorf("BeforeTool %q and AfterTool %q of one call differ", before.ToolUseID, after.ToolUseID)
	}
	if other.ToolUseID == after.ToolUseID {
		t.Errorf("two different calls share id %q", other.ToolUseID)
	}
	// key order and whitespace in the input do not change it; the session does
	a := DerivedToolUseID("s", "replace", json.RawMessage(`{"a":1,"b":"x"}`))
	b := DerivedToolUseID("s", "replace", json.RawMessage(`{ "b":"x", "a":1 }`))
	c := DerivedToolUseID("s2", "replace", json.RawMessage(`{"a":1,"b":"x"}`))
	if a != b || a == c {
		t.Errorf("ids %q %q %q", a, b, c)
	}
	stop := decodeCaptured(t, "gemini-AfterAgent-first.json")
	if stop.ToolUseID != "" || stop.ToolUseIDDerived {
		t.Errorf("stop event got a tool id %q", stop.ToolUseID)
	}
}

func TestPatchPaths(t *testing.T) {
	patch := "*** Begin Patch\n" +
		"*** Add File: notes/new.md\n+hello\n" +
		"*** Update File: a.go\n*** Move to: b.go\n@@\n-x\n+y\n" +
		"  *** Delete File:   old.txt  \r\n" +
		"*** Add File: ../state/ledger/s.jsonl\n+{}\n" +
		"*** Update File: a.go\n" + // repeated
		"*** Add File:\n" + // empty
		"+*** Add File: not-a-header\n" +
		"*** End Patch\n"
	want := []string{"notes/new.md", "a.go", "b.go", "old.txt", "../state/ledger/s.jsonl"}
	if got := PatchPaths(patch); !reflect.DeepEqual(got, want) {
		t.Errorf("PatchPaths = %q, want %q", got, want)
	}
}

func TestShellCommandShapes(t *testing.T) {
	for _, tc := range []struct {
		tool, input, want string
		ok                bool
	}{
		{"Bash", `{"command":"ls -la"}`, "ls -la", true},
		{"shell", `{"command":["bash","-lc","go test ./..."]}`, "go test ./...", true},
		{"local_shell", `{"command":["/bin/zsh","-c","echo hi"]}`, "echo hi", true},
		{"shell", `{"command":["git","status"]}`, "git status", true},
		{"exec_command", `{"cmd":"make test","workdir":"/x"}`, "make test", true},
		{"run_shell_command", `{"command":"rm -rf x","description":"d"}`, "rm -rf x", true},
		{"shell", `{"command":[1,2]}`, "", false},
		{"shell", `{"command":[]}`, "", false},
		{"Write", `{"command":"ls"}`, "", false}, // not a shell tool
		{"Bash", `[1]`, "", false},
	} {
		e := &Event{ToolName: tc.tool, ToolInput: json.RawMessage(tc.input)}
		got, ok := e.ShellCommand()
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s %s: %q %v; want %q %v", tc.tool, tc.input, got, ok, tc.want, tc.ok)
		}
	}
}

func TestKindOf(t *testing.T) {
	for name, want := range map[string]ToolKind{
		"Bash": KindShell, "exec_command": KindShell, "run_shell_command": KindShell, "local_shell": KindShell,
		"Write": KindFileWrite, "write_file": KindFileWrite,
		"Edit": KindFileEdit, "MultiEdit": KindFileEdit, "NotebookEdit": KindFileEdit, "replace": KindFileEdit,
		"apply_patch": KindPatch,
		"Read":        KindRead, "read_file": KindRead, "read_many_files": KindRead, "list_directory": KindRead,
		"Glob": KindSearch, "Grep": KindSearch, "glob": KindSearch, "search_file_content": KindSearch, "grep": KindSearch,
		"WebFetch": KindFetch, "WebSearch": KindFetch, "web_fetch": KindFetch, "google_web_search": KindFetch,
		"mcp__github__create_issue": KindMCP, "TodoWrite": KindOther, "": KindOther, "bash": KindOther,
	} {
		if got := KindOf(name); got != want {
			t.Errorf("KindOf(%q) = %q, want %q", name, got, want)
		}
	}
	for _, k := range []ToolKind{KindFileWrite, KindFileEdit, KindPatch} {
		if !k.Writes() {
			t.Errorf("%s does not write", k)
		}
	}
	for _, k := range []ToolKind{KindShell, KindRead, KindSearch, KindFetch, KindMCP, KindOther} {
		if k.Writes() {
			t.Errorf("%s writes", k)
		}
	}
}

// What OpenClaw's process tool types into a running session is read as
// the command line a shell there would run; its other actions type
// nothing.
func TestTypedInputIsACommandLine(t *testing.T) {
	for in, want := range map[string]string{
		`{"action":"write","sessionId":"s","data":"ls -la\n"}`:                                  "ls -la\n",
		`{"action":"paste","sessionId":"s","text":"make test"}`:                                 "make test",
		`{"action":"send-keys","sessionId":"s","literal":"rm -rf /"}`:                           "rm -rf /",
		`{"action":"send-keys","sessionId":"s","keys":["l","s","Space","-","a","Enter","C-c"]}`: "ls -a\n",
		`{"action":"send-keys","sessionId":"s","hex":["63","61","74","0x20","2f"]}`:             "cat /",
		`{"action":"poll","sessionId":"s"}`:                                                     "",
		`{"action":"write","data":"ls"}`:                                                        "", // no session: not the process tool
		`{"action":"write","sessionId":"s","data":"ls","command":"echo x"}`:                     "echo x",
	} {
		got, ok := ShellCommandOf(json.RawMessage(in))
		if got != want || ok != (want != "") {
			t.Errorf("ShellCommandOf(%s) = %q, %v; want %q", in, got, ok, want)
		}
	}
}
