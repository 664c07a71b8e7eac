//go:build unix

package policies

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/docket/docket/internal/regular"
)

// A policy file (a delegate in the agent's tree) or a project file the
// binding reads that is a FIFO does not hold the hook: the read fails at
// once, and the caller fails closed or skips it.
func TestFIFOsDoNotBlock(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"judges.md", "Makefile", "package.json"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	soon := func(what string, f func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { f(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not return within 5 s", what)
		}
	}
	soon("readLimited", func() {
		if _, err := readLimited(filepath.Join(dir, "judges.md")); !errors.Is(err, regular.ErrNotRegular) {
			t.Errorf("readLimited(FIFO) = %v, want ErrNotRegular", err)
		}
	})
	for _, cmd := range []string{"make test", "npm test"} {
		soon("CommandFits "+cmd, func() {
			if CommandFits(dir, cmd) {
				t.Errorf("CommandFits(%q) with a FIFO for its file = true", cmd)
			}
		})
	}
}
