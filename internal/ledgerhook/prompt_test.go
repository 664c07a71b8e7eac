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

// Gemini CLI fires BeforeAgent again for the retry an AfterAgent block
// forces, with docket's reason as the prompt: while the gate counts the
// session's stop as blocked, that is not a prompt of the user's and
// starts no chain. The same count does not silence Claude Code's
// prompts (it fires none for the continuation), and once a stop goes
// through (count 0) Gemini's next BeforeAgent is recorded again.
func TestGeminiForcedRetryIsNoPrompt(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	h, _ := home.Resolve()
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	prompt := func(rt, event, session string) int {
		t.Helper()
		payload := `{"session_id":"` + session + `","transcript_path":"/dev/null","cwd":"/tmp","hook_event_name":"` + event + `","prompt":"docket: your final message makes claims…"}`
		var out, errb bytes.Buffer
		if code := Main(context.Background(), []string{"--runtime", rt}, strings.NewReader(payload), &out, &errb, Options{}); code != 0 || out.Len() != 0 {
			t.Fatalf("%s %s: exit %d, stdout %q, stderr %s", rt, event, code, out.String(), errb.String())
		}
		l, _ := ledger.Open(h)
		es, _ := l.ReadVerified(session)
		return len(es)
	}
	blocks := func(session, n string) {
		p := h.GateBlocksPath(session, "")
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if n := prompt("gemini", "BeforeAgent", "g1"); n != 1 {
		t.Fatalf("the user's prompt: %d entries, want 1", n)
	}
	blocks("g1", "1")
	if n := prompt("gemini", "BeforeAgent", "g1"); n != 1 {
		t.Fatalf("the forced retry was recorded: %d entries", n)
	}
	blocks("g1", "0")
	if n := prompt("gemini", "BeforeAgent", "g1"); n != 2 {
		t.Fatalf("a prompt after the stop went through: %d entries, want 2", n)
	}
	blocks("c1", "2")
	if n := prompt("claude", "UserPromptSubmit", "c1"); n != 1 {
		t.Fatalf("Claude Code's prompt while blocked: %d entries, want 1", n)
	}
	blocks("g2", "garbage")
	if n := prompt("gemini", "BeforeAgent", "g2"); n != 1 {
		t.Fatalf("an unreadable count must read as no block: %d entries", n)
	}
}
