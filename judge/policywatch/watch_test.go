package policywatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/policies"
)

func TestWatchReloadsAtomically(t *testing.T) {
	h, _ := home.At(t.TempDir())
	if err := os.MkdirAll(h.PoliciesDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	set, err := judge.LoadPolicySet(h)
	if err != nil {
		t.Fatal(err)
	}
	e := judge.NewEngine(h, set)
	v0 := e.Policy().Version
	reloads := make(chan error, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Watch(ctx, e, []string{h.PoliciesDir()}, func() (*judge.PolicySet, error) { return judge.LoadPolicySet(h) }, func(_ *judge.PolicySet, err error) { reloads <- err })
	time.Sleep(100 * time.Millisecond) // let the watcher start
	wait := func() error {
		select {
		case err := <-reloads:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("no reload")
			return nil
		}
	}
	read := &hooks.Event{Runtime: hooks.Claude, Name: hooks.PreToolUse, SessionID: "s1", Cwd: "/home/u/proj", ToolName: "Read",
		ToolInput: []byte(`{"file_path":"/home/u/proj/a.go"}`), ToolUseID: "toolu_1"}

	// malformed YAML: a policy error, and the engine fails closed
	write(t, filepath.Join(h.PoliciesDir(), policies.JudgesFile), "---\nschema: [\n---\n")
	// the atomic write's temporary file may fire a reload of its own,
	// before the rename: a clean one, of the old files
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := wait(); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("malformed judges.md reloaded without error")
		}
	}
	a, d := e.Decide(context.Background(), read)
	if a.Decision != hooks.Deny || d.FailureKind != judge.KindPolicyInvalid {
		t.Errorf("after a bad reload: %q %s", a.Decision, d.FailureKind)
	}

	// a valid change: new version, decisions resume
	write(t, filepath.Join(h.PoliciesDir(), policies.JudgesFile), "---\nschema: docket.judges.v1\n---\nnew prose\n")
	// late events from the first write may still report the old error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := wait(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the valid judges.md never reloaded cleanly")
		}
	}
	if e.Policy().Version == v0 {
		t.Error("policy_version did not change")
	}
	a, _ = e.Decide(context.Background(), read)
	if a.Decision != "" {
		t.Errorf("after a good reload: %q", a.Decision)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := home.WriteFileAtomic(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
