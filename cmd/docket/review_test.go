package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/docket/docket/store"
)

// storeEnv points the CLI at a fresh SQLite store and returns it, open,
// for seeding and checking.
func storeEnv(t *testing.T) store.Store {
	t.Helper()
	t.Setenv("DOCKET_HOME", t.TempDir())
	t.Setenv("DOCKET_STORE_DSN", "")
	t.Setenv("USER", "ana")
	s, err := openCLIStore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// docket runs the CLI and returns stdout, stderr and the exit code.
func docket(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := report(run(context.Background(), args, strings.NewReader(""), &out, &errb), &errb)
	return out.String(), errb.String(), code
}

func seedLesson(t *testing.T, s store.Store, key string, text ...string) store.WriteResult {
	t.Helper()
	lesson := "Run go test ./... before any deploy"
	if len(text) > 0 {
		lesson = text[0]
	}
	r, err := s.WriteDecision(context.Background(), store.Decision{
		Workspace: "ws", ActionID: "a-" + key, IdempotencyKey: key, Decision: store.Block,
		ReasoningSummary: "deploy without tests", Judge: store.Judge{Kind: "llm"}, ToolName: "Bash",
		MemoryToWrite: store.MemoryToWrite{Lessons: []string{lesson}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReviewCommand(t *testing.T) {
	s := storeEnv(t)
	r := seedLesson(t, s, "k1")
	mem, item := r.Memories[0], r.Review[0]

	out, _, code := docket(t, "review")
	if code != 0 || !strings.Contains(out, item) || !strings.Contains(out, "can_use_as_instruction") {
		t.Fatalf("review list (exit %d):\n%s", code, out)
	}
	out, _, code = docket(t, "review", "show", item)
	for _, want := range []string{mem, "generated", "requires_confirmation", "suggested   can_use_as_instruction", "could influence", "workspace ws", "block Bash"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("review show lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	tests := []struct {
		args []string
		code int
		errs string
	}{
		{[]string{"review", "bless", mem}, 2, "unknown review action"},
		{[]string{"review", "confirm"}, 2, "needs exactly one ID"},
		{[]string{"review", "merge", mem}, 2, "--into"},
		{[]string{"review", "confirm", mem, "--as", "gospel"}, 2, "--as is instruction or evidence"},
		{[]string{"review", "list", "--status", "open"}, 2, "--status"},
		{[]string{"review", "confirm", "mem_missing"}, 1, "not found"},
		{[]string{"review", "restrict_scope", mem, "--visibility", "org"}, 2, "cannot widen"},
		{[]string{"review", "evidence_only", mem, "--by", "bo", "--note", "not sure yet"}, 0, ""},
		{[]string{"review", "confirm", item}, 1, "already resolved"},
	}
	for _, tt := range tests {
		_, errs, code := docket(t, tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.errs) {
			t.Errorf("docket %v: exit %d stderr %q, want exit %d and %q", tt.args, code, errs, tt.code, tt.errs)
		}
	}
	m, err := s.GetMemory(context.Background(), mem)
	if err != nil || m.UsePolicy != store.Evidence {
		t.Fatalf("after evidence_only: %s %v", m.UsePolicy, err)
	}
	// Confirm a second lesson as instruction through the CLI, JSON output.
	r2 := seedLesson(t, s, "k2", "Ask before deploying on a Friday")
	out, _, code = docket(t, "review", "confirm", r2.Memories[0], "--as", "instruction", "--behavior", "escalate", "--json")
	var got struct{ Memory store.Memory }
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Memory.UsePolicy != store.Instruction || got.Memory.ConfirmedBy != "ana" || got.Memory.Behavior != "escalate" {
		t.Fatalf("confirm --json (exit %d): %s", code, out)
	}
	// edit changes what a confirmed lesson requires
	if _, errs, code := docket(t, "review", "edit", r2.Memories[0], "--behavior", "sometimes"); code != 2 || !strings.Contains(errs, "--behavior is one of") {
		t.Errorf("edit --behavior sometimes: exit %d %q", code, errs)
	}
	if _, errs, code := docket(t, "review", "reject", r2.Memories[0], "--behavior", "block"); code != 2 || !strings.Contains(errs, "--behavior goes with") {
		t.Errorf("reject --behavior: exit %d %q", code, errs)
	}
	if _, errs, code := docket(t, "review", "edit", r2.Memories[0], "--behavior", "block"); code != 0 {
		t.Errorf("edit --behavior block: exit %d %q", code, errs)
	}
	if m, err := s.GetMemory(context.Background(), r2.Memories[0]); err != nil || m.Behavior != "block" {
		t.Errorf("after edit: behavior %q (%v)", m.Behavior, err)
	}
	out, _, _ = docket(t, "review", "list")
	if !strings.Contains(out, "review queue is empty") {
		t.Errorf("queue after both resolved:\n%s", out)
	}
	out, _, _ = docket(t, "review", "list", "--status", "resolved", "--json")
	var rows []json.RawMessage
	if json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 {
		t.Errorf("resolved list: %s", out)
	}
}

func TestReviewHelp(t *testing.T) {
	var errb bytes.Buffer
	if err := runReview(context.Background(), []string{"-h"}, nil, io.Discard, &errb); err != nil || !strings.Contains(errb.String(), "Exit codes") {
		t.Fatalf("review -h: %v %q", err, errb.String())
	}
}
