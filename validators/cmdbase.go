package validators

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// cmdBase holds command_zero_exit to the commit HEAD names, as goBase
// and pyBase hold the test validators: an allowed command's exit status
// proves something only while what it runs is what a human last
// committed, and while the suite it runs still has its tests. In a git
// repository the run fails when, since HEAD,
//
//   - a file that says what the command runs is new or changed: for
//     make, the makefiles it may read (GNUmakefile, makefile, Makefile)
//     and the files they include by a plain name; for npm, yarn and pnpm,
//     the scripts of package.json;
//   - a test file HEAD has is gone (deleted, or renamed to a name no test
//     file has; testPath);
//   - a test file gained a line that skips or narrows tests (skipMarks:
//     t.Skip, pytest.mark.skip, it.skip, .only, #[ignore], a //go:build
//     line...).
//
// What the command runs beyond those (a script the recipe calls, a test
// rewritten to assert less) is not read. Nil, and no error, without a
// base (goBaseOf's rules).
type cmdBase struct {
	commit  string
	changed []string // definition files new or changed since HEAD
	removed []string // test files HEAD has that are gone
	skips   []string // "path: mark" of each skip a test file gained
}

// skipMarks are what a line added to a test file says when it skips,
// marks as expected to fail, or narrows the tests around it, in Go,
// Python, JavaScript and TypeScript, and Rust.
var skipMarks = []string{
	".Skip(", ".Skipf(", ".SkipNow(", "//go:build", "// +build",
	".skip(", "mark.skip", "mark.xfail", ".xfail(", "unittest.skip", "SkipTest",
	".only(", ".todo(", "xit(", "xdescribe(", "xtest(",
	"#[ignore",
}

// cmdBaseOf reads the base of a command_zero_exit run of argv (as the
// binding lists it, before its program is resolved).
func (x *execution) cmdBaseOf(ctx context.Context, argv []string) (*cmdBase, error) {
	git, commit, err := x.headCommit(ctx)
	if commit == "" || err != nil {
		return nil, err
	}
	base := &cmdBase{commit: commit}
	var diff bytes.Buffer
	p, err := git("base-diff", &diff, "diff", "--name-status", "-z", "-M", "--relative", "HEAD", "--")
	if err != nil {
		return nil, err
	}
	x.dropArtifact("base-diff.stdout")
	if p.exitCode != 0 {
		return nil, fmt.Errorf("%s: git diff HEAD failed (%s): %s", x.def.Name, p.describe(gitTimeout), x.firstLine("base-diff.stderr"))
	}
	changed := map[string]bool{} // new, changed or gone since HEAD, by path from the working directory
	var touched []string         // test files changed since HEAD
	f := strings.Split(diff.String(), "\x00")
	for i := 0; i+1 < len(f); {
		status, from := f[i], f[i+1]
		to := ""
		i += 2
		if strings.HasPrefix(status, "R") || strings.HasPrefix(status, "C") {
			if i >= len(f) {
				break
			}
			to = f[i]
			i++
		}
		changed[from] = true
		if to != "" {
			changed[to] = true
		}
		switch {
		case status == "D" && testPath(from), strings.HasPrefix(status, "R") && testPath(from) && !testPath(to):
			base.removed = append(base.removed, from)
		case status != "D" && testPath(from) && to == "":
			touched = append(touched, from)
		case to != "" && testPath(to):
			touched = append(touched, to)
		}
	}
	if base.skips, err = x.addedSkips(git, touched); err != nil {
		return nil, err
	}
	defs, err := x.cmdDefinitions(git, argv)
	if err != nil {
		return nil, err
	}
	for _, d := range defs {
		if d.untracked || changed[d.path] && !d.same(x, git) {
			base.changed = append(base.changed, d.path)
		}
	}
	sort.Strings(base.removed)
	sort.Strings(base.changed)
	return base, nil
}

// addedSkips returns, for each of the test files paths, the skip marks
// (skipMarks) on the lines the change since HEAD added to it. A new
// file git does not track yet is not read: only what HEAD had can lose
// a test.
func (x *execution) addedSkips(git gitFunc, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	var found []string
	file := ""
	lw := &lineWriter{fn: func(b []byte) {
		line := string(b)
		switch {
		case strings.HasPrefix(line, "+++ "):
			file = strings.TrimPrefix(strings.TrimPrefix(line, "+++ "), "b/")
		case strings.HasPrefix(line, "+"):
			for _, m := range skipMarks {
				if strings.Contains(line, m) {
					found = append(found, file+": "+strings.TrimSpace(line[1:]))
					break
				}
			}
		}
	}}
	args := append([]string{"diff", "-U0", "--no-color", "--no-ext-diff", "--src-prefix=a/", "--dst-prefix=b/", "--relative", "-M", "HEAD", "--"}, paths...)
	p, err := git("base-skips", lw, args...)
	if err != nil {
		return nil, err
	}
	lw.Flush()
	x.dropArtifact("base-skips.stdout")
	if p.exitCode != 0 {
		return nil, fmt.Errorf("%s: git diff of the test files failed (%s): %s", x.def.Name, p.describe(gitTimeout), x.firstLine("base-skips.stderr"))
	}
	return found, nil
}

// cmdDefinition is a file that says what a command runs.
type cmdDefinition struct {
	path string // from the working directory
	// scripts: only package.json's scripts count, not the rest of it
	scripts   bool
	untracked bool // there, and not in git (ignored files too)
}

// same reports whether a changed definition still says what HEAD's did:
// package.json with the same scripts.
func (d cmdDefinition) same(x *execution, git gitFunc) bool {
	if !d.scripts {
		return false
	}
	var head bytes.Buffer
	p, err := git("base-show", &head, "show", "HEAD:./"+d.path)
	x.dropArtifact("base-show.stdout")
	if err != nil || p.exitCode != 0 {
		return false
	}
	now, err := os.ReadFile(filepath.Join(x.cwd, d.path))
	if err != nil {
		return false
	}
	var a, b struct{ Scripts json.RawMessage }
	if json.Unmarshal(head.Bytes(), &a) != nil || json.Unmarshal(now, &b) != nil {
		return false
	}
	return canonicalJSON(a.Scripts) == canonicalJSON(b.Scripts)
}

// canonicalJSON is raw re-encoded with sorted keys and no spacing.
func canonicalJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// cmdDefinitions lists the files that say what argv runs, where there
// are any, and marks those git does not track.
func (x *execution) cmdDefinitions(git gitFunc, argv []string) ([]cmdDefinition, error) {
	var defs []cmdDefinition
	switch path.Base(argv[0]) {
	case "make", "gmake":
		dir := makeDir(argv)
		for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
			p := filepath.ToSlash(filepath.Join(dir, name))
			defs = append(defs, cmdDefinition{path: p})
			for _, inc := range makeIncludes(filepath.Join(x.cwd, p)) {
				defs = append(defs, cmdDefinition{path: filepath.ToSlash(filepath.Join(dir, inc))})
			}
		}
	case "npm", "yarn", "pnpm":
		defs = append(defs, cmdDefinition{path: "package.json", scripts: true})
	default:
		return nil, nil
	}
	args := []string{"ls-files", "-z", "--others", "--"}
	for _, d := range defs {
		args = append(args, d.path)
	}
	var others bytes.Buffer
	p, err := git("base-others", &others, args...)
	if err != nil {
		return nil, err
	}
	x.dropArtifact("base-others.stdout")
	if p.exitCode != 0 {
		return nil, fmt.Errorf("%s: git ls-files failed (%s): %s", x.def.Name, p.describe(gitTimeout), x.firstLine("base-others.stderr"))
	}
	untracked := map[string]bool{}
	for _, p := range strings.Split(others.String(), "\x00") {
		untracked[p] = true
	}
	for i := range defs {
		defs[i].untracked = untracked[defs[i].path]
	}
	return defs, nil
}

// makeDir is the directory make runs in: its -C or --directory, else
// the working directory (".").
func makeDir(argv []string) string {
	for i, a := range argv {
		switch {
		case a == "-C" && i+1 < len(argv):
			return argv[i+1]
		case strings.HasPrefix(a, "--directory="):
			return strings.TrimPrefix(a, "--directory=")
		}
	}
	return "."
}

// makeIncludes are the files a makefile includes by a plain name
// (include, -include, sinclude); a name made of variables or patterns is
// left out.
func makeIncludes(makefile string) []string {
	f, err := os.Open(makefile)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		words := strings.Fields(sc.Text())
		if len(words) < 2 || (words[0] != "include" && words[0] != "-include" && words[0] != "sinclude") {
			continue
		}
		for _, w := range words[1:] {
			if !strings.ContainsAny(w, "$%*?[") {
				out = append(out, w)
			}
		}
	}
	return out
}

// testPath reports whether a path (slash-separated) is a test file's by
// the common conventions: Go's *_test.go, pytest's test_*.py and
// *_test.py, JavaScript's and TypeScript's *.test.* and *.spec.*, and
// any file under a test, tests or __tests__ directory.
func testPath(p string) bool {
	name := path.Base(p)
	switch {
	case strings.HasSuffix(name, "_test.go"),
		strings.HasSuffix(name, ".py") && (strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py")),
		strings.Contains(name, ".test.") || strings.Contains(name, ".spec."):
		return true
	}
	for _, dir := range strings.Split(path.Dir(p), "/") {
		if dir == "test" || dir == "tests" || dir == "__tests__" {
			return true
		}
	}
	return false
}
