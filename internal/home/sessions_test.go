package home

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSessionIndex(t *testing.T) {
	h, err := At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj := "/work/proj"
	if s, err := h.SessionForDir(proj); s != "" || err != nil {
		t.Fatalf("empty index: %q %v", s, err)
	}
	if d, _, err := h.SessionDir("s1"); d != "" || err != nil {
		t.Fatalf("unknown session: %q %v", d, err)
	}
	// The judge sees the session first; the ledger and the gate later,
	// in other directories: the session's directory stays the first.
	steps := []struct{ cwd, session string }{{proj, "s1"}, {proj + "/sub", "s1"}, {"/tmp/elsewhere", "s1"}, {proj, "s2"}}
	for _, st := range steps {
		if err := h.RecordSessionForDir(st.cwd, st.session); err != nil {
			t.Fatal(err)
		}
	}
	for cwd, want := range map[string]string{proj: "s2", proj + "/sub": "s1", "/tmp/elsewhere": "s1", "/nowhere": ""} {
		if s, err := h.SessionForDir(cwd); s != want || err != nil {
			t.Errorf("SessionForDir(%q) = %q, %v; want %q", cwd, s, err, want)
		}
	}
	for session, want := range map[string]string{"s1": proj, "s2": proj} {
		if d, root, err := h.SessionDir(session); d != want || root != want || err != nil {
			t.Errorf("SessionDir(%q) = %q, %q, %v; want %q", session, d, root, err, want)
		}
	}
	// Nothing recorded for a relative directory, an empty one or a bad id.
	for _, st := range []struct{ cwd, session string }{{"rel/dir", "s3"}, {"", "s3"}, {"/x", "../s3"}} {
		if err := h.RecordSessionForDir(st.cwd, st.session); err != nil {
			t.Fatal(err)
		}
	}
	if d, _, _ := h.SessionDir("s3"); d != "" {
		t.Errorf("s3 recorded as %q", d)
	}
	if _, _, err := h.SessionDir("../s1"); err == nil {
		t.Error("SessionDir accepts a bad session id")
	}
	// A malformed record is an error, not a directory.
	if err := os.WriteFile(filepath.Join(h.RunDir(), "session", "s4.cwd"), []byte("relative\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.SessionDir("s4"); err == nil {
		t.Error("malformed record accepted")
	}
}

// The project is fixed when the session is first seen: a .git created
// later in a parent directory does not widen it.
func TestSessionProjectFixed(t *testing.T) {
	h, err := At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(proj)
	if ProjectRoot(proj) != real {
		t.Skip("a .git above the temporary directory (a shared /tmp)")
	}
	if err := h.RecordSessionForDir(proj, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := ProjectRoot(proj); got == proj {
		t.Fatalf("ProjectRoot(%q) = %q: the parent .git should widen a fresh lookup", proj, got)
	}
	if _, root, err := h.SessionDir("s1"); root != real || err != nil {
		t.Errorf("recorded root = %q, %v; want %q", root, err, real)
	}
}

// BenchmarkRecordSessionForDir is the cost every hook pays per call once
// the session is indexed (a stat and a read).
func BenchmarkRecordSessionForDir(b *testing.B) {
	h, err := At(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := h.RecordSessionForDir(dir, "s1"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := h.RecordSessionForDir(dir, "s1"); err != nil {
			b.Fatal(err)
		}
	}
}
