package validators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// goTestClass implements go_test_pass {package, run, required_runs,
// timeout}: runs `go test -count=1 -json [-run pattern] package`
// required_runs times in the working directory, with GOFLAGS removed from
// the environment (it could smuggle in -run or -exec). PASS when every run
// exits 0, no test fails and at least one test actually ran in every run
// (skipped tests do not count; "no test files" and a -run pattern matching
// nothing are FAIL). Refused: an empty package, a package or pattern
// starting with "-" (flag injection), whitespace in the package, a pattern
// that does not compile, required_runs < 1. `./...` is allowed: it is the
// strongest package pattern there is.
type goTestClass struct{}

func init() { classes["go_test_pass"] = goTestClass{} }

func (goTestClass) params() map[string]paramSpec {
	return map[string]paramSpec{
		"package":       {typ: "string", required: true},
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

func (goTestClass) run(ctx context.Context, x *execution) (*outcome, error) {
	argv := []string{"go", "test", "-count=1", "-json"}
	if run := x.args.str("run"); run != "" {
		argv = append(argv, "-run", run)
	}
	argv = append(argv, x.args.str("package"))
	env := envWithout("GOFLAGS")
	runs := int(x.args.integer("required_runs"))
	timeout := x.args.dur("timeout")
	out := &outcome{testsRun: -1}
	for i := 1; i <= runs; i++ {
		var sum goTestSummary
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
		if reason := sum.verdict(p, timeout, x.args.str("run")); reason != "" {
			out.reason = fmt.Sprintf("run %d of %d: %s", i, runs, reason)
			out.detail = map[string]any{"failed_tests": sum.failedNames()}
			return out, nil
		}
	}
	out.pass = true
	return out, nil
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
}

func (s *goTestSummary) line(b []byte) {
	var e goTestEvent
	if json.Unmarshal(b, &e) != nil {
		return // not an event (e.g. a build error on stdout)
	}
	top := e.Test != "" && !strings.Contains(e.Test, "/")
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
	case "build-fail":
		s.buildFailed = append(s.buildFailed, e.ImportPath)
	}
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
