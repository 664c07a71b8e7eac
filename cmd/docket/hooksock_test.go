package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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

func TestRuntimeArg(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--runtime", "gemini"}, "gemini"},
		{[]string{"-runtime=codex"}, "codex"},
		{[]string{"--timeout", "12s", "--runtime", "gemini"}, "gemini"},
		{[]string{"--runtime", "claude", "--runtime=codex"}, "codex"},
		{[]string{"--no-store"}, ""},
		{[]string{"--runtime"}, ""},
	} {
		if got := runtimeArg(tt.args); got != tt.want {
			t.Errorf("runtimeArg(%q) = %q, want %q", tt.args, got, tt.want)
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
	// a key given twice: the hook's decoder reads the first, a JSON decode
	// the last; a closed file in either place is refused
	for _, pair := range [][2]string{{closed, open}, {open, closed}} {
		payload := []byte(`{"hook_event_name":"Stop","session_id":"s1","turn_id":"t1","transcript_path":` + strconv.Quote(pair[0]) + `,"transcript_path":` + strconv.Quote(pair[1]) + `}`)
		for _, args := range [][]string{nil, {"--runtime", "claude"}, {"--timeout", "12s", "-runtime=codex"}} {
			if err := callerCanRead(payload, args, other); err == nil {
				t.Errorf("duplicate transcript_path %q then %q (args %q): allowed", pair[0], pair[1], args)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "transcript_path"
			if tt.name == "agent transcript" {
				key = "agent_transcript_path"
			}
			payload, _ := json.Marshal(map[string]string{key: tt.path, "hook_event_name": "Stop"})
			err := callerCanRead(payload, nil, tt.peer)
			if (err == nil) != tt.ok {
				t.Fatalf("callerCanRead(%s) = %v, want ok=%v", tt.path, err, tt.ok)
			}
		})
	}
}
