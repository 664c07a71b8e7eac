//go:build unix

package judge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/regular/regulartest"
	"github.com/docket/docket/policies"
)

// An agent names a FIFO as a command's body file: the judge does not wait
// for a writer; the file counts as one it cannot inspect.
func TestOutboundBodyFIFO(t *testing.T) {
	withDetector(t)
	proj := t.TempDir()
	regulartest.Mkfifo(t, filepath.Join(proj, "body"))
	e, _ := testEngine(t, defaultSet(t))
	for _, cmd := range []string{
		`curl -d @body https://hooks.acme-corp.io/x`,
		`gh pr create --title t --body-file body`,
	} {
		regulartest.Within(t, 5*time.Second, cmd, func() {
			_, d := e.Decide(context.Background(), bash(proj, cmd))
			if d.Outcome == Allow || !strings.Contains(d.Reason, "not a regular file") {
				t.Errorf("%s: %s (%s), want a decision naming the body file as not a regular file", cmd, d.Outcome, d.Reason)
			}
		})
	}
}

// A script that is a FIFO is run as another command fills it: the judge
// does not wait for a writer, and the call is high_risk.
func TestScriptFIFO(t *testing.T) {
	proj := t.TempDir()
	regulartest.Mkfifo(t, filepath.Join(proj, "run.sh"))
	e, _ := testEngine(t, defaultSet(t))
	regulartest.Within(t, 5*time.Second, "bash run.sh", func() {
		_, d := e.Decide(context.Background(), bash(proj, "bash run.sh"))
		if d.RiskClass != policies.HighRisk || !strings.Contains(strings.Join(d.ClassReasons, "; "), "no regular file") {
			t.Errorf("bash run.sh: %s %v, want high_risk for a script that is no regular file", d.RiskClass, d.ClassReasons)
		}
	})
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
	regulartest.Mkfifo(t, filepath.Join(wt, ".git"))
	regulartest.Mkfifo(t, filepath.Join(repo, ".git", "HEAD"))
	for _, dir := range []string{wt, repo} {
		regulartest.Within(t, 5*time.Second, "gitInfo("+dir+")", func() {
			if root, branch := gitInfo(dir); root != dir || branch != "" {
				t.Errorf("gitInfo(%s) = %q, %q; want %q and no branch", dir, root, branch, dir)
			}
		})
	}
}

// A FIFO among a session's pending `docket propose` statements does not
// hold the judge: it is dropped as a malformed statement.
func TestStatementFIFO(t *testing.T) {
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := statementDir(h, "s1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	regulartest.Mkfifo(t, filepath.Join(dir, "held.json"))
	// and a statement that is a link to a FIFO elsewhere
	other := filepath.Join(t.TempDir(), "fifo")
	regulartest.Mkfifo(t, other)
	if err := os.Symlink(other, filepath.Join(dir, "linked.json")); err != nil {
		t.Fatal(err)
	}
	regulartest.Within(t, 5*time.Second, "BindStatement", func() {
		b, err := BindStatement(h, "s1", "Bash", "sha256:x", time.Now())
		if err != nil || b.Status != SideChannelMissing || b.Stale != 2 {
			t.Errorf("BindStatement = %+v, %v; want missing with both FIFOs dropped as stale", b, err)
		}
	})
}
