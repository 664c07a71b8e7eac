package validators

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/build"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// goBase is the test suite of the tested packages as the commit HEAD
// names it: a suite passes only with its tests, so a run must not have
// lost one (deleted, renamed, or moved into a file the build leaves
// out), a test the session wrote or changed must not pass by skipping,
// and the code the test files run before any test (TestMain, init) must
// be HEAD's, or it could report a run that never happened. HEAD is the
// base because it is what a human last committed; a session that
// commits the removal itself moves it, which the repository's history
// then shows.
type goBase struct {
	commit string
	// removed are the tests (import path and name) HEAD defines that
	// the packages no longer build, among those the run pattern selects.
	removed []string
	// touched are the tests new or changed since HEAD, by import path.
	touched map[string]map[string]bool
	// setupChanged are the TestMain and init functions of the test
	// files (import path and name) new or changed since HEAD.
	setupChanged []string
}

// goBaseOf compares the tests plan's packages define now with those HEAD
// defines. Nil, and no error, without git, outside a repository or
// before its first commit: there is no base (noBase).
func (x *execution) goBaseOf(ctx context.Context, plan *goTestPlan, first string) (*goBase, error) {
	git, commit, err := x.headCommit(ctx)
	if commit == "" || err != nil {
		return nil, err
	}
	base := &goBase{commit: commit, touched: map[string]map[string]bool{}}

	dirs := map[string]*goListPackage{} // relative directory -> package
	for _, pk := range plan.pkgs {
		rel, err := filepath.Rel(x.cwd, pk.Dir)
		if err != nil {
			return nil, fmt.Errorf("go_test_pass: %w", err)
		}
		dirs[filepath.ToSlash(rel)] = pk
	}
	root, recursive := treeRoot(x.args.str("package"))
	blobs, modules, err := x.headTestFiles(git, dirs, root, recursive)
	if err != nil {
		return nil, err
	}

	// a directory of HEAD's that is no package now: its tests are all gone
	// (unless ./... never reached it: another module, testdata, _ or .)
	gone := map[string]map[string][]byte{}
	for _, b := range blobs {
		if dirs[b.dir] != nil || inOtherModule(root, b.dir, modules) || !matchesBuild(filepath.Join(x.cwd, b.dir), b.name, b.data) {
			continue
		}
		if gone[b.dir] == nil {
			gone[b.dir] = map[string][]byte{}
		}
		gone[b.dir][b.name] = b.data
	}
	for dir, files := range gone {
		head, _, err := testFuncsIn(files)
		if err != nil {
			continue
		}
		for name := range head {
			if matchRun(first, name) {
				base.removed = append(base.removed, "./"+dir+"."+name)
			}
		}
	}

	for _, pk := range plan.pkgs {
		built := map[string]bool{}
		for _, f := range append(append([]string(nil), pk.TestGoFiles...), pk.XTestGoFiles...) {
			built[f] = true
		}
		atHead := map[string][]byte{}
		for _, b := range blobs {
			if dirs[b.dir] != pk {
				continue
			}
			if !built[b.name] {
				now, err := os.ReadFile(filepath.Join(pk.Dir, b.name))
				switch {
				case err == nil && gitBlobID(now, b.oid) == b.oid:
					continue // left out of the build at HEAD already
				case err != nil && !matchesBuild(pk.Dir, b.name, b.data):
					continue // gone, and never built here
				}
			}
			atHead[b.name] = b.data
		}
		head, headSetup, err := testFuncsIn(atHead)
		if err != nil {
			continue // HEAD's file does not parse: no base for this package
		}
		for name, src := range plan.setup[pk.ImportPath] {
			if src != headSetup[name] {
				base.setupChanged = append(base.setupChanged, pk.ImportPath+"."+name)
			}
		}
		now := plan.funcs[pk.ImportPath] // what prepare read
		for name := range head {
			if _, ok := now[name]; !ok && matchRun(first, name) {
				base.removed = append(base.removed, pk.ImportPath+"."+name)
			}
		}
		for name, src := range now {
			if was, ok := head[name]; !ok || was != src {
				if base.touched[pk.ImportPath] == nil {
					base.touched[pk.ImportPath] = map[string]bool{}
				}
				base.touched[pk.ImportPath][name] = true
			}
		}
	}
	sort.Strings(base.removed)
	sort.Strings(base.setupChanged)
	return base, nil
}

// rootAtHead refuses the root a scope-project validation runs from (the
// working directory by then) when the change made it: none of markers
// (paths relative to it; a directory ends in "/") is in HEAD's tree. A
// go.mod or a tests directory the session adds below the project makes
// a root whose suite holds only the tests it chose. Nil without a base.
func (x *execution) rootAtHead(ctx context.Context, markers ...string) error {
	git, commit, err := x.headCommit(ctx)
	if commit == "" || err != nil {
		return err
	}
	var found bytes.Buffer
	p, err := git("base-root", &found, append([]string{"ls-tree", "-r", "--name-only", "HEAD", "--"}, markers...)...)
	if err != nil {
		return err
	}
	if p.exitCode != 0 {
		return fmt.Errorf("%s: git ls-tree HEAD failed (%s): %s", x.def.Name, p.describe(gitTimeout), x.firstLine("base-root.stderr"))
	}
	if strings.TrimSpace(found.String()) != "" {
		return nil
	}
	rel, _ := filepath.Rel(x.root, x.cwd)
	return refusef("%s is a root the change made: none of %s is in HEAD (%s), so its suite holds only the tests the change chose. Validate from the project's root as HEAD has it, or commit it first (the history then shows it)",
		filepath.ToSlash(rel), strings.Join(markers, ", "), commit[:min(12, len(commit))])
}

// revertOrCommit is the way out of a change since HEAD a pass cannot
// rest on.
const revertOrCommit = "Revert it, or commit it first (the history then shows it)"

// goneSinceBase fails out for the things HEAD has that are gone (what
// names them, "test(s) HEAD defines"), recorded in detail[key].
func (out *outcome) goneSinceBase(key, what string, names []string) *outcome {
	out.detail[key] = names
	out.reason = fmt.Sprintf("%d %s are gone: %s. A suite passes only with its tests: restore them (a removal meant to stay is committed first)", len(names), what, clipNames(names))
	return out
}

// changedSinceBase fails out for files or code new or changed since
// HEAD that decide what a run reports (why says how), recorded in
// detail[key].
func (out *outcome) changedSinceBase(key string, names []string, why string) *outcome {
	out.detail[key] = names
	out.reason = fmt.Sprintf("%s new or changed since HEAD: %s, so a pass cannot rest on it. %s", clipNames(names), why, revertOrCommit)
	return out
}

// headBlob is one file at HEAD.
type headBlob struct {
	dir, name, oid string // dir relative to the working directory
	size           int
	data           []byte // after readBlobs
}

// lsTreeHEAD lists the files HEAD has under pathspecs (relative to the
// working directory; with recursive, in every directory below them).
func (x *execution) lsTreeHEAD(git gitFunc, recursive bool, pathspecs ...string) ([]*headBlob, error) {
	args := []string{"ls-tree", "-z", "-l"}
	if recursive {
		args = append(args, "-r")
	}
	var tree bytes.Buffer
	p, err := git("base-tree", &tree, append(append(args, "HEAD", "--"), pathspecs...)...)
	if err != nil {
		return nil, err
	}
	x.dropArtifact("base-tree.stdout") // the commit's tree, named by detail.base
	if p.exitCode != 0 {
		return nil, fmt.Errorf("%s: git ls-tree HEAD failed (%s): %s", x.def.Name, p.describe(gitTimeout), x.firstLine("base-tree.stderr"))
	}
	var blobs []*headBlob
	for _, rec := range bytes.Split(tree.Bytes(), []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 || f[1] != "blob" {
			continue
		}
		size, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		blobs = append(blobs, &headBlob{dir: filepath.ToSlash(filepath.Dir(string(path))), name: filepath.Base(string(path)), oid: f[2], size: size})
	}
	return blobs, nil
}

// readBlobs fills in the blobs' contents with one git show, split by the
// sizes ls-tree gave.
func (x *execution) readBlobs(git gitFunc, blobs []*headBlob) error {
	if len(blobs) == 0 {
		return nil
	}
	args := []string{"show", "--no-textconv"}
	for _, b := range blobs {
		args = append(args, b.oid)
	}
	var all bytes.Buffer
	p, err := git("base-files", &all, args...)
	if err != nil {
		return err
	}
	x.dropArtifact("base-files.stdout") // the commit's files
	if p.exitCode != 0 || p.dropped > 0 {
		return fmt.Errorf("%s: git show of HEAD's test files failed (%s): %s", x.def.Name, p.describe(gitTimeout), x.firstLine("base-files.stderr"))
	}
	rest := all.Bytes()
	for _, b := range blobs {
		if len(rest) < b.size {
			return fmt.Errorf("%s: git show gave %d bytes of HEAD's test files, fewer than ls-tree listed", x.def.Name, all.Len())
		}
		b.data, rest = rest[:b.size], rest[b.size:]
	}
	return nil
}

// headTestFiles reads the _test.go files HEAD has in dirs (with
// recursive, in every directory under root that ./... reaches: a package
// deleted whole loses its tests too); modules are the directories with a
// go.mod at HEAD.
func (x *execution) headTestFiles(git gitFunc, dirs map[string]*goListPackage, root string, recursive bool) ([]*headBlob, map[string]bool, error) {
	var specs []string
	if recursive {
		specs = []string{root + "/"}
	} else {
		for rel := range dirs {
			specs = append(specs, rel+"/")
		}
	}
	all, err := x.lsTreeHEAD(git, recursive, specs...)
	if err != nil {
		return nil, nil, err
	}
	var tests []*headBlob
	modules := map[string]bool{}
	for _, b := range all {
		if b.name == "go.mod" {
			modules[b.dir] = true
		}
		if strings.HasSuffix(b.name, "_test.go") && (dirs[b.dir] != nil || recursive && inPattern(root, b.dir)) {
			tests = append(tests, b)
		}
	}
	return tests, modules, x.readBlobs(git, tests)
}

// headCommit finds git and the commit HEAD names in the working
// directory. commit is "" without a base: no git, no repository, or no
// commit yet (noBase decides which, and refuses the rest).
func (x *execution) headCommit(ctx context.Context) (git gitFunc, commit string, err error) {
	if x.head == nil {
		x.head = &headAnswer{}
		x.head.git, x.head.commit, x.head.err = x.readHead(ctx)
	}
	return x.head.git, x.head.commit, x.head.err
}

// headAnswer is what headCommit found.
type headAnswer struct {
	git    gitFunc
	commit string
	err    error
}

// readHead is headCommit's work.
func (x *execution) readHead(ctx context.Context) (git gitFunc, commit string, err error) {
	if git, err = x.gitRunner(ctx); err != nil {
		return nil, "", nil
	}
	var rev bytes.Buffer
	p, err := git("base-rev", &rev, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		return nil, "", err
	}
	if p.exitCode != 0 {
		return nil, "", x.noBase(git, p.exitCode)
	}
	return git, strings.TrimSpace(rev.String()), nil
}

// noBase decides a HEAD that names no commit (rev-parse exited with
// code): outside a repository, and in a new one with no commit at all,
// there is no base and nil is returned. A repository that has commits
// but whose HEAD names none (pointed at a branch that does not exist,
// or made unreadable) is refused: that is how a session would hide the
// suite the check compares with.
func (x *execution) noBase(git gitFunc, code int) error {
	if !x.inRepository() {
		return nil
	}
	if code == 1 {
		var refs bytes.Buffer
		p, err := git("base-refs", &refs, "for-each-ref", "--count=1", "--format=%(refname)")
		if err != nil {
			return err
		}
		if p.exitCode == 0 && strings.TrimSpace(refs.String()) == "" {
			return nil // a new repository
		}
	}
	why := x.firstLine("base-rev.stderr")
	if why == "" {
		why = "git rev-parse --verify HEAD found none"
	}
	return refusef("the repository's HEAD names no commit (%s): %s compares the suite with the one HEAD commits; check out a branch", why, x.def.Name)
}

// inRepository reports whether a git repository lies in the working
// directory or a directory above it inside the project: a .git file (a
// worktree's or a submodule's link) or a .git directory with objects (an
// empty .git is no repository, whatever HEAD says).
func (x *execution) inRepository() bool {
	for d := x.cwd; ; d = filepath.Dir(d) {
		if st, err := os.Lstat(filepath.Join(d, ".git")); err == nil && st.Mode().IsRegular() {
			return true
		}
		if st, err := os.Stat(filepath.Join(d, ".git", "objects")); err == nil && st.IsDir() {
			return true
		}
		if d == x.root || d == filepath.Dir(d) || !within(x.root, d) {
			return false
		}
	}
}

// gitBlobID is the object id git gives a blob of b, in the hash of the
// repository whose ids are as long as like (SHA-256 or SHA-1).
func gitBlobID(b []byte, like string) string {
	h := sha1.New()
	if len(like) == 64 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// matchesBuild reports whether the go command would build the file name
// of dir, whose content is src, on this system (its name's GOOS and
// GOARCH, its //go:build line).
func matchesBuild(dir, name string, src []byte) bool {
	ctxt := build.Default
	ctxt.OpenFile = func(string) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(src)), nil }
	ok, err := ctxt.MatchFile(dir, name)
	return err != nil || ok // unreadable constraints: count it
}

// treeRoot is the directory a package pattern names, relative to where
// it runs, and whether it is a whole tree (dir/...): ("pkg", true) for
// ./pkg/..., (".", true) for ./..., and recursive false for a single
// package or an import path pattern.
func treeRoot(pattern string) (string, bool) {
	if !strings.HasPrefix(pattern, ".") {
		return "", false
	}
	root, ok := strings.CutSuffix(pattern, "/...")
	if !ok {
		return "", false
	}
	return filepath.ToSlash(filepath.Clean(root)), true
}

// inPattern reports whether ./... from root reaches dir: dir lies under
// root, and no directory on the way is testdata, vendor, or starts with
// _ or . (which the go command skips).
func inPattern(root, dir string) bool {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return false
	}
	if rel == "." {
		return true
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if part == "testdata" || part == "vendor" || strings.HasPrefix(part, "_") || strings.HasPrefix(part, ".") {
			return false
		}
	}
	return true
}

// inOtherModule reports whether dir lies in a module of its own below
// root (a go.mod at HEAD between them), which ./... does not enter.
func inOtherModule(root, dir string, modules map[string]bool) bool {
	for d := dir; d != root && d != "." && d != "/" && d != ""; d = filepath.ToSlash(filepath.Dir(d)) {
		if modules[d] {
			return true
		}
	}
	return false
}
