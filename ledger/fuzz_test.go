package ledger

import (
	"bytes"
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
		CheckInclusion(text, l.keys.vkey) // must not panic
	})
}
