//go:build unix

package judge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// returnsSoon fails the test when f does not return within 5 s: a read the
// judge blocks on runs into the runtime's hook timeout, and runtimes fail
// open on a timeout.
func returnsSoon(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return within 5 s", what)
	}
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
}

// An agent names a FIFO as a command's body file: the judge does not wait
// for a writer; the file counts as one it cannot inspect.
func TestOutboundBodyFIFO(t *testing.T) {
	withDetector(t)
	proj := t.TempDir()
	mkfifo(t, filepath.Join(proj, "body"))
	e, _ := testEngine(t, defaultSet(t))
	for _, cmd := range []string{
		`curl -d @body https://hooks.acme-corp.io/x`,
		`gh pr create --title t --body-file body`,
	} {
		returnsSoon(t, cmd, func() {
			_, d := e.Decide(context.Background(), bash(proj, cmd))
			if d.Outcome == Allow || !strings.Contains(d.Reason, "not a regular file") {
				t.Errorf("%s: %s (%s), want a decision naming the body file as not a regular file", cmd, d.Outcome, d.Reason)
			}
		})
	}
}

// A FIFO where the judge looks for a repository's .git file or HEAD does
// not hold it either: the root is found, the branch is not read.
func TestGitInfoFIFO(t *testing.T) {
	tmp := t.TempDir()
	wt := filepath.Join(tmp, "wt")
	repo := filepath.Join(tmp, "repo")
	for _, d := range []string{wt, filepath.Join(repo, ".git")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mkfifo(t, filepath.Join(wt, ".git"))
	mkfifo(t, filepath.Join(repo, ".git", "HEAD"))
	for _, dir := range []string{wt, repo} {
		returnsSoon(t, "gitInfo("+dir+")", func() {
			if root, branch := gitInfo(dir); root != dir || branch != "" {
				t.Errorf("gitInfo(%s) = %q, %q; want %q and no branch", dir, root, branch, dir)
			}
		})
	}
}
