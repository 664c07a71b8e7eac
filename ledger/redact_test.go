package ledger

import (
	"bytes"
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
