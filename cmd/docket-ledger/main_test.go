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
	// PRIVATE+KEY+<name>+<hash>+<key>, where the key's base64 may hold '+'
	seedField := strings.SplitN(skey, "+", 5)[4]
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
