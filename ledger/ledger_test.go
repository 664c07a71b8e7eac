package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
)

// newTestLedger initializes keys in a temporary state root.
func newTestLedger(t testing.TB) *Ledger {
	t.Helper()
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Init(h); err != nil {
		t.Fatal(err)
	}
	l, err := Open(h)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { tick = tick.Add(time.Second); return tick }
	return l
}

func appendN(t testing.TB, l *Ledger, session string, n int) []*Entry {
	t.Helper()
	var out []*Entry
	for i := 0; i < n; i++ {
		e, err := l.Append(session, Record{
			Kind: KindToolCall, Runtime: "claude", Event: "PostToolUse", Tool: "Bash",
			Args:      json.RawMessage(fmt.Sprintf(`{"command":"echo %d"}`, i)),
			Body:      map[string]any{"cwd": "/work", "failed": false},
			Artifacts: []Artifact{{Name: "stdout", Data: strings.NewReader(fmt.Sprintf("out %d\n", i))}},
		})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		out = append(out, e)
	}
	return out
}

func verifyOpts(l *Ledger) VerifyOptions {
	return VerifyOptions{VerifierKey: l.keys.VerifierKey(), Keys: l.keys}
}

func TestAppendVerify(t *testing.T) {
	l := newTestLedger(t)
	entries := appendN(t, l, "s1", 5)
	for i, e := range entries {
		if e.Seq != uint64(i) {
			t.Errorf("entry %d has seq %d", i, e.Seq)
		}
		if i > 0 && e.Prev != entries[i-1].Hash {
			t.Errorf("entry %d prev does not chain", i)
		}
	}
	rep, err := Verify(l.home, "s1", verifyOpts(l))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Entries != 5 || rep.Artifacts != 5 {
		t.Fatalf("report = %+v, failure %v", rep, rep.Failure)
	}
	got, err := l.ReadVerified("s1")
	if err != nil || len(got) != 5 {
		t.Fatalf("ReadVerified = %d entries, %v", len(got), err)
	}
	r, err := l.OpenArtifact(got[3], "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := make([]byte, 64)
	n, _ := r.Read(b)
	if string(b[:n]) != "out 3\n" {
		t.Fatalf("artifact = %q", b[:n])
	}
}

func TestInitIsIdempotent(t *testing.T) {
	h, _ := home.At(t.TempDir())
	first, err := Init(h)
	if err != nil {
		t.Fatal(err)
	}
	key1, _ := os.ReadFile(h.HMACKeyPath())
	second, err := Init(h)
	if err != nil {
		t.Fatal(err)
	}
	key2, _ := os.ReadFile(h.HMACKeyPath())
	if len(first.Created) != 4 || len(second.Created) != 0 || string(key1) != string(key2) {
		t.Fatalf("init created %v then %v; key changed: %v", first.Created, second.Created, string(key1) != string(key2))
	}
	if first.VerifierKey != second.VerifierKey {
		t.Fatal("verifier key changed")
	}
	for _, p := range []string{h.HMACKeyPath(), h.CheckpointKeyPath()} {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o400 {
			t.Errorf("%s mode = %v, %v", p, st.Mode().Perm(), err)
		}
	}
}

func TestOpenWithoutKeys(t *testing.T) {
	h, _ := home.At(t.TempDir())
	if _, err := Open(h); !errors.Is(err, ErrNoKey) {
		t.Fatalf("Open without init = %v, want ErrNoKey", err)
	}
}
