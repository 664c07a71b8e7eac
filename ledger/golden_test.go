package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
)

// goldenLedger appends the same records, with a fixed HMAC key and clock,
// to a fresh ledger and returns the ledger's and the pack's bytes.
func goldenLedger(t *testing.T) (ledgerBytes, pack []byte) {
	t.Helper()
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Init(h); err != nil {
		t.Fatal(err)
	}
	key := strings.Repeat("0123456789abcdef", 4)
	if err := os.Chmod(h.HMACKeyPath(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.HMACKeyPath(), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(h)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	l.now = func() time.Time { tick = tick.Add(1500 * time.Millisecond); return tick }
	payload := []byte(`{"session_id":"g","tool_name":"Bash","tool_input":{"command":"echo \"<a & b>\"\n","z":1.50,"a":[true,null]}}`)
	records := []Record{
		{Kind: KindToolCall, Runtime: "claude", Event: "PostToolUse", Tool: "Bash", ToolUseID: "toolu_1",
			Args: json.RawMessage(`{"command":"echo \"<a & b>\"\n","z":1.50,"a":[true,null]}`),
			Body: map[string]any{"failed": false, "tool_kind": "shell", "cwd": "/w é", "exit_code": 0, "duration_ms": int64(12),
				"peer": map[string]any{"uid": uint32(1000), "gid": uint32(1000), "pid": int32(42)}},
			Artifacts: []Artifact{{Name: "payload.json", Data: bytes.NewReader(payload)},
				{Name: "stdout", Data: strings.NewReader("line\u2028one\n")}, {Name: "stderr", Data: strings.NewReader("")},
				{Name: "secret", Data: strings.NewReader("cat hmac.key: " + key)}}},
		{Kind: KindToolFailure, Runtime: "codex", Event: "PostToolUseFailure", Tool: "apply_patch", AgentID: "a\x01",
			Args: json.RawMessage(` {"input": "*** Begin Patch\t\u00e9"} `), Body: map[string]any{"failed": true, "error": "bad\xffbyte"},
			Artifacts: []Artifact{{Name: "error", Data: strings.NewReader(strings.Repeat("e", 40_000))}}},
		{Kind: KindValidatorPass, Runtime: "docket", Tool: "go_test_pass", Body: map[string]any{"claim": "done", "redacted": []string{"x"}}},
	}
	for i, r := range records {
		if _, err := l.Append("golden", r); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	sf := filesFor(h, "golden")
	if ledgerBytes, err = os.ReadFile(sf.ledger); err != nil {
		t.Fatal(err)
	}
	if pack, err = os.ReadFile(filepath.Join(sf.artifacts, PackName)); err != nil {
		t.Fatal(err)
	}
	return ledgerBytes, pack
}

// The bytes an append writes for a given input are the ones the
// reflection-based encoders wrote before (digests taken from that code):
// entries, bundles, manifests and redaction all unchanged.
func TestAppendBytesUnchanged(t *testing.T) {
	led, pack := goldenLedger(t)
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	if got, want := sum(led), goldenLedgerSHA256; got != want {
		t.Errorf("ledger bytes changed: sha256 %s, want %s", got, want)
	}
	if got, want := sum(pack), goldenPackSHA256; got != want {
		t.Errorf("pack bytes changed: sha256 %s, want %s", got, want)
	}
}

// Digests of goldenLedger's files as the encoding/json-based append wrote
// them (commit b5dba93).
const (
	goldenLedgerSHA256 = "5f82e07f1b7b646ae2d94fcd5a3cc9d5172be2270e0f807763a6213cda10eb2e"
	goldenPackSHA256   = "bc9bee5b02a57f242b8356fe23262477e8338a4e73501f7963e57394d4038aa2"
)
