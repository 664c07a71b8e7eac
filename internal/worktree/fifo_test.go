//go:build unix

package worktree

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket/docket/internal/regular/regulartest"
)

// The git files a scan reads that the agent's tree can name (a worktree's
// gitdir with its commondir, index, config and info/exclude) may be FIFOs:
// the scan does not wait on them, or the stop gate would run into the
// runtime's timeout, which lets the stop through.
func TestScanFIFOGitFiles(t *testing.T) {
	root := t.TempDir()
	gd := filepath.Join(root, "gd")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(gd, "info"), 0o700))
	must(os.WriteFile(filepath.Join(root, ".git"), []byte("gitdir: gd\n"), 0o600))
	must(os.WriteFile(filepath.Join(gd, "HEAD"), []byte("ref: refs/heads/main\n"), 0o600))
	must(os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o600))
	for _, f := range []string{"commondir", "index", "config", filepath.Join("info", "exclude")} {
		regulartest.Mkfifo(t, filepath.Join(gd, f))
	}
	regulartest.Within(t, 5*time.Second, "Scan", func() {
		if _, err := Scan(root, Options{}); err != nil {
			t.Errorf("Scan: %v", err)
		}
	})
}
