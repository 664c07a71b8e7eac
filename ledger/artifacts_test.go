package ledger

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/internal/canonjson"
)

// opaque hides a reader's type, so writeBundle streams it.
type opaque struct{ io.Reader }

// The in-memory path for *bytes.Reader and *strings.Reader writes the
// bytes, manifest and redaction list the streaming path writes.
func TestWriteBundleInMemoryMatchesStreaming(t *testing.T) {
	l := newTestLedger(t)
	secrets := l.keys.secrets()
	hexKey := hex.EncodeToString(l.keys.hmacKey)
	b64Key := base64.StdEncoding.EncodeToString(l.keys.hmacKey)
	big := strings.Repeat("x", redactChunk)
	tests := []struct {
		name string
		data []string // one artifact each
	}{
		{"empty", []string{""}},
		{"small", []string{"ok  ./... 0.2s\n", `{"command":"ls"}`}},
		{"secret alone", []string{hexKey}},
		{"secret inside", []string{"key=" + hexKey + "\nand " + b64Key + " again " + hexKey}},
		{"upper case hex", []string{"K " + strings.ToUpper(hexKey) + " K"}},
		{"secret at the chunk end", []string{big[:redactChunk-len(hexKey)] + hexKey}},
		{"exactly one chunk", []string{big}},
		{"one chunk and a byte", []string{big + "y"}},
		{"secret past one chunk", []string{big + hexKey}},
		{"over the flush size", []string{strings.Repeat("z", bundleFlush+7), "small", hexKey}},
		{"many", []string{"a", "", hexKey, big, "b" + b64Key}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name string, wrap func(string) io.Reader) ([]byte, string, int64, []string) {
				f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				f.WriteString("prefix")
				var arts []Artifact
				for i, d := range tt.data {
					arts = append(arts, Artifact{Name: "f" + string(rune('a'+i)), Data: wrap(d)})
				}
				m, end, red, err := writeBundle(f, 6, 0, arts, secrets)
				if err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(f.Name())
				if err != nil {
					t.Fatal(err)
				}
				return b, m, end, red
			}
			stream := func(s string) io.Reader { return opaque{strings.NewReader(s)} }
			for _, wrap := range []struct {
				name string
				fn   func(string) io.Reader
			}{
				{"strings", func(s string) io.Reader { return strings.NewReader(s) }},
				{"bytes", func(s string) io.Reader { return bytes.NewReader([]byte(s)) }},
			} {
				want, wm, wend, wred := write("stream-"+wrap.name, stream)
				got, gm, gend, gred := write(wrap.name, wrap.fn)
				if !bytes.Equal(got, want) || gm != wm || gend != wend || strings.Join(gred, ",") != strings.Join(wred, ",") {
					t.Fatalf("%s: in-memory bundle differs from streamed: %d/%d bytes, %s/%s, end %d/%d, redacted %v/%v",
						wrap.name, len(got), len(want), gm, wm, gend, wend, gred, wred)
				}
				if bytes.Contains(got, []byte(hexKey)) || bytes.Contains(got, []byte(b64Key)) {
					t.Fatalf("%s: key material in the pack", wrap.name)
				}
				if int64(len(got)) != gend {
					t.Fatalf("%s: bundle ends at %d, pack has %d bytes", wrap.name, gend, len(got))
				}
				f, _ := os.Open(filepath.Join(dir, wrap.name))
				b, err := readBundle(f, gend, gend, gm)
				if err != nil {
					t.Fatalf("%s: read back: %v", wrap.name, err)
				}
				if _, err := b.check(make([]byte, 4096)); err != nil {
					t.Fatalf("%s: check: %v", wrap.name, err)
				}
				f.Close()
			}
		})
	}
}

// The manifest written directly is canonjson's encoding of it, for names
// that are plain and names that are not.
func TestAppendManifestIsCanonical(t *testing.T) {
	for _, names := range [][]string{
		{"payload.json", "input.json", "stdout", "torn-pack"},
		{"a b", "x~!@#$%^&*()_+=-[]{};:',<.>?"},
		{`q"uote`, "é", "\u2028", "tab\tname", "bad\xffutf8", "del\x7f"},
		{},
	} {
		var files []ManifestFile
		for i, n := range names {
			files = append(files, ManifestFile{Name: n, Size: int64(i * 1000), SHA256: strings.Repeat("ab", 32)})
		}
		want, err := canonjson.Marshal(Manifest{V: 1, Files: files})
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendManifest([]byte("pre"), files)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != "pre"+string(want) {
			t.Errorf("appendManifest(%q) = %s, want %s", names, got[3:], want)
		}
	}
}

// readFile returns what os.ReadFile returns.
func TestReadFileMatchesOS(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 511, 512, 513, 70_000} {
		p := filepath.Join(dir, "f")
		data := bytes.Repeat([]byte("v"), n)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readFile(p)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("readFile(%d bytes) = %d bytes, %v", n, len(got), err)
		}
	}
	if _, err := readFile(filepath.Join(dir, "missing")); !isNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := readFile(dir); err == nil {
		t.Fatal("reading a directory succeeded")
	}
}
