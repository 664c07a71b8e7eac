package ledger

import (
	"bytes"
	"reflect"
	"testing"
)

func FuzzParseEntry(f *testing.F) {
	l := newTestLedger(f)
	for _, e := range appendN(f, l, "s1", 3) {
		line, _ := encodeEntry(e)
		f.Add(line)
	}
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1,"seq":-1}`))
	f.Add([]byte("\xff"))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEntry(line)
		if err != nil {
			return
		}
		again, err := encodeEntry(e)
		if err != nil {
			t.Fatalf("parsed entry does not encode: %v", err)
		}
		if !bytes.Equal(again, line) {
			t.Fatalf("round trip changed bytes:\n%s\n%s", line, again)
		}
	})
}

func FuzzCheckInclusion(f *testing.F) {
	l := newTestLedger(f)
	appendN(f, l, "s1", 4)
	p, err := Prove(l.home, "s1", 2, verifyOpts(l))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(p.Marshal())
	f.Fuzz(func(t *testing.T, text []byte) {
		CheckInclusion(text, l.keys.VerifierKey()) // must not panic
	})
}

// decodeLine never panics, and on every line ParseEntry accepts (the
// canonical ones) it decodes the same entry.
func FuzzDecodeLine(f *testing.F) {
	l := newTestLedger(f)
	for _, e := range appendN(f, l, "s1", 2) {
		line, _ := encodeEntry(e)
		f.Add(line)
	}
	e, _ := l.Append("s1", Record{Kind: KindToolFailure, Tool: "Bash\t\"x\"", AgentID: "a\u2028b",
		Body: map[string]any{"error": "a\\\"b}{", "n": []any{1.5, true, nil, map[string]any{"k": "]"}}}})
	line, _ := encodeEntry(e)
	f.Add(line)
	f.Add([]byte(`{"v":1,"body":{"a":"}"}}`))
	f.Add([]byte(`{"v":1,"body":1}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, err := decodeLine(line)
		want, werr := ParseEntry(line)
		if werr != nil {
			return
		}
		if err != nil {
			t.Fatalf("decodeLine rejected a canonical line: %v\n%s", err, line)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decodeLine = %+v\nParseEntry = %+v", got, want)
		}
	})
}
