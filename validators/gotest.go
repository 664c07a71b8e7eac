package validators

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"golang.org/x/mod/modfile"
)

// goTestClass implements go_test_pass {package, run, required_runs,
// timeout}: runs `go test -count=1 -json [-run pattern] package`
// required_runs times with the harness's toolchain and environment (the
// go binary from the policy or `docket init`, GOENV=off, GOFLAGS=,
// GOTOOLCHAIN=local, a fixed PATH, a private TMPDIR and HOME, the
// harness's own GOCACHE and GOMODCACHE).
//
// Before running, `go list` (same toolchain) resolves the package
// pattern: every package must belong to the main module, inside the
// session's project (the standard library and other modules are
// refused). With the rule's scope "project" the package must be ./...
// and the tests run from the module root, whose go.mod must have no
// ignore directive (it drops directories from ./...). The test functions each package
// defines (Test, Fuzz and Example functions with output, as `go test
// -list` would report them) are read from the sources, without running
// the test binary, which a TestMain could make lie.
//
// PASS when every run exits 0, no test fails, at least one test passed,
// and the set of top-level tests that reported equals the set the
// sources define (filtered by run): a TestMain, init or flag that
// narrows the run leaves tests out, and the run fails naming them. In a
// git repository the suite is held to HEAD's too (goBase): a test HEAD
// defines that no longer builds, a test new or changed since HEAD that
// skips, or a TestMain or test-file init new or changed since HEAD (it
// runs first, and can print a passing run without running one), fails
// the run.
// Without a -run filter the run also holds a check test the validator
// adds through -overlay under a random name (gocheck.go): a package that
// does not report it passed reported without running its tests.
// Subtests are not listed (they are created at run time); their parent
// reports their result. Refused: a package or pattern starting with "-",
// whitespace in the package, a pattern that does not compile,
// required_runs < 1, a run pattern the binding does not allow.
type goTestClass struct{}

func init() { classes["go_test_pass"] = goTestClass{} }

func (goTestClass) params() map[string]paramSpec {
	return map[string]paramSpec{
		"package":       {typ: "string"},
		"run":           {typ: "string"},
		"required_runs": {typ: "integer"},
		"timeout":       {typ: "duration"},
	}
}

func (goTestClass) config(raw yaml.RawMessage) (any, error) { return noConfig(raw) }

func (goTestClass) check(a Args, d *Definition) error {
	pkg := a.str("package")
	switch {
	case strings.TrimSpace(pkg) == "":
		return errors.New("package is empty")
	case strings.HasPrefix(pkg, "-"):
		return fmt.Errorf("package %q looks like a flag", pkg)
	case strings.ContainsAny(pkg, " \t\n"):
		return fmt.Errorf("package %q: give one package pattern", pkg)
	}
	if run := a.str("run"); run != "" {
		if strings.HasPrefix(run, "-") {
			return fmt.Errorf("run pattern %q looks like a flag", run)
		}
		for _, part := range strings.Split(run, "/") {
			if _, err := regexp.Compile(part); err != nil {
				return fmt.Errorf("run pattern %q: %v", run, err)
			}
		}
	}
	if a.integer("required_runs") < 1 {
		return fmt.Errorf("required_runs is %d, want at least 1", a.integer("required_runs"))
	}
	if a.dur("timeout") <= 0 {
		return errors.New("timeout must be positive")
	}
	return nil
}

// goTestPlan is what prepare found: the packages and their tests.
type goTestPlan struct {
	pkgs     []*goListPackage
	funcs    map[string]map[string]string // import path -> test name -> source (testFuncsIn)
	setup    map[string]map[string]string // import path -> TestMain, init -> source (testFuncsIn)
	expected map[string]map[string]bool   // import path -> test names
	testMain []string                     // packages with a TestMain
	base     *goBase                      // the suite at HEAD; nil without one
	check    *goCheck                     // the check test (gocheck.go); nil with a -run filter
}

func (goTestClass) prepare(ctx context.Context, x *execution) error {
	if x.tc.Go == nil {
		return fmt.Errorf("go_test_pass: no go toolchain: run 'docket init' where go is on PATH, or set toolchains.go in claim_binding.yaml")
	}
	if err := x.tc.Go.usable("go", "toolchains.go"); err != nil {
		return err
	}
	x.useTool("go", x.tc.Go)
	pattern := x.args.str("package")
	if x.rule.Scope == "project" {
		if pattern != "./..." {
			return refusef("claim %s needs the whole module tested: package must be ./... (the policy's scope for %s is project), not %q", x.claim, x.def.Name, pattern)
		}
		mod := moduleRoot(x.cwd, x.root)
		if mod == "" {
			return refusef("no go.mod in %s or its parents inside the project %s: go_test_pass has no module to test", x.cwd, x.root)
		}
		x.cwd = mod
		if err := x.rootAtHead(ctx, "go.mod"); err != nil {
			return err
		}
		if ign := modIgnores(mod); len(ign) > 0 {
			return refusef("%s has ignore directives (%s): ./... leaves those directories and their tests out, so it is not the whole module", filepath.Join(mod, "go.mod"), strings.Join(ign, ", "))
		}
	}
	pkgs, err := x.goList(ctx, pattern)
	if err != nil {
		return err
	}
	plan := &goTestPlan{funcs: map[string]map[string]string{}, setup: map[string]map[string]string{}, expected: map[string]map[string]bool{}}
	var first string
	if run := x.args.str("run"); run != "" {
		first = splitRegexp(run)[0]
	} else if plan.check, err = newGoCheck(); err != nil {
		return err
	}
	for _, p := range pkgs {
		switch {
		case p.Error != nil && p.Module == nil && !p.Standard:
			return refusef("package %s: %s", p.ImportPath, strings.TrimSpace(p.Error.Err))
		case p.Standard:
			return refusef("package %s is in the standard library, not the project: test the project's packages", p.ImportPath)
		case p.Module == nil || !p.Module.Main:
			mod := "no module"
			if p.Module != nil {
				mod = "module " + p.Module.Path
			}
			return refusef("package %s belongs to %s, not to the project's main module: test the project's packages", p.ImportPath, mod)
		case !within(x.root, p.Dir) || (p.Module.Dir != "" && !within(x.root, p.Module.Dir)):
			return refusef("package %s is in %s, outside the session's project %s", p.ImportPath, p.Dir, x.root)
		}
		funcs, setup, err := testFuncs(p)
		if err != nil {
			return fmt.Errorf("go_test_pass: list tests of %s: %w", p.ImportPath, err)
		}
		if setup["TestMain"] != "" {
			plan.testMain = append(plan.testMain, p.ImportPath)
		}
		plan.funcs[p.ImportPath] = funcs
		plan.setup[p.ImportPath] = setup
		want := map[string]bool{}
		for n := range funcs {
			if first == "" || matchRun(first, n) {
				want[n] = true
			}
		}
		plan.expected[p.ImportPath] = want
		plan.check.add(p)
		plan.pkgs = append(plan.pkgs, p)
	}
	if plan.base, err = x.goBaseOf(ctx, plan, first); err != nil {
		return err
	}
	x.state = plan
	return nil
}

func (goTestClass) run(ctx context.Context, x *execution) (*outcome, error) {
	plan, _ := x.state.(*goTestPlan)
	if plan == nil {
		return nil, errors.New("go_test_pass: not prepared")
	}
	argv := []string{x.tc.Go.Path, "test", "-count=1", "-json"}
	if run := x.args.str("run"); run != "" {
		argv = append(argv, "-run", run)
	}
	if plan.check != nil && len(plan.check.pkgs) > 0 {
		ov, err := plan.check.overlay(filepath.Join(x.tmp, "check"), plan.pkgs)
		if err != nil {
			return nil, fmt.Errorf("go_test_pass: write the check test: %w", err)
		}
		argv = append(argv, "-overlay="+ov)
	}
	argv = append(argv, x.args.str("package"))
	env := x.goEnv()
	runs := int(x.args.integer("required_runs"))
	timeout := x.args.dur("timeout")
	out := &outcome{testsRun: -1, detail: map[string]any{"packages": len(plan.pkgs)}}
	if len(plan.testMain) > 0 {
		out.detail["test_main"] = plan.testMain
	}
	if b := plan.base; b != nil {
		out.detail["base"] = b.commit
		// what a reviewer reads first: the tests this change wrote or
		// rewrote, which a pass is only as good as
		touched := map[string]bool{}
		for pkg, names := range b.touched {
			for n := range names {
				touched[pkg+"."+n] = true
			}
		}
		if len(touched) > 0 {
			out.detail["tests_changed_since_base"] = clipList(sortedKeys(touched), 20)
		}
		if len(b.removed) > 0 {
			return out.goneSinceBase("removed_since_base", "test(s) HEAD defines", b.removed), nil
		}
		if len(b.setupChanged) > 0 {
			return out.changedSinceBase("setup_changed_since_base", b.setupChanged,
				"code in the test files that runs before the tests can decide what the run reports"), nil
		}
	}
	for i := 1; i <= runs; i++ {
		sum := goTestSummary{reported: map[string]map[string]bool{}, checked: map[string]bool{}}
		if plan.check != nil {
			sum.check = plan.check.name
		}
		lw := &lineWriter{fn: sum.line}
		p, err := x.runProc(ctx, argv, env, timeout, fmt.Sprintf("run%d", i), lw)
		if err != nil {
			return nil, err
		}
		lw.Flush()
		out.runs = i
		if out.testsRun < 0 || sum.ran() < out.testsRun {
			out.testsRun = sum.ran()
		}
		reason := sum.verdict(p, timeout, x.args.str("run"))
		if reason == "" {
			reason = sum.compare(plan.expected)
		}
		if reason == "" {
			reason = plan.check.missing(sum.checked)
		}
		if reason == "" && plan.base != nil {
			reason = sum.skippedTouched(plan.base)
		}
		if reason != "" {
			out.reason = fmt.Sprintf("run %d of %d: %s", i, runs, reason)
			out.detail["failed_tests"] = sum.failedNames()
			return out, nil
		}
	}
	out.pass = true
	return out, nil
}

// goEnv is the go command's environment for this run: the toolchain's,
// with GOWORK off unless the project root holds a go.work.
func (x *execution) goEnv() []string {
	env := x.tc.goEnv(x.tmp)
	if w := filepath.Join(x.root, "go.work"); fileExists(w) {
		return append(env, "GOWORK="+w)
	}
	return append(env, "GOWORK=off")
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// moduleRoot is the nearest directory from dir up to root holding a
// go.mod, or "".
func moduleRoot(dir, root string) string {
	for d := dir; within(root, d); d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.mod")) {
			return d
		}
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	return ""
}

// modIgnores is the paths of the ignore directives in dir/go.mod.
func modIgnores(dir string) []string {
	p := filepath.Join(dir, "go.mod")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	f, err := modfile.ParseLax(p, b, nil)
	if err != nil {
		return nil // go list reports a malformed go.mod
	}
	var out []string
	for _, ig := range f.Ignore {
		out = append(out, ig.Path)
	}
	return out
}

// goListPackage is the part of `go list -json` go_test_pass reads.
type goListPackage struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	Module     *struct {
		Path, Dir string
		Main      bool
	}
	TestGoFiles  []string
	XTestGoFiles []string
	Error        *struct{ Err string }
}

// goList resolves pattern with the harness's go in x.cwd.
func (x *execution) goList(ctx context.Context, pattern string) ([]*goListPackage, error) {
	var buf bytes.Buffer
	argv := []string{x.tc.Go.Path, "list", "-e", "-json=ImportPath,Name,Dir,Standard,Module,TestGoFiles,XTestGoFiles,Error", pattern}
	p, err := x.runProc(ctx, argv, x.goEnv(), 2*time.Minute, "list", &buf)
	if err != nil {
		return nil, err
	}
	if p.exitCode != 0 {
		return nil, refusef("go list %s failed (%s): %s", pattern, p.describe(2*time.Minute), x.firstLine("list.stderr"))
	}
	var pkgs []*goListPackage
	dec := json.NewDecoder(&buf)
	for {
		var pk goListPackage
		if err := dec.Decode(&pk); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, &pk)
	}
	if len(pkgs) == 0 {
		return nil, refusef("package pattern %q matches no package in %s", pattern, x.cwd)
	}
	return pkgs, nil
}

// testFuncs returns the tests `go test -list .` would name for p, read
// from its test files, and the code they run first (testFuncsIn).
func testFuncs(p *goListPackage) (funcs, setup map[string]string, err error) {
	files := map[string][]byte{}
	for _, f := range append(append([]string(nil), p.TestGoFiles...), p.XTestGoFiles...) {
		b, err := os.ReadFile(filepath.Join(p.Dir, f))
		if err != nil {
			return nil, nil, err
		}
		files[f] = b
	}
	return testFuncsIn(files)
}

// testFuncsIn returns the tests in test file contents by name: Test and
// Fuzz functions, and Example functions with an output comment, each
// with its source text (the function declaration's bytes; "" for an
// Example). setup is the code of those files that runs before any test
// and can decide what the run reports: "TestMain" and "init" (every
// init function, in file order) with their source text, when there.
func testFuncsIn(files map[string][]byte) (funcs, setup map[string]string, err error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	funcs, setup = map[string]string{}, map[string]string{}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		src := files[name]
		af, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		parsed = append(parsed, af)
		for _, d := range af.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Type.TypeParams != nil {
				continue
			}
			text := string(src[fset.Position(fn.Pos()).Offset:fset.Position(fn.End()).Offset])
			switch n := fn.Name.Name; {
			case n == "TestMain" && paramIs(fn, "M"):
				setup["TestMain"] = text
			case n == "init" && fn.Type.Params.NumFields() == 0:
				setup["init"] += name + "\n" + text + "\n"
			case isTestName(n, "Test"), isTestName(n, "Fuzz"):
				funcs[n] = text
			}
		}
	}
	for _, ex := range doc.Examples(parsed...) {
		if ex.Output != "" || ex.EmptyOutput {
			funcs["Example"+ex.Name] = ""
		}
	}
	return funcs, setup, nil
}

// isTestName is cmd/go's rule: the prefix, then nothing or a rune that
// is not lower case.
func isTestName(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	if len(name) == len(prefix) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(name[len(prefix):])
	return !unicode.IsLower(r)
}

// paramIs reports whether fn's single parameter is *testing.<typ>.
func paramIs(fn *ast.FuncDecl, typ string) bool {
	ps := fn.Type.Params.List
	if len(ps) != 1 {
		return false
	}
	star, ok := ps[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == typ
}

// splitRegexp splits a -run pattern at the slashes that are not inside
// brackets or parentheses, as the testing package does.
func splitRegexp(s string) []string {
	var parts []string
	cs, cp := 0, 0
	last := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			cs++
		case ']':
			if cs--; cs < 0 {
				cs = 0
			}
		case '(':
			if cs == 0 {
				cp++
			}
		case ')':
			if cs == 0 {
				cp--
			}
		case '\\':
			i++
		case '/':
			if cs == 0 && cp == 0 {
				parts = append(parts, s[last:i])
				last = i + 1
			}
		}
	}
	return append(parts, s[last:])
}

// matchRun reports whether a top-level test name matches the first
// element of a -run pattern.
func matchRun(first, name string) bool {
	if first == "" {
		return true
	}
	re, err := regexp.Compile(first)
	return err == nil && re.MatchString(name)
}

// goTestEvent is one line of `go test -json` (test2json) output.
type goTestEvent struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
}

// goTestSummary tallies one run's events.
type goTestSummary struct {
	passed, failed, skipped int      // top-level tests
	failedTests             []string // top-level and subtests
	failedPkgs              []string
	buildFailed             []string
	// reported holds the top-level tests that ended (pass, fail or
	// skip), by package.
	reported map[string]map[string]bool
	skips    [][2]string // package and test (or subtest) of each skip
	// check is the check test's name (gocheck.go), counted apart:
	// checked holds the packages that reported it passed.
	check   string
	checked map[string]bool
}

// skippedTouched returns "" unless a test new or changed since the base
// skipped (itself or a subtest): a test written to skip proves nothing.
func (s *goTestSummary) skippedTouched(b *goBase) string {
	var names []string
	for _, sk := range s.skips {
		top, _, _ := strings.Cut(sk[1], "/")
		if b.touched[sk[0]][top] {
			names = append(names, sk[0]+"."+sk[1])
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return fmt.Sprintf("%d test(s) written or changed since HEAD skipped: %s. A skipped test proves nothing: make it run", len(names), clipNames(names))
}

// sortedKeys is m's keys, sorted.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// clipList keeps the first n of l, and says how many more there were.
func clipList(l []string, n int) []string {
	if len(l) > n {
		return append(l[:n:n], fmt.Sprintf("(+%d more)", len(l)-n))
	}
	return l
}

// clipNames joins names, at most ten of them.
func clipNames(l []string) string { return strings.Join(clipList(l, 10), ", ") }

func (s *goTestSummary) line(b []byte) {
	var e goTestEvent
	if json.Unmarshal(b, &e) != nil {
		return // not an event (e.g. a build error on stdout)
	}
	top := e.Test != "" && !strings.Contains(e.Test, "/")
	if top && s.check != "" && e.Test == s.check {
		if e.Action == "pass" {
			s.checked[e.Package] = true
		}
		return
	}
	if top && s.reported != nil && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
		if s.reported[e.Package] == nil {
			s.reported[e.Package] = map[string]bool{}
		}
		s.reported[e.Package][e.Test] = true
	}
	switch e.Action {
	case "pass":
		if top {
			s.passed++
		}
	case "fail":
		switch {
		case e.Test == "":
			s.failedPkgs = append(s.failedPkgs, e.Package)
		default:
			s.failedTests = append(s.failedTests, e.Test)
			if top {
				s.failed++
			}
		}
	case "skip":
		if top {
			s.skipped++
		}
		if e.Test != "" {
			s.skips = append(s.skips, [2]string{e.Package, e.Test})
		}
	case "build-fail":
		s.buildFailed = append(s.buildFailed, e.ImportPath)
	}
}

// compare returns "" when the tests that reported are exactly the
// expected ones, else what differs.
func (s *goTestSummary) compare(expected map[string]map[string]bool) string {
	var missing, extra []string
	for pkg, want := range expected {
		for n := range want {
			if !s.reported[pkg][n] {
				missing = append(missing, pkg+"."+n)
			}
		}
	}
	for pkg, got := range s.reported {
		for n := range got {
			if !expected[pkg][n] {
				extra = append(extra, pkg+"."+n)
			}
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	switch {
	case len(missing) > 0:
		return fmt.Sprintf("%d test(s) the packages define did not run: %s (a TestMain, init or flag narrowed the run)", len(missing), clipNames(missing))
	case len(extra) > 0:
		return fmt.Sprintf("the run reported %d test(s) the packages do not define: %s", len(extra), clipNames(extra))
	}
	return ""
}

// ran is the number of top-level tests that ran (passed or failed).
func (s *goTestSummary) ran() int { return s.passed + s.failed }

func (s *goTestSummary) failedNames() []string {
	names := append([]string(nil), s.failedTests...)
	sort.Strings(names)
	if len(names) > 20 {
		names = names[:20]
	}
	return names
}

// verdict returns "" when the run passed, else why not.
func (s *goTestSummary) verdict(p *proc, timeout time.Duration, pattern string) string {
	switch {
	case p.timedOut:
		return "go test timed out after " + timeout.String() + " (process group killed)"
	case len(s.buildFailed) > 0:
		return "build failed: " + strings.Join(s.buildFailed, ", ")
	case len(s.failedTests) > 0:
		return fmt.Sprintf("%d test(s) failed: %s", len(s.failedTests), strings.Join(s.failedNames(), ", "))
	case len(s.failedPkgs) > 0:
		return "package(s) failed: " + strings.Join(s.failedPkgs, ", ")
	case p.exitCode != 0:
		return fmt.Sprintf("go test exited with status %d", p.exitCode)
	case s.passed == 0 && pattern != "":
		return fmt.Sprintf("no test ran: -run %q matched nothing (or every match was skipped)", pattern)
	case s.passed == 0:
		return "no test ran: no test files, or every test was skipped"
	}
	return ""
}
