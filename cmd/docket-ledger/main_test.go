package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
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

// A Bash call that printed the keys (`cat $DOCKET_HOME/keys/hmac.key`, the
// checkpoint key, their base64) leaves no key bytes in the pack or the
// ledger, and the entry says what was redacted.
func TestKeyMaterialIsRedacted(t *testing.T) {
	h := setupHome(t)
	hmacFile, err := os.ReadFile(h.HMACKeyPath())
	if err != nil {
		t.Fatal(err)
	}
	skeyFile, err := os.ReadFile(h.CheckpointKeyPath())
	if err != nil {
		t.Fatal(err)
	}
	hexKey := strings.TrimSpace(string(hmacFile))
	raw, _ := hex.DecodeString(hexKey)
	skey := strings.TrimSpace(string(skeyFile))
	seedField := skey[strings.LastIndexByte(skey, '+')+1:]
	for _, tc := range []struct {
		name, stdout string
		secrets      []string
	}{
		{"hex", string(hmacFile), []string{hexKey}},
		{"upper hex", strings.ToUpper(hexKey), []string{strings.ToUpper(hexKey)}},
		{"base64", base64.StdEncoding.EncodeToString(raw) + "\n", []string{base64.StdEncoding.EncodeToString(raw)}},
		{"checkpoint key", "x" + skey + "y", []string{skey, seedField}},
		{"both in a long output", strings.Repeat("z", 100_000) + hexKey + strings.Repeat("q", 70_000) + skey, []string{hexKey, skey, seedField}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			session := "redact-" + strings.ReplaceAll(tc.name, " ", "-")
			payload, _ := json.Marshal(map[string]any{
				"session_id": session, "hook_event_name": "PostToolUse", "tool_name": "Bash", "cwd": "/w",
				"tool_input":    map[string]any{"command": "cat " + h.HMACKeyPath()},
				"tool_response": map[string]any{"stdout": tc.stdout, "stderr": "", "interrupted": false},
			})
			if err := run(context.Background(), nil, bytes.NewReader(payload), io.Discard, io.Discard); err != nil {
				t.Fatal(err)
			}
			pack, err := os.ReadFile(filepath.Join(h.SessionArtifactsDir(session), ledger.PackName))
			if err != nil {
				t.Fatal(err)
			}
			line, err := os.ReadFile(h.LedgerPath(session))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.secrets {
				if bytes.Contains(pack, []byte(s)) || bytes.Contains(line, []byte(s)) {
					t.Fatalf("key material %.12s… stored", s)
				}
			}
			if bytes.Contains(pack, raw) {
				t.Fatal("raw key bytes stored")
			}
			if !bytes.Contains(pack, []byte(ledger.RedactionMarker)) {
				t.Fatal("no redaction marker in the pack")
			}
			l, _ := ledger.Open(h)
			es, err := l.ReadVerified(session)
			if err != nil || len(es) != 1 {
				t.Fatalf("read: %d entries, %v", len(es), err)
			}
			if !strings.Contains(string(es[0].Body), `"redacted":["payload.json","response.json","stdout"]`) {
				t.Fatalf("body does not record the redaction: %s", es[0].Body)
			}
			r, err := l.OpenArtifact(es[0], "stdout")
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(r)
			r.Close()
			want := tc.stdout
			for _, s := range tc.secrets {
				want = strings.ReplaceAll(want, s, ledger.RedactionMarker)
			}
			if string(got) != want {
				t.Fatalf("stdout artifact = %.80q…, want %.80q…", got, want)
			}
		})
	}
}
