package ledger

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
)

// ArtifactFiles returns what OpenArtifact returns, and refuses a file
// whose bytes changed in the pack, one over the limit, another session's
// entry, and any read after Close.
func TestArtifactFiles(t *testing.T) {
	l := newTestLedger(t)
	es := appendN(t, l, "s1", 3)
	appendN(t, l, "s2", 1)
	af := l.ArtifactFiles("s1")
	for _, e := range es {
		f, err := l.OpenArtifact(e, "stdout")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := io.ReadAll(f)
		f.Close()
		got, err := af.ReadFile(e, "stdout", 1<<20)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("ReadFile = %q, %v; OpenArtifact read %q", got, err, want)
		}
	}
	if _, err := af.ReadFile(es[0], "stdout", 2); err == nil {
		t.Fatal("a file over the limit was read")
	}
	if _, err := af.ReadFile(es[0], "input.json", 1<<20); err == nil {
		t.Fatal("a missing artifact was read")
	}
	other := appendN(t, l, "s2", 1)[0]
	if _, err := af.ReadFile(other, "stdout", 1<<20); err == nil {
		t.Fatal("another session's entry was read through s1's pack")
	}
	af.Close()
	if _, err := af.ReadFile(es[0], "stdout", 1<<20); err == nil {
		t.Fatal("read after Close")
	}

	// "out 1\n" is entry 1's stdout: change it in the pack.
	pack := l.home.SessionArtifactsDir("s1") + "/" + PackName
	b, _ := os.ReadFile(pack)
	if strings.Count(string(b), "out 1\n") != 1 {
		t.Fatal("entry 1's stdout not found once in the pack")
	}
	os.WriteFile(pack, bytes.Replace(b, []byte("out 1\n"), []byte("out 7\n"), 1), 0o600)
	af = l.ArtifactFiles("s1")
	defer af.Close()
	if _, err := af.ReadFile(es[1], "stdout", 1<<20); !errors.Is(err, ErrTampered) {
		t.Fatalf("edited artifact: %v, want ErrTampered", err)
	}
	if _, err := af.ReadFile(es[0], "stdout", 1<<20); err != nil {
		t.Fatalf("untouched artifact: %v", err)
	}
}
