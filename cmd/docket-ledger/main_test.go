package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

const realBash = "../../testdata/realdata/payloads/PostToolUse__serverless-plugins__002.json"

func setupHome(t testing.TB) home.Home {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("DOCKET_HOME", dir)
	h, _ := home.At(dir)
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestRecordsRealPayloads(t *testing.T) {
	h := setupHome(t)
	files, _ := filepath.Glob("../../testdata/realdata/payloads/PostToolUse__*.json")
	if len(files) < 100 {
		t.Fatalf("only %d real PostToolUse payloads found", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), nil, bytes.NewReader(b), &stdout, &stderr); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if stdout.Len() != 0 {
			t.Fatalf("%s: wrote %q to stdout", filepath.Base(f), stdout.String())
		}
	}
	l, _ := ledger.Open(h)
	sessions, _ := ledger.Sessions(h)
	total := 0
	for _, s := range sessions {
		es, err := l.ReadVerified(s)
		if err != nil {
			t.Fatal(err)
		}
		total += len(es)
	}
	if total != len(files) {
		t.Fatalf("%d entries for %d payloads", total, len(files))
	}
}

func TestFailureIsRecordedAsFailure(t *testing.T) {
	h := setupHome(t)
	payload := `{"session_id":"s1","hook_event_name":"PostToolUseFailure","tool_name":"Bash","tool_input":{"command":"make"},"error":"Exit code 2\nboom","is_interrupt":false,"cwd":"/w"}`
	if err := run(context.Background(), nil, strings.NewReader(payload), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	l, _ := ledger.Open(h)
	es, err := l.ReadVerified("s1")
	if err != nil || len(es) != 1 {
		t.Fatalf("%v %v", es, err)
	}
	if es[0].Kind != ledger.KindToolFailure || !strings.Contains(string(es[0].Body), `"failed":true`) {
		t.Fatalf("entry = %s %s", es[0].Kind, es[0].Body)
	}
	r, err := l.OpenArtifact(es[0], "error")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r)
	r.Close()
	if string(b) != "Exit code 2\nboom" {
		t.Fatalf("error artifact = %q", b)
	}
	if s, _ := h.SessionForDir("/w"); s != "s1" {
		t.Fatalf("session for dir = %q", s)
	}
}

// BenchmarkRun is the in-process cost of recording one real Bash call.
func BenchmarkRun(b *testing.B) {
	setupHome(b)
	payload, err := os.ReadFile(realBash)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := run(context.Background(), nil, bytes.NewReader(payload), io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

func recordOne(t *testing.T, h home.Home, rt string, payload []byte) *ledger.Entry {
	t.Helper()
	args := []string{}
	if rt != "" {
		args = []string{"--runtime", rt}
	}
	var stdout bytes.Buffer
	if err := run(context.Background(), args, bytes.NewReader(payload), &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	if stdout.Len() != 0 {
		t.Fatalf("stdout %q", stdout.String())
	}
	l, _ := ledger.Open(h)
	sessions, _ := ledger.Sessions(h)
	var last *ledger.Entry
	for _, s := range sessions {
		es, err := l.ReadVerified(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			if last == nil || e.Time >= last.Time {
				last = e
			}
		}
	}
	return last
}

func body(t *testing.T, e *ledger.Entry) map[string]any {
	t.Helper()
	var b map[string]any
	if err := json.Unmarshal(e.Body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

const captured = "../../testdata/hooks/captured/"

// The real Codex and Gemini payloads are recorded with their kind and
// with the failure the runtime reported, wherever it reported it.
func TestRecordsCapturedPayloads(t *testing.T) {
	for _, tc := range []struct {
		file, rt string
		kind     ledger.Kind
		toolKind string
		exit     any // body exit_code, nil when absent
		unknown  bool
	}{
		{"gemini-AfterTool-run_shell_command-exit2.json", "gemini", ledger.KindToolFailure, "shell", 2.0, false},
		{"gemini-AfterTool-run_shell_command.json", "gemini", ledger.KindToolCall, "shell", nil, false},
		{"gemini-AfterTool-write_file.json", "gemini", ledger.KindToolCall, "file_write", nil, false},
		{"gemini-AfterTool-replace.json", "", ledger.KindToolCall, "file_edit", nil, false},
		{"codex-PostToolUse-apply_patch.json", "codex", ledger.KindToolCall, "patch", 0.0, false},
		// no rollout at the captured transcript_path: the status is unknown,
		// and the entry says so rather than passing it off as a success
		{"codex-PostToolUse-Bash-exit2.json", "codex", ledger.KindToolCall, "shell", nil, true},
	} {
		h := setupHome(t)
		p, err := os.ReadFile(captured + tc.file)
		if err != nil {
			t.Fatal(err)
		}
		e := recordOne(t, h, tc.rt, p)
		b := body(t, e)
		if e.Kind != tc.kind || b["tool_kind"] != tc.toolKind || b["exit_code"] != tc.exit || (b["exit_unknown"] == true) != tc.unknown {
			t.Errorf("%s: %s %s", tc.file, e.Kind, e.Body)
		}
		if tc.rt == "gemini" && (e.ToolUseID == "" || b["tool_use_id_derived"] != true) {
			t.Errorf("%s: no derived tool_use_id: %q %s", tc.file, e.ToolUseID, e.Body)
		}
	}
}

// A failed Codex Bash call is recorded as a failure, and a successful one
// as a success, from the session's rollout as Codex 0.169.0 left it when
// the hook ran (testdata/hooks/captured/SOURCES.md).
func TestCodexStatusFromRollout(t *testing.T) {
	for _, tc := range []struct {
		payload, rollout string
		kind             ledger.Kind
		failed           bool
		exit             float64
	}{
		{"codex-PostToolUse-exec_command-exit2.json", "codex-rollout-at-PostToolUse-exit2.jsonl", ledger.KindToolFailure, true, 2},
		{"codex-PostToolUse-exec_command-exit0.json", "codex-rollout-at-PostToolUse-exit0.jsonl", ledger.KindToolCall, false, 0},
	} {
		h := setupHome(t)
		p, err := os.ReadFile(captured + tc.payload)
		if err != nil {
			t.Fatal(err)
		}
		rollout, _ := filepath.Abs(captured + tc.rollout)
		var m map[string]any
		json.Unmarshal(p, &m)
		m["transcript_path"] = rollout
		p, _ = json.Marshal(m)
		e := recordOne(t, h, "codex", p)
		b := body(t, e)
		if e.Kind != tc.kind || b["failed"] != tc.failed || b["exit_code"] != tc.exit || b["exit_unknown"] != nil || b["tool_kind"] != "shell" {
			t.Errorf("%s: %s %s", tc.payload, e.Kind, e.Body)
		}
	}
}
