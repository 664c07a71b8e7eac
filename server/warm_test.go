package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every way of changing a watched file changes the fingerprint, even one
// that keeps its size and puts its mtime back.
func TestFingerprintSeesEveryChange(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		change func(dir string)
	}{
		{"rewrite, same size, mtime restored", func(dir string) {
			p := filepath.Join(dir, "pol", "claims.yaml")
			st, err := os.Stat(p)
			must(err)
			must(os.WriteFile(p, []byte("block_cap: 9\n"), 0o600))
			must(os.Chtimes(p, st.ModTime(), st.ModTime()))
		}},
		{"replace by rename", func(dir string) {
			p := filepath.Join(dir, "pol", "claims.yaml")
			must(os.WriteFile(p+".new", []byte("block_cap: 3\n"), 0o600))
			must(os.Rename(p+".new", p))
		}},
		{"new file in a watched directory", func(dir string) {
			must(os.WriteFile(filepath.Join(dir, "pol", "tools.yaml"), nil, 0o600))
		}},
		{"file removed", func(dir string) { must(os.Remove(filepath.Join(dir, "pol", "claims.yaml"))) }},
		{"mode changed", func(dir string) { must(os.Chmod(filepath.Join(dir, "pol", "claims.yaml"), 0o644)) }},
		{"symlink retargeted", func(dir string) {
			l := filepath.Join(dir, "pol", "link.yaml")
			must(os.Remove(l))
			must(os.Symlink(filepath.Join(dir, "other2"), l))
		}},
		{"symlink target rewritten", func(dir string) {
			must(os.WriteFile(filepath.Join(dir, "other"), []byte("y"), 0o600))
		}},
		{"watched file appears", func(dir string) {
			must(os.WriteFile(filepath.Join(dir, "approval.json"), []byte("{}"), 0o600))
		}},
	}
	// with the listing cache too: its clock an hour ahead, every
	// directory is settled and a listing is reused while the directory's
	// identity is unchanged
	clocks := map[string]func() time.Time{
		"":                time.Now,
		" (listing kept)": func() time.Time { return time.Now().Add(time.Hour) },
	}
	defer func(f func() time.Time) { listingNow = f }(listingNow)
	for clock, now := range clocks {
		listingNow = now
		for _, tc := range tests {
			t.Run(tc.name+clock, func(t *testing.T) {
				dir := t.TempDir()
				must(os.Mkdir(filepath.Join(dir, "pol"), 0o700))
				must(os.WriteFile(filepath.Join(dir, "pol", "claims.yaml"), []byte("block_cap: 3\n"), 0o600))
				must(os.WriteFile(filepath.Join(dir, "other"), []byte("x"), 0o600))
				must(os.WriteFile(filepath.Join(dir, "other2"), []byte("x"), 0o600))
				must(os.Symlink(filepath.Join(dir, "other"), filepath.Join(dir, "pol", "link.yaml")))
				paths := []string{filepath.Join(dir, "pol"), filepath.Join(dir, "approval.json")}
				before, _ := Fingerprint(time.Now(), paths...)
				if again, _ := Fingerprint(time.Now(), paths...); again != before {
					t.Fatal("fingerprint of unchanged files differs")
				}
				time.Sleep(10 * time.Millisecond) // past the clock's tick
				tc.change(dir)
				if after, _ := Fingerprint(time.Now(), paths...); after == before {
					t.Fatalf("fingerprint unchanged after %s", tc.name)
				}
			})
		}
	}
}

// A settled directory is read once; a new entry changes its identity,
// and it is read again.
func TestFingerprintKeepsSettledListings(t *testing.T) {
	defer func(f func() time.Time) { listingNow = f }(listingNow)
	listingNow = func() time.Time { return time.Now().Add(time.Hour) }
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	reads := func() int {
		listings.Lock()
		defer listings.Unlock()
		return listings.reads
	}
	start := reads()
	first, _ := Fingerprint(time.Now(), dir)
	again, _ := Fingerprint(time.Now(), dir)
	if again != first || reads() != start+1 {
		t.Fatalf("two fingerprints of an unchanged settled directory: %d reads, equal %v; want 1, true", reads()-start, again == first)
	}
	time.Sleep(10 * time.Millisecond) // past the clock's tick
	if err := os.WriteFile(filepath.Join(dir, "b.yaml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	after, _ := Fingerprint(time.Now(), dir)
	if reads() != start+2 || !strings.Contains(after, "b.yaml") {
		t.Fatalf("after a new entry: %d reads, b.yaml listed %v; want 2, true", reads()-start, strings.Contains(after, "b.yaml"))
	}
	// a young directory is never kept: with the real clock, every
	// fingerprint reads it
	listingNow = time.Now
	before := reads()
	Fingerprint(time.Now(), dir)
	Fingerprint(time.Now(), dir)
	if reads() != before+2 {
		t.Fatalf("young directory read %d times in two fingerprints, want 2", reads()-before)
	}
}

func TestWarm(t *testing.T) {
	defer func(w time.Duration) { RacyWindow = w }(RacyWindow)
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("1"), 0o600); err != nil {
		t.Fatal(err)
	}
	read := func() (string, error) {
		b, err := os.ReadFile(p)
		return string(b), err
	}
	var w Warm[string]
	get := func(want string, loads int) {
		t.Helper()
		v, err := w.Get("k", []string{p}, read)
		if err != nil || v != want || w.Loads != loads {
			t.Fatalf("Get = %q, %v after %d loads; want %q after %d", v, err, w.Loads, want, loads)
		}
	}
	// a file younger than the racy window is read on every call
	RacyWindow = time.Hour
	get("1", 1)
	get("1", 2)
	RacyWindow = 0
	get("1", 3)
	get("1", 3) // kept
	if err := os.WriteFile(p, []byte("2"), 0o600); err != nil {
		t.Fatal(err)
	}
	get("2", 4)
	get("2", 4)
	// an error is returned, never kept
	fails := errors.New("boom")
	if _, err := w.Get("e", []string{p}, func() (string, error) { return "", fails }); err != fails {
		t.Fatalf("err = %v", err)
	}
	if v, err := w.Get("e", []string{p}, read); err != nil || v != "2" {
		t.Fatalf("after an error: %q, %v", v, err)
	}
}
