package worktree

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "core.excludesFile=/dev/null"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// The index reader agrees with git ls-files for index versions 2, 3
// (intent-to-add entries use extended flags) and 4 (prefix-compressed
// paths), and a tracked file an ignore rule matches stays in the digest.
func TestTrackedPaths(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	root := t.TempDir()
	files := map[string]string{".gitignore": "*.gen\nvendor/\n", "a.go": "a", "x.gen": "forced", "vendor/v.go": "v", "sub/y.gen": "ignored", "link": ""}
	files["l/"+strings.Repeat("x", 200)] = "long" // v4 strips 202 bytes for the next path: a two-byte varint
	files["m"] = "short"
	for i := range 30 {
		files[fmt.Sprintf("pkg/deeply/nested/dir%02d/file_with_a_long_name_%02d.go", i%3, i)] = "x"
	}
	write(t, root, files)
	os.Remove(filepath.Join(root, "link"))
	os.Symlink("a.go", filepath.Join(root, "link"))
	git(t, root, "init", "-q")
	git(t, root, "add", "-A")
	git(t, root, "add", "-f", "x.gen", "vendor/v.go")
	git(t, root, "commit", "-qm", "init")
	write(t, root, map[string]string{"new.go": "n"})
	git(t, root, "add", "-N", "new.go")
	for _, v := range []string{"2", "3", "4"} {
		t.Run("v"+v, func(t *testing.T) {
			if v == "2" {
				git(t, root, "rm", "-q", "--cached", "new.go") // v2 cannot hold intent-to-add
			} else {
				git(t, root, "add", "-N", "new.go")
			}
			git(t, root, "update-index", "--index-version", v)
			want := strings.Fields(git(t, root, "ls-files"))
			got := readTracked(root)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("tracked = %q\nwant     %q", got, want)
			}
			tr, err := Scan(root, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ps := strings.Join(paths(tr), " ")
			for _, p := range []string{"x.gen", "vendor/v.go", "a.go", "link"} {
				if !strings.Contains(" "+ps+" ", " "+p+" ") {
					t.Errorf("%s missing from the digest: %s", p, ps)
				}
			}
			if strings.Contains(ps, "sub/y.gen") {
				t.Errorf("untracked ignored sub/y.gen is in the digest")
			}
			// A change to the tracked, ignored file is seen.
			before := tr.Digest
			write(t, root, map[string]string{"vendor/v.go": "v changed " + v})
			after, _ := Scan(root, Options{})
			if after.Digest == before {
				t.Errorf("change to tracked ignored vendor/v.go not seen")
			}
		})
	}
}

func FuzzTrackedPaths(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"), 20)
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x02"+strings.Repeat("\x00", 62)+"\x00a\x00"+strings.Repeat("\x00", 62)+"\x01b\x00"), 20)
	f.Fuzz(func(t *testing.T, b []byte, oid int) {
		if oid != 20 && oid != 32 {
			return
		}
		trackedPaths(b, oid) // must not panic
	})
}

// A linked worktree keeps its own index under the main repository's
// git directory; the reader follows the .git file to it.
func TestTrackedPathsLinkedWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	root := t.TempDir()
	main := filepath.Join(root, "main")
	write(t, main, map[string]string{".gitignore": "*.gen\n", "a.go": "a", "x.gen": "forced"})
	git(t, main, "init", "-q")
	git(t, main, "add", "-A")
	git(t, main, "add", "-f", "x.gen")
	git(t, main, "commit", "-qm", "init")
	git(t, main, "worktree", "add", "-q", filepath.Join(root, "wt"))
	wt := filepath.Join(root, "wt")
	want := strings.Fields(git(t, wt, "ls-files"))
	if got := readTracked(wt); !reflect.DeepEqual(got, want) || len(got) != 3 {
		t.Fatalf("tracked = %q, want %q", got, want)
	}
	write(t, main, map[string]string{".git/info/exclude": "a.go\n"})
	tr, err := Scan(wt, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// info/exclude lives in the common directory; a.go is tracked, so
	// it stays.
	if got := strings.Join(paths(tr), " "); got != ".git/info/exclude .gitignore a.go x.gen" {
		t.Errorf("files = %s", got)
	}
}
