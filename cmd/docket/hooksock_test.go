package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/server"
)

// A caller that talks to the socket directly cannot make the daemon open
// a file of its choosing through --args-file (a key, say).
func TestHookValidateRefusesArgsFile(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	validate := hookFuncs(nil)[hookclient.RouteValidate]
	for _, args := range [][]string{
		{"--session", "s", "--claim", "done", "--validator", "command_zero_exit", "--args-file", "/etc/shadow"},
		{"--session", "s", "--claim", "done", "--validator", "command_zero_exit", "-args-file=/etc/shadow"},
	} {
		var out, errb bytes.Buffer
		code := validate(context.Background(), server.HookCall{Args: args, Getenv: func(string) string { return "" }, Peer: hookclient.Peer{UID: uint32(os.Getuid())}}, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "--args-file is read by the client") {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errb.String())
		}
	}
}

func TestCallerCanRead(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open")
	closed := filepath.Join(dir, "closed")
	inner := filepath.Join(dir, "private")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Dir(dir), 0o755)) // t.TempDir makes its parent 0700
	must(os.Chmod(dir, 0o755))
	must(os.WriteFile(open, []byte("{}"), 0o644))
	must(os.WriteFile(closed, []byte("{}"), 0o600))
	must(os.Mkdir(inner, 0o700))
	must(os.WriteFile(filepath.Join(inner, "t.jsonl"), []byte("{}"), 0o644))
	must(os.Symlink(closed, filepath.Join(dir, "link")))
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242}
	self := hookclient.Peer{UID: uint32(os.Geteuid())}
	tests := []struct {
		name string
		path string
		peer hookclient.Peer
		ok   bool
	}{
		{"world-readable", open, other, true},
		{"owner only", closed, other, false},
		{"symlink to owner only", filepath.Join(dir, "link"), other, false},
		{"readable file in a private dir", filepath.Join(inner, "t.jsonl"), other, false},
		{"agent transcript", closed, other, false},
		{"the daemon's own user", closed, self, true},
		{"missing", filepath.Join(dir, "nope"), other, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "transcript_path"
			if tt.name == "agent transcript" {
				key = "agent_transcript_path"
			}
			ev := &hooks.Event{TranscriptPath: tt.path}
			if key == "agent_transcript_path" {
				ev = &hooks.Event{AgentTranscriptPath: tt.path}
			}
			err := callerCanRead(ev, tt.peer)
			if (err == nil) != tt.ok {
				t.Fatalf("callerCanRead(%s) = %v, want ok=%v", tt.path, err, tt.ok)
			}
		})
	}
}

// Each hook of the daemon checks the transcript it will read for a
// caller of another uid, whatever spelling the payload uses to name it:
// a transcript_path given twice (the decoders read the first, a JSON
// decode the last), a runtime named by flag or detected. None of these
// lets the gate or the ledger hook read a file the caller could not.
func TestDaemonHooksAdmitOnlyReadableTranscripts(t *testing.T) {
	_, d, proj := daemonEnv(t)
	dir := t.TempDir()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Dir(dir), 0o755))
	must(os.Chmod(dir, 0o755))
	open, closed := filepath.Join(dir, "open.jsonl"), filepath.Join(dir, "closed.jsonl")
	must(os.WriteFile(open, []byte("{}\n"), 0o644))
	must(os.WriteFile(closed, []byte("{}\n"), 0o600))
	other := hookclient.Peer{UID: uint32(os.Geteuid()) + 4242}
	q := strconv.Quote
	for _, pair := range [][2]string{{closed, open}, {open, closed}, {closed, closed}} {
		paths := `"transcript_path":` + q(pair[0]) + `,"transcript_path":` + q(pair[1])
		for _, tc := range []struct {
			route, payload string
			args           []string
		}{
			{hookclient.RouteGate, `{"hook_event_name":"Stop","session_id":"a1","cwd":` + q(proj) + `,"last_assistant_message":"All done.",` + paths + `}`, nil},
			{hookclient.RouteGate, `{"hook_event_name":"Stop","session_id":"a1","turn_id":"t1","cwd":` + q(proj) + `,"last_assistant_message":"All done.",` + paths + `}`, []string{"--runtime", "codex"}},
			{hookclient.RouteLedger, `{"hook_event_name":"PostToolUse","session_id":"a2","turn_id":"t1","cwd":` + q(proj) + `,"tool_name":"Bash","tool_use_id":"call_1","tool_input":{"command":"ls"},"tool_response":"ok",` + paths + `}`, []string{"-runtime=codex"}},
			{hookclient.RouteJudge, `{"hook_event_name":"PreToolUse","session_id":"a3","cwd":` + q(proj) + `,"tool_name":"Bash","tool_use_id":"toolu_1","tool_input":{"command":"ls"},` + paths + `}`, nil},
		} {
			_, out, errs := hookCall(t, d, tc.route, other, tc.payload, tc.args...)
			wantRefused := pair[0] == closed // the decoders read the first
			if refused := strings.Contains(errs, "not readable by the caller"); refused != wantRefused {
				t.Errorf("%s %q, transcripts %s then %s: refused %v, want %v\nstdout %s\nstderr %s", tc.route, tc.args, filepath.Base(pair[0]), filepath.Base(pair[1]), refused, wantRefused, out, errs)
			}
		}
	}
}
