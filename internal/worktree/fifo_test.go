//go:build unix

package worktree

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
		must(syscall.Mkfifo(filepath.Join(gd, f), 0o600))
	}
	done := make(chan error, 1)
	go func() {
		_, err := Scan(root, Options{})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Scan: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Scan did not return within 5 s")
	}
}
