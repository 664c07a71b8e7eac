package openclaw

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/internal/canonjson"
)

// node returns a Node binary: the one e2e/install-openclaw.sh installed,
// else node on PATH. Without one the tests skip, and fail under CI=true.
func node(t *testing.T) string {
	t.Helper()
	var candidates []string
	if d := os.Getenv("DOCKET_OPENCLAW_BIN"); d != "" {
		candidates = append(candidates, filepath.Join(d, "node"))
	}
	candidates = append(candidates, filepath.Join("..", "..", "e2e", ".npm-openclaw", "bin", "node"))
	for _, p := range candidates {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			abs, _ := filepath.Abs(p)
			return abs
		}
	}
	if p, err := exec.LookPath("node"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("node not found (run e2e/install-openclaw.sh)")
	}
	t.Skip("node not found")
	return ""
}

// TestPlugin runs the plugin's own unit tests (index.test.mjs).
func TestPlugin(t *testing.T) {
	cmd := exec.Command(node(t), "--test", "--test-reporter=tap", "index.test.mjs")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("# fail 0")) {
		t.Fatalf("node --test:\n%s", out)
	}
}

// TestCanonicalDigestMatchesGo: the arguments digest the plugin sends is
// the one docket computes, or every proposal would be refused (400
// tool_input). The inputs are what tool arguments hold: nested keys in
// every order, non-ASCII keys and text, HTML characters, control
// characters, line and paragraph separators, numbers.
func TestCanonicalDigestMatchesGo(t *testing.T) {
	inputs := []string{
		`{"command":"ls -la"}`,
		`{"b":1,"a":{"d":[3,2,{"z":null,"y":true}],"c":"x"}}`,
		`{"path":"<a href=\"x\">&amp;</a>"}`,
		`{"text":"tab\tnew\nline\u0001\u001f\u007f bell\b feed\f"}`,
		`{"sep":"a\u2028b\u2029c"}`,
		`{"é":"ü","e":"z","ａ":"wide","😀":"astral","ﬀ":"bmp high"}`,
		`{"n":[0,-1,1.5,1e21,1e-7,12345678901234567]}`,
		`{"empty":{},"list":[],"s":""}`,
	}
	script := `import { canonicalJSON, sha256 } from "./index.js";
let data = ""; process.stdin.on("data", (c) => (data += c)); process.stdin.on("end", () => {
  for (const line of data.split("\n").filter(Boolean)) {
    const v = JSON.parse(line);
    console.log(JSON.stringify({ sent: JSON.stringify(v), digest: sha256(canonicalJSON(v)) }));
  }
});`
	cmd := exec.Command(node(t), "--input-type=module", "-e", script)
	cmd.Stdin = strings.NewReader(strings.Join(inputs, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("node printed %d lines for %d inputs", len(lines), len(inputs))
	}
	for i, in := range inputs {
		// the plugin sends JSON.stringify of the arguments as tool_input;
		// docket canonicalises what it receives
		var got struct{ Sent, Digest string }
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatal(err)
		}
		c, err := canonjson.Canonical([]byte(got.Sent))
		if err != nil {
			t.Fatal(err)
		}
		if want := canonjson.SHA256(c); got.Digest != want {
			t.Errorf("%s: plugin %s, docket %s (canonical %s)", in, got.Digest, want, c)
		}
	}
}
