package main

import (
	"bytes"
	"context"
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
