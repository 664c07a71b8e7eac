package judge

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/docket/docket/internal/regular"
)

// commandHooks are the hooks the git subcommand sub runs.
func commandHooks(sub string) []string {
	switch sub {
	case "commit":
		return []string{"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit"}
	case "push":
		return []string{"pre-push"}
	case "merge", "pull":
		return []string{"pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-merge"}
	case "checkout", "switch":
		return []string{"post-checkout"}
	case "rebase":
		return []string{"pre-rebase", "post-rewrite"}
	case "am":
		return []string{"applypatch-msg", "pre-applypatch", "post-applypatch"}
	case "cherry-pick":
		return []string{"prepare-commit-msg", "post-commit"}
	}
	return nil
}

// noVerify are the hooks --no-verify (commit's -n too) skips.
var noVerify = words{"pre-commit", "commit-msg", "pre-push", "pre-merge-commit", "applypatch-msg", "pre-applypatch"}

// gitHook is a hook a git command runs: its name, file and text.
type gitHook struct {
	name, path string
	text       []byte
}

// gitHooks reads the hooks the git command s runs in the repository
// around dir (or its -C directory): from core.hooksPath in the
// repository's config (relative to the worktree's top), else the git
// directory's hooks. git runs only an executable hook; husky's hooks
// (core.hooksPath .husky/_) run the files beside that directory, which
// need no mode. The line names only the git command: a hook the agent
// wrote in a hooks directory the project holds (.husky/pre-commit,
// .githooks/pre-push) runs unseen at the next commit or push. The
// user's own config (a global core.hooksPath) is not read.
func gitHooks(s Segment, dir string, open func(string) (*os.File, error)) []gitHook {
	if s.Name() != "git" {
		return nil
	}
	sub, rest := subcommand(s.Argv, map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true})
	names := commandHooks(sub)
	if len(names) == 0 {
		return nil
	}
	for i := 1; i+1 < len(s.Argv) && s.Argv[i] != sub; i++ {
		if s.Argv[i] == "-C" {
			dir = under(dir, s.Argv[i+1])
		}
	}
	skip := hasFlag(rest, "--no-verify") || sub == "commit" && hasFlag(rest, "-n")
	root, _ := gitWalk(dir, false)
	gitDir := filepath.Join(root, ".git")
	if b, err := regular.ReadFile(open, gitDir, maxGitFile); err == nil {
		// a worktree or submodule: "gitdir: <path>"
		if gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: "); ok {
			gitDir = under(root, gd)
		}
	}
	if root == "" || !filepath.IsAbs(gitDir) {
		return nil
	}
	dirs := []string{filepath.Join(gitDir, "hooks")}
	if hp := hooksPath(gitDir, open); hp != "" && !strings.ContainsAny(hp, "~$") {
		hp = under(root, hp)
		dirs = []string{hp}
		if filepath.Base(hp) == "_" {
			dirs = append(dirs, filepath.Dir(hp)) // husky: .husky/_ runs .husky/<hook>
		}
	}
	var out []gitHook
	for _, name := range names {
		if skip && noVerify.has(name) {
			continue
		}
		for i, d := range dirs {
			f := filepath.Join(d, name)
			if i == 0 {
				if st, err := os.Stat(f); err != nil || st.Mode()&0o111 == 0 {
					continue // git skips a hook it cannot execute
				}
			}
			if b, err := regular.ReadFile(open, f, maxScript); err == nil {
				out = append(out, gitHook{name, f, b})
			}
		}
	}
	return out
}

// hooksPath is core.hooksPath from the repository's config, "" when it
// sets none.
func hooksPath(gitDir string, open func(string) (*os.File, error)) string {
	b, err := regular.ReadFile(open, filepath.Join(gitDir, "config"), 1<<20)
	if err != nil {
		return ""
	}
	core := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			core = strings.EqualFold(strings.Trim(line, "[] \t"), "core")
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if core && ok && strings.EqualFold(strings.TrimSpace(k), "hooksPath") {
			return strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	return ""
}
