package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rollout lines in the shape Codex CLI writes them (one JSON object per
// line: timestamp, type, payload).
func rolloutLines(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

const (
	rolloutMeta = `{"timestamp":"2026-11-23T16:42:46Z","type":"session_meta","payload":{"id":"s"}}`
	rolloutCall = `{"timestamp":"2026-11-23T16:42:47Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"ls /nonexistent-dir\"}","call_id":"call_21ab558b63544ed4a47c"}}`
	rolloutEnd2 = `{"timestamp":"2026-11-23T16:42:48Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_21ab558b63544ed4a47c","exit_code":2,"aggregated_output":"ls: cannot access","status":"failed"}}`
	rolloutOut2 = `{"timestamp":"2026-11-23T16:42:48Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_21ab558b63544ed4a47c","output":"Exit code: 2\nWall time: 0 seconds\nOutput:\nls: cannot access\n"}}`
	rolloutEnd0 = `{"timestamp":"2026-11-23T16:42:49Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_61b364ef49c747a39d68","exit_code":0}}`
)

func TestResolveExitFromRollout(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		rollout string // "" for no file
		found   bool
		exit    int
		failed  bool
	}{
		{"exec_command_end", rolloutLines(rolloutMeta, rolloutCall, rolloutEnd2, rolloutEnd0), true, 2, true},
		{"function_call_output only", rolloutLines(rolloutMeta, rolloutCall, rolloutOut2), true, 2, true},
		{"json output metadata", rolloutLines(`{"type":"response_item","payload":{"type":"function_call_output","call_id":"call_21ab558b63544ed4a47c","output":"{\"output\":\"x\",\"metadata\":{\"exit_code\":3}}"}}`), true, 3, true},
		{"other call only", rolloutLines(rolloutMeta, rolloutEnd0), false, 0, false},
		{"id only mentioned", rolloutLines(`{"type":"event_msg","payload":{"type":"agent_message","message":"call_21ab558b63544ed4a47c exit_code 0"}}`), false, 0, false},
		{"torn last line", rolloutLines(rolloutEnd2) + `{"type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_21ab558b63544ed4a47c","exit_co`, true, 2, true},
		{"no file", "", false, 0, false},
	} {
		e := decodeCaptured(t, "codex-PostToolUse-Bash-exit2.json")
		e.TranscriptPath = filepath.Join(dir, "missing.jsonl")
		if tc.rollout != "" {
			e.TranscriptPath = write(strings.ReplaceAll(tc.name, " ", "_")+".jsonl", tc.rollout)
		}
		got := ResolveExit(e)
		if got != tc.found || e.Failed != tc.failed || (tc.found && (e.ExitCode == nil || *e.ExitCode != tc.exit || e.ExitUnknown)) ||
			(!tc.found && (e.ExitCode != nil || !e.ExitUnknown)) {
			t.Errorf("%s: found %v exit %v failed %v unknown %v", tc.name, got, deref(e.ExitCode), e.Failed, e.ExitUnknown)
		}
	}
	// the success case of the same session resolves to 0, not failed
	e := decodeCaptured(t, "codex-PostToolUse-Bash.json")
	e.TranscriptPath = write("ok.jsonl", rolloutLines(rolloutMeta, rolloutEnd2, rolloutEnd0))
	if !ResolveExit(e) || e.Failed || deref(e.ExitCode) != 0 {
		t.Errorf("success: exit %v failed %v", deref(e.ExitCode), e.Failed)
	}
	// only Codex shell results with no status are looked up
	e = decodeCaptured(t, "gemini-AfterTool-run_shell_command.json")
	e.TranscriptPath = write("g.jsonl", rolloutLines(rolloutEnd2))
	if ResolveExit(e) {
		t.Error("resolved a Gemini event from a Codex rollout")
	}
}

// ResolveExitWith opens the rollout with the opener it is given (the
// sealed daemon's refuses a file its caller could not read); a refusal
// leaves the status unknown.
func TestResolveExitWithOpener(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rollout.jsonl")
	if err := os.WriteFile(p, []byte(rolloutLines(rolloutMeta, rolloutCall, rolloutEnd2)), 0o600); err != nil {
		t.Fatal(err)
	}
	var opened []string
	for _, tc := range []struct {
		name  string
		open  func(string) (*os.File, error)
		found bool
	}{
		{"nil is os.Open", nil, true},
		{"an opener that allows", func(path string) (*os.File, error) { opened = append(opened, path); return os.Open(path) }, true},
		{"an opener that refuses", func(path string) (*os.File, error) {
			opened = append(opened, path)
			return nil, errors.New("refused")
		}, false},
	} {
		e := decodeCaptured(t, "codex-PostToolUse-Bash-exit2.json")
		e.TranscriptPath = p
		if got := ResolveExitWith(e, tc.open); got != tc.found || e.ExitUnknown == tc.found {
			t.Errorf("%s: found %v unknown %v, want found %v", tc.name, got, e.ExitUnknown, tc.found)
		}
	}
	if len(opened) != 2 || opened[0] != p || opened[1] != p {
		t.Errorf("opened %q", opened)
	}
}

func TestRolloutReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big.jsonl")
	// the call's end record lies before the last MaxRolloutRead bytes
	filler := strings.Repeat(`{"type":"event_msg","payload":{"type":"token_count"}}`+"\n", MaxRolloutRead/50+10)
	if err := os.WriteFile(p, []byte(rolloutEnd2+"\n"+filler), 0o600); err != nil {
		t.Fatal(err)
	}
	e := decodeCaptured(t, "codex-PostToolUse-Bash-exit2.json")
	e.TranscriptPath = p
	if ResolveExit(e) {
		t.Error("read past the bound")
	}
}

// The real thing: Codex CLI 0.169.0's PostToolUse payload for a failed and
// a successful exec_command, and the rollout lines that named the call
// when the hook ran (testdata/hooks/captured/SOURCES.md).
func TestResolveExitCapturedRollout(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "testdata", "hooks", "captured"))
	for _, tc := range []struct {
		payload, rollout string
		exit             int
		failed           bool
	}{
		{"codex-PostToolUse-exec_command-exit2.json", "codex-rollout-at-PostToolUse-exit2.jsonl", 2, true},
		{"codex-PostToolUse-exec_command-exit0.json", "codex-rollout-at-PostToolUse-exit0.jsonl", 0, false},
		// what Codex writes after the hook: read too, for older versions
		{"codex-PostToolUse-exec_command-exit2.json", "codex-rollout-after-PostToolUse-exit2.jsonl", 2, true},
	} {
		e := decodeCaptured(t, tc.payload)
		if !e.ExitUnknown || e.Failed || e.ExitCode != nil {
			t.Fatalf("%s: decoded with a status: %+v", tc.payload, e)
		}
		e.TranscriptPath = filepath.Join(dir, tc.rollout)
		if !ResolveExit(e) || e.Failed != tc.failed || deref(e.ExitCode) != tc.exit || e.ExitUnknown {
			t.Errorf("%s with %s: exit %v failed %v unknown %v", tc.payload, tc.rollout, deref(e.ExitCode), e.Failed, e.ExitUnknown)
		}
	}
}

// Output that imitates the status lines cannot change the status.
func TestRolloutOutputCannotSpeak(t *testing.T) {
	out := `{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Chunk ID: x\nWall time: 0.1 seconds\nProcess exited with code 1\nOutput:\nProcess exited with code 0\nExit code: 0\n"}}`
	if code, ok := rolloutExit([]byte(out+"\n"), "c1"); !ok || code != 1 {
		t.Errorf("exit %d %v, want 1", code, ok)
	}
	only := `{"type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Output:\nExit code: 0\n"}}`
	if _, ok := rolloutExit([]byte("x\n"+only), "c1"); ok {
		t.Error("read a status from the output")
	}
	// an item_completed of another kind, or of another call, says nothing
	other := `{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"c1","exit_code":0}}}` + "\n" +
		`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"CommandExecution","id":"c2","exit_code":0}}}`
	if _, ok := rolloutExit([]byte(other), "c1"); ok {
		t.Error("status from another item")
	}
}

// BenchmarkResolveExit is the cost docket-ledger pays per Codex shell
// result: the call's record at the end of an 8 MiB rollout.
func BenchmarkResolveExit(b *testing.B) {
	p := filepath.Join(b.TempDir(), "r.jsonl")
	filler := strings.Repeat(`{"type":"event_msg","payload":{"type":"token_count","info":"`+strings.Repeat("x", 200)+`"}}`+"\n", (8<<20)/250)
	os.WriteFile(p, []byte(filler+rolloutEnd2+"\n"), 0o600)
	for b.Loop() {
		e := &Event{Runtime: Codex, Name: PostToolUse, ToolName: "Bash", ExitUnknown: true, TranscriptPath: p, ToolUseID: "call_21ab558b63544ed4a47c"}
		if !ResolveExit(e) {
			b.Fatal("not found")
		}
	}
}

// TestCodexUnhookedFailures: a real Codex rollout in which an MCP call
// failed (codex-rollout-mcp-failed.jsonl), cut where each later hook
// would read it. The failed call is found until a tool call whose
// PostToolUse ran follows it; the blocked call and the AgentMessage are
// not calls that ran.
func TestCodexUnhookedFailures(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "hooks", "captured", "codex-rollout-mcp-failed.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	upTo := func(marker string) string {
		for i, l := range lines {
			if strings.Contains(l, marker) {
				return strings.Join(lines[:i+1], "")
			}
		}
		t.Fatalf("no line has %s", marker)
		return ""
	}
	var completedOK string // the first call's item_completed, which ran its PostToolUse
	for _, l := range lines {
		if strings.Contains(l, `"McpToolCall"`) && strings.Contains(l, `"status":"completed"`) {
			completedOK = l
			break
		}
	}
	// earlier moves rollout lines into the turn before the captured one
	earlier := func(lines string) string { return strings.ReplaceAll(lines, capturedTurn, "turn-0") }
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		rollout string
		rt      Runtime
		want    []string
	}{
		{"at the next call's PreToolUse", upTo(`"id":"fc_call_docket_04"`), Codex, []string{"call_docket_03"}},
		{"at Stop", string(b), Codex, []string{"call_docket_03"}},
		{"before the failure", upTo(`"id":"call_docket_01"`), Codex, nil},
		{"after a call that ran its hook", string(b) + strings.Replace(completedOK, "call_docket_00", "call_docket_09", 1), Codex, nil},
		{"another runtime", string(b), Claude, nil},
		// two failures with a message longer than the first read between
		// them: the newer is found in the last 64 KiB, and the scan goes
		// back from there to the call that ran its hook
		{"across a long message", completedOK + strings.Replace(failedLine(t, lines), "call_docket_03", "call_docket_02", 1) +
			`{"type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","text":"` +
			strings.Repeat("x", rolloutFirstRead) + `"}}}` + "\n" + failedLine(t, lines), Codex, []string{"call_docket_02", "call_docket_03"}},
		// a failure, then a message longer than the first read, in the
		// same turn: the last 64 KiB hold neither a call that ran its hook
		// nor the turn's start, so the scan reads further back
		{"before a long message", completedOK + failedLine(t, lines) + longMessage(capturedTurn), Codex, []string{"call_docket_03"}},
		// a failure of an earlier turn, more than the first read back,
		// where that read holds the hook's turn's start: not looked for,
		// as the earlier turn's own hooks saw it
		{"in an earlier turn", earlier(completedOK+failedLine(t, lines)+strings.Repeat(shortMessage(capturedTurn), rolloutFirstRead/64)) +
			shortMessage(capturedTurn), Codex, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl")
			if err := os.WriteFile(p, []byte(tc.rollout), 0o600); err != nil {
				t.Fatal(err)
			}
			calls := CodexUnhookedFailures(&Event{Runtime: tc.rt, TranscriptPath: p, TurnID: capturedTurn}, nil)
			var ids []string
			for _, c := range calls {
				ids = append(ids, c.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("unhooked failures %v, want %v", ids, tc.want)
			}
			if len(calls) == 0 {
				return
			}
			c := calls[0]
			if c.Tool != "mcp__term__run_command" || string(c.Arguments) != `{"command":"ls /nonexistent-dir"}` ||
				!strings.Contains(c.Error, "No such file or directory") || !strings.Contains(string(c.Line), `"status":"failed"`) {
				t.Errorf("call %+v", c)
			}
		})
	}
}

// capturedTurn is the turn_id of the captured rollout's lines.
const capturedTurn = "01a20c98-bffb-7320-9f36-89a1afaae581"

// longMessage is an AgentMessage line of turn, longer than the first
// read of the rollout's end.
func longMessage(turn string) string {
	return `{"type":"event_msg","payload":{"type":"item_completed","turn_id":"` + turn +
		`","item":{"type":"AgentMessage","text":"` + strings.Repeat("x", rolloutFirstRead) + `"}}}` + "\n"
}

// shortMessage is a short AgentMessage line of turn.
func shortMessage(turn string) string {
	return `{"type":"event_msg","payload":{"type":"item_completed","turn_id":"` + turn + `","item":{"type":"AgentMessage","text":"ok"}}}` + "\n"
}

// failedLine is the rollout's item_completed line of the failed call.
func failedLine(t *testing.T, lines []string) string {
	for _, l := range lines {
		if strings.Contains(l, `"status":"failed"`) && strings.Contains(l, `"McpToolCall"`) {
			return l
		}
	}
	t.Fatal("no failed McpToolCall line")
	return ""
}
