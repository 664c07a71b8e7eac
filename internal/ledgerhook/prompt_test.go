package ledgerhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/trust"
)

func TestRecordPrompt(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	h, _ := home.Resolve()
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	// a real Claude Code payload
	payload, err := os.ReadFile("../../testdata/realdata/payloads/UserPromptSubmit__templar__001.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ SessionID, Prompt string }
	p.SessionID = jsonField(t, payload, "session_id")
	p.Prompt = jsonField(t, payload, "prompt")
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"--runtime", "claude"}, bytes.NewReader(payload), &out, &errb, Options{}); code != 0 || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out.String(), errb.String())
	}
	l, _ := ledger.Open(h)
	es, err := l.ReadVerified(p.SessionID)
	if err != nil || len(es) != 1 || es[0].Kind != ledger.KindUserPrompt || es[0].Event != "UserPromptSubmit" {
		t.Fatalf("entries %+v %v", es, err)
	}
	sum := sha256.Sum256([]byte(p.Prompt))
	if !strings.Contains(string(es[0].Body), `"prompt_sha256":"sha256:`+hex.EncodeToString(sum[:])+`"`) {
		t.Errorf("body %s", es[0].Body)
	}
	rc, err := l.OpenArtifact(es[0], "prompt.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if string(got) != p.Prompt {
		t.Errorf("prompt artifact %q", got)
	}
	o, ok, err := trust.ReadOrigin(h, l.Keys(), p.SessionID)
	if !ok || err != nil || o.OTag != trust.OTagOf(es[0]) || o.Seq != 0 {
		t.Errorf("origin %+v %v %v", o, ok, err)
	}
	// the trust levels were refreshed
	if _, err := os.Stat(filepath.Join(h.Root, trust.Dir, trust.LevelsFile)); err != nil {
		t.Errorf("no trust summary: %v", err)
	}
}

// A prompt that cannot be recorded exits 1: exit 2 would erase it.
func TestPromptFailureDoesNotBlock(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir()) // no keys
	for _, tt := range []struct {
		payload string
		code    int
	}{
		{`{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt":"hi"}`, 1},
		{`{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{}}`, 2},
	} {
		var out, errb bytes.Buffer
		if code := Main(context.Background(), []string{"--runtime", "claude"}, strings.NewReader(tt.payload), &out, &errb, Options{}); code != tt.code || out.Len() != 0 {
			t.Errorf("%s: exit %d, want %d (stdout %q)", tt.payload, code, tt.code, out.String())
		}
	}
}

func jsonField(t *testing.T, b []byte, k string) string {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	s, _ := m[k].(string)
	return s
}
