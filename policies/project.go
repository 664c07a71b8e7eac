package policies

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/regular"
)

// ProjectRoot returns the project a working directory belongs to: the
// root of the git work tree containing cwd (the nearest parent with a
// .git entry), else cwd itself, symbolic links resolved. It runs no
// command.
func ProjectRoot(cwd string) string { return home.ProjectRoot(cwd) }

// ForProject returns the binding fitted to the project at root: the
// same policy (Allows and Rule answer exactly as b does), whose
// Validators list only suggests what can run in that project, with
// examples that fit it (see Validators). root is a ProjectRoot.
func (b *Binding) ForProject(root string) *Binding {
	c := *b
	c.root = root
	return &c
}

// fit is Validators on a project-fitted binding.
func (b *Binding) fit(claim string, rules []ValidatorRule) []ValidatorRule {
	var out []ValidatorRule
	for _, r := range rules {
		if len(r.With) > 0 {
			continue // cannot back the claim alone: suggest its companions
		}
		switch {
		case r.Name == "go_test_pass":
			if !isFile(filepath.Join(b.root, "go.mod")) {
				continue
			}
		case r.Name == "pytest_pass":
			if !IsPythonProject(b.root) {
				continue
			}
		case r.Name == "file_diff_present":
			continue // its path is the change itself; a guess would mislead
		case strings.HasPrefix(r.Name, "command_"):
			cmd := ""
			for _, c := range b.Commands(claim, r.Name, b.root) {
				if CommandFits(b.root, c) {
					cmd = c
					break
				}
			}
			if cmd == "" {
				continue
			}
			r.Example = withCommand(r.Example, cmd)
		}
		out = append(out, r)
	}
	return out
}

// withCommand returns example with its "command" set to cmd's argv.
func withCommand(example, cmd string) string {
	var m map[string]any
	if json.Unmarshal([]byte(example), &m) != nil || m == nil {
		m = map[string]any{}
	}
	m["command"] = strings.Fields(cmd)
	b, err := json.Marshal(m)
	if err != nil {
		return example
	}
	return string(b)
}

// IsPythonProject reports whether root looks like a Python project with
// tests pytest would find.
func IsPythonProject(root string) bool {
	for _, f := range PythonProjectMarkers {
		if f == "tests/" {
			st, err := os.Stat(filepath.Join(root, "tests"))
			return err == nil && st.IsDir()
		}
		if isFile(filepath.Join(root, f)) {
			return true
		}
	}
	return false
}

// PythonProjectMarkers make a directory a Python project's root
// (IsPythonProject): its files, and a tests directory (last).
var PythonProjectMarkers = []string{"pyproject.toml", "setup.py", "setup.cfg", "pytest.ini", "tox.ini", "conftest.py", "tests/"}

// CommandFits reports whether an allowed command (words joined by single
// spaces) can do anything in the project at root: make targets its
// Makefile defines, npm scripts its package.json has, cargo with a
// Cargo.toml, go with a go.mod, pytest in a Python project, a relative
// script that exists. Other commands fit.
func CommandFits(root, cmd string) bool {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "make":
		target := ""
		if len(f) > 1 && !strings.HasPrefix(f[1], "-") && !strings.Contains(f[1], "=") {
			target = f[1]
		}
		for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
			if b, err := regular.ReadFile(nil, filepath.Join(root, name), MaxPolicySize); err == nil {
				return target == "" || hasMakeTarget(b, target)
			}
		}
		return false
	case "npm", "yarn", "pnpm":
		script := ""
		switch {
		case len(f) > 2 && f[1] == "run":
			script = f[2]
		case len(f) > 1:
			script = f[1]
		}
		b, err := regular.ReadFile(nil, filepath.Join(root, "package.json"), MaxPolicySize)
		if err != nil {
			return false
		}
		var pkg struct {
			Scripts map[string]string `json:"scripts"`
		}
		if json.Unmarshal(b, &pkg) != nil {
			return false
		}
		_, ok := pkg.Scripts[script]
		return ok
	case "cargo":
		return isFile(filepath.Join(root, "Cargo.toml"))
	case "go":
		return isFile(filepath.Join(root, "go.mod"))
	case "pytest", "tox", "python", "python3":
		return IsPythonProject(root)
	}
	if strings.HasPrefix(f[0], "./") {
		return isFile(filepath.Join(root, f[0]))
	}
	return true
}

func hasMakeTarget(makefile []byte, target string) bool {
	sc := bufio.NewScanner(bytes.NewReader(makefile))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '\t' || line[0] == '#' {
			continue
		}
		names, rest, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(rest, "=") || strings.Contains(names, "=") {
			continue // an assignment, not a rule
		}
		for _, n := range strings.Fields(names) {
			if n == target {
				return true
			}
		}
	}
	return false
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// ForCwd returns b fitted to the project of cwd when b is a *Binding
// (see ForProject), else b unchanged. It lets a caller holding the
// binding behind its own interface type fit it with one call.
func ForCwd[B any](b B, cwd string) B {
	pb, ok := any(b).(*Binding)
	if !ok || pb == nil || cwd == "" {
		return b
	}
	if fitted, ok := any(pb.ForProject(ProjectRoot(cwd))).(B); ok {
		return fitted
	}
	return b
}
