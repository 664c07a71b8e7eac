package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	t.Setenv("DOCKET_HEADLESS", "")
	tests := []struct {
		name    string
		args    []string
		stdin   string
		wantErr string
		stdout  string // substring; "" means empty stdout
	}{
		{"garbage", nil, "nope", "not a JSON object", ""},
		{"extra arg", []string{"x"}, "{}", "unexpected argument", ""},
		{"stop event", nil, `{"session_id":"s","hook_event_name":"Stop"}`, "", ""},
		{"safe read", nil, `{"session_id":"s","hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Read","tool_input":{"file_path":"/w/a.go"}}`, "", ""},
		{"keys", nil, `{"session_id":"s","hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Bash","tool_input":{"command":"cat $DOCKET_HOME/keys/hmac.key"}}`, "", `"permissionDecision":"deny"`},
		{"push main", nil, `{"session_id":"s","hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Bash","tool_input":{"command":"git push origin main"}}`, "", `"permissionDecision":"ask"`},
		{"headless push, no approval", []string{"-headless", "-no-store"}, `{"session_id":"s","hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Bash","tool_input":{"command":"git push origin main"}}`, "", `"permissionDecision":"deny"`},
		{"bad tool input", nil, `{"session_id":"s","hook_event_name":"PreToolUse","cwd":"/w","tool_name":"Bash","tool_input":"rm -rf /"}`, "", `"permissionDecision":"deny"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			err := run(context.Background(), tc.args, strings.NewReader(tc.stdin), &out, &errb)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
				if out.Len() != 0 {
					t.Errorf("stdout on error: %q", out.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v (stderr %s)", err, errb.String())
			}
			if tc.stdout == "" && out.Len() != 0 || !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("stdout %q, want %q", out.String(), tc.stdout)
			}
			if out.Len() > 0 && (!json.Valid(out.Bytes()) || bytes.Count(out.Bytes(), []byte("\n")) != 1) {
				t.Errorf("stdout is not exactly one JSON object: %q", out.String())
			}
		})
	}
}

// Every real payload in testdata gets a contract-valid answer from the
// binary's run, with exactly one JSON object or nothing on stdout.
func TestRunRealPayloads(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	files, _ := filepath.Glob("../../testdata/realdata/payloads/PreToolUse__*.json")
	if len(files) == 0 {
		t.Fatal("no payloads")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var out, errb bytes.Buffer
		if err := run(context.Background(), []string{"-no-store"}, bytes.NewReader(b), &out, &errb); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if out.Len() > 0 {
			var v struct {
				HSO struct {
					Event    string `json:"hookEventName"`
					Decision string `json:"permissionDecision"`
					Reason   string `json:"permissionDecisionReason"`
				} `json:"hookSpecificOutput"`
			}
			if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.HSO.Event != "PreToolUse" || v.HSO.Reason == "" {
				t.Errorf("%s: answer %q", filepath.Base(f), out.String())
			}
		}
	}
}

// The binary's Interrupt turns a SIGINT into a cancelled context (and
// keeps the process alive to answer): the waits that use it end with an
// answer instead of a killed hook.
func TestInterruptCancelsOnSIGINT(t *testing.T) {
	ctx, stop := options.Interrupt(context.Background())
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("SIGINT did not cancel the wait's context")
	}
}
