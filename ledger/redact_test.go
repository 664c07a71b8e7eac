package ledger

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// A secret split across reads at any position is still replaced, and
// bytes around it pass through unchanged.
func TestRedactReaderSplitsAnywhere(t *testing.T) {
	l := newTestLedger(t)
	secret := []byte(hex.EncodeToString(l.keys.hmacKey))
	secrets := l.keys.secrets()
	for _, wrap := range []struct {
		name string
		fn   func(io.Reader) io.Reader
	}{
		{"one byte", iotest.OneByteReader},
		{"half", iotest.HalfReader},
		{"data with EOF", iotest.DataErrReader},
		{"whole", func(r io.Reader) io.Reader { return r }},
	} {
		for _, pre := range []int{0, 1, 63, 64, 127, 40_000, 70_001} {
			in := append(bytes.Repeat([]byte("a"), pre), secret...)
			in = append(in, "tail"...)
			in = append(in, secret[:20]...) // a prefix alone is not the key
			rr := newRedactReader(wrap.fn(bytes.NewReader(in)), secrets)
			got, err := io.ReadAll(rr)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.Repeat("a", pre) + RedactionMarker + "tail" + string(secret[:20])
			if string(got) != want || rr.count != 1 {
				t.Fatalf("%s/%d: got %d bytes (count %d), want %d", wrap.name, pre, len(got), rr.count, len(want))
			}
		}
	}
}

// A body carrying the key is stored redacted and says so.
func TestBodyIsRedacted(t *testing.T) {
	l := newTestLedger(t)
	key := hex.EncodeToString(l.keys.hmacKey)
	e, err := l.Append("s1", Record{Kind: KindToolFailure, Tool: "Bash", Body: map[string]any{"error": "bad key " + key}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(e.Body), key) || !strings.Contains(string(e.Body), `"redacted":["body"]`) {
		t.Fatalf("body = %s", e.Body)
	}
	if rep, err := Verify(l.home, "s1", verifyOpts(l)); err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
}

// What an agent prints to get the key file past the scan: each output is
// made the way the tool makes it (the file is the hex text and a newline;
// base64 and base32 wrap at 76 columns).
func TestRedactKeyFileEncodings(t *testing.T) {
	l := newTestLedger(t)
	file := []byte(hex.EncodeToString(l.keys.hmacKey) + "\n")
	wrap := func(s string) string {
		var b strings.Builder
		for len(s) > 76 {
			b.WriteString(s[:76] + "\n")
			s = s[76:]
		}
		return b.String() + s + "\n"
	}
	for _, tc := range []struct{ name, out string }{
		{"cat", string(file)},
		{"base64 file", wrap(base64.StdEncoding.EncodeToString(file))},
		{"basenc --base64url file", wrap(base64.URLEncoding.EncodeToString(file))},
		{"base32 file", wrap(base32.StdEncoding.EncodeToString(file))},
		{"xxd -r -p file | base32", wrap(base32.StdEncoding.EncodeToString(l.keys.hmacKey))},
		{"xxd -r -p file | base64 -w0 | tr +/ -_", base64.RawURLEncoding.EncodeToString(l.keys.hmacKey)},
	} {
		got, n := redactBytes([]byte(tc.out), l.keys.secrets())
		if n == 0 || !strings.Contains(string(got), RedactionMarker) {
			t.Errorf("%s: not redacted: %q", tc.name, got)
		}
	}
}

// Every secret is scanned once: no encoding is listed twice.
func TestSecretsListedOnce(t *testing.T) {
	l := newTestLedger(t)
	seen := map[string]bool{}
	for _, s := range l.keys.secrets() {
		if seen[string(s)] {
			t.Errorf("listed twice: %q", s)
		}
		seen[string(s)] = true
	}
}

// The checkpoint key's base64 field is found whole even when it holds a
// '+' (a third of all keys do): `cut -d+ -f5 checkpoint.key` prints it.
func TestRedactCheckpointKeyFieldWithPlus(t *testing.T) {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = 0xfb // base64 of 0xfb 0xfb 0xfb is "+/v7": '+' guaranteed
	}
	field := base64.StdEncoding.EncodeToString(append([]byte{1}, seed...))
	if !strings.Contains(field, "+") {
		t.Fatalf("test key field %q has no '+'", field)
	}
	k := &Keys{skey: "PRIVATE+KEY+docket-checkpoint+8216f3cc+" + field}
	for _, out := range []string{field + "\n", "key: " + field, hex.EncodeToString(seed)} {
		got, n := redactBytes([]byte(out), k.secrets())
		if n == 0 || strings.Contains(string(got), field) || strings.Contains(string(got), hex.EncodeToString(seed)) {
			t.Errorf("%q: not redacted: %q", out, got)
		}
	}
}
