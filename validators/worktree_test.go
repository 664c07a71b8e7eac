package validators

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/worktree"
	"github.com/docket/docket/ledger"
)

// Every validator entry records the project root it ran in and the
// digest of that tree; the state root, here inside the project, is not
// part of the tree, and the manifest is kept for naming changes later.
func TestRunnerRecordsWorktree(t *testing.T) {
	proj := t.TempDir()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("needs make")
	}
	writeFiles(t, proj, map[string]string{".git/HEAD": "ref: refs/heads/main\n", "Makefile": "test:\n\t@exit 0\n", "sub/x.txt": "x\n"})
	h, err := home.At(filepath.Join(proj, ".docket"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(h, l)
	if err != nil {
		t.Fatal(err)
	}
	res := runReq(t, r, "s1", "done", "command_zero_exit", `{"command":["make","test"]}`, proj)
	if res.Entry == nil {
		t.Fatalf("no entry: %+v", res)
	}
	var body struct {
		Worktree worktree.Pass `json:"worktree"`
	}
	if err := json.Unmarshal(res.Entry.Body, &body); err != nil {
		t.Fatal(err)
	}
	want, err := worktree.Scan(proj, worktree.Options{Exclude: []string{h.Root}})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(proj)
	if body.Worktree.Root != root || body.Worktree.Digest != want.Digest || body.Worktree.Files != 2 || body.Worktree.Error != "" {
		t.Fatalf("worktree = %+v, want root %s digest %s, 2 files", body.Worktree, root, want.Digest)
	}
	files, err := worktree.StateStore(h, l.Keys()).Manifest(body.Worktree.Digest)
	if err != nil || len(files) != 2 {
		t.Fatalf("manifest: %v, %d files", err, len(files))
	}
	if _, err := os.Stat(filepath.Join(h.RunDir(), "worktree")); err != nil {
		t.Fatal(err)
	}
}
