package judge

import (
	"os"
	"path/filepath"
	"testing"
)

// ProjectRoot skips reading HEAD; it must still name the root gitInfo
// names, for a repository, a worktree's .git file, a subdirectory and a
// directory outside any repository.
func TestProjectRootMatchesGitInfo(t *testing.T) {
	tmp := t.TempDir()
	repo := filepath.Join(tmp, "repo")
	wt := filepath.Join(tmp, "wt")
	plain := filepath.Join(tmp, "plain")
	for _, d := range []string{filepath.Join(repo, ".git"), filepath.Join(repo, "a", "b"), wt, plain, filepath.Join(tmp, "gd")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(repo, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o600)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: ../gd\n"), 0o600)
	os.WriteFile(filepath.Join(tmp, "gd", "HEAD"), []byte("ref: refs/heads/feature\n"), 0o600)
	tests := []struct{ cwd, root, branch string }{
		{repo, repo, "main"},
		{filepath.Join(repo, "a", "b"), repo, "main"},
		{wt, wt, "feature"},
	}
	for _, tc := range tests {
		root, branch := gitInfo(tc.cwd)
		if root != tc.root || branch != tc.branch {
			t.Errorf("gitInfo(%s) = %q, %q; want %q, %q", tc.cwd, root, branch, tc.root, tc.branch)
		}
		if got := ProjectRoot(tc.cwd); got != root {
			t.Errorf("ProjectRoot(%s) = %q, gitInfo says %q", tc.cwd, got, root)
		}
	}
	// outside a repository both give the directory itself (unless tmp
	// sits in one)
	if r, _ := gitInfo(plain); ProjectRoot(plain) != r {
		t.Errorf("ProjectRoot(%s) = %q, gitInfo says %q", plain, ProjectRoot(plain), r)
	}
}
