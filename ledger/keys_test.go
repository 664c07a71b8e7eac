package ledger

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/docket/docket/internal/home"
)

// The verifier key is read on first use: a hook that only appends and
// reads never opens checkpoint.vkey, and a checkpoint still verifies
// against the key the file holds, or against the one derived from the
// signing key when the file is gone.
func TestVerifierKeyOnFirstUse(t *testing.T) {
	l := newTestLedger(t)
	h := l.home
	want, err := os.ReadFile(h.VerifierKeyPath())
	if err != nil {
		t.Fatal(err)
	}
	wantKey := strings.TrimSpace(string(want))
	if _, err := note.NewVerifier(wantKey); err != nil {
		t.Fatalf("init wrote a bad vkey %q: %v", wantKey, err)
	}

	// a vkey file that goes bad after the keys were loaded is not seen
	// by appends and reads, which do not use it
	keys, err := LoadKeys(h)
	if err != nil {
		t.Fatal(err)
	}
	l2 := &Ledger{home: h, keys: keys, now: l.now}
	if err := os.WriteFile(h.VerifierKeyPath(), []byte("not a key\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	appendN(t, l2, "s1", 3)
	if got := keys.VerifierKey(); got != "not a key" {
		t.Fatalf("VerifierKey() = %q, want the file's text read on first use", got)
	}

	// no vkey file: derived from the signing key, equal to what init wrote
	if err := os.Remove(h.VerifierKeyPath()); err != nil {
		t.Fatal(err)
	}
	keys, err = LoadKeys(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys.VerifierKey(); got != wantKey {
		t.Fatalf("derived VerifierKey() = %q, want %q", got, wantKey)
	}
	// and Init puts the file back
	if _, err := Init(h); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(h.VerifierKeyPath()); strings.TrimSpace(string(got)) != wantKey {
		t.Fatalf("Init rewrote vkey %q, want %q", got, wantKey)
	}
}

// A malformed signing key without a vkey file: no verifier key (and no
// checkpoint can be signed), and Init says so instead of writing one.
func TestVerifierKeyMalformedSigner(t *testing.T) {
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Init(h); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(h.VerifierKeyPath()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.CheckpointKeyPath(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.CheckpointKeyPath(), []byte("PRIVATE+KEY+docket-checkpoint+00000000+AQ==\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := LoadKeys(h)
	if err != nil {
		t.Fatalf("LoadKeys: %v (the hooks need no verifier key)", err)
	}
	if got := keys.VerifierKey(); got != "" {
		t.Fatalf("VerifierKey() = %q from a malformed signing key", got)
	}
	if _, err := keys.checkpointSigner(); err == nil {
		t.Fatal("a malformed signing key signs")
	}
	if _, err := Init(h); err == nil {
		t.Fatal("Init accepted a malformed signing key without a vkey")
	}
	if _, err := os.Stat(h.VerifierKeyPath()); err == nil {
		t.Fatal("Init wrote a vkey for a malformed signing key")
	}
}
