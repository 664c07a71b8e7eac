package validators

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/policies"
)

// pytestMain runs pytest as `python -m pytest` does, but imports it
// before the project's directory is on sys.path, and then puts that
// directory last, not first: a pytest.py (or a module pytest imports)
// in the project cannot stand in for it.
const pytestMain = `import os, sys
import pytest
sys.path.append(os.getcwd())
raise SystemExit(pytest.console_main())`

// pytestClass implements pytest_pass {target, required_runs, timeout}:
// runs `<python> -I -B -c <pytestMain> -p no:cacheprovider target`
// required_runs times with the harness's python3 (config python when it
// is an absolute path, else the toolchain's) and environment: a fixed
// PATH, a private TMPDIR and HOME, no PYTHON* or PYTEST_* variables of
// the caller and no user site directory (-I, isolated), no module of
// the project's before the installed ones (pytestMain), no bytecode
// written into the project (-B: -E drops PYTHONDONTWRITEBYTECODE, and a
// new __pycache__ would leave the pass without a working-tree digest),
// no configuration from outside the project (an empty one when the
// project has none: pytest would look above it) and no conftest.py from
// above where it runs (--confcutdir). PASS when every run exits 0 and
// its summary line reports at least one passed test and no failures or
// errors; "no tests ran" is FAIL. With the rule's scope "project" the
// target must be "." and pytest runs from the project's Python root
// with no target (its configured testpaths, else everything), and a
// deselected test fails the run. In a git repository the suite is held
// to HEAD's too (pyBase): a test HEAD defines that is gone, a test new
// or changed since HEAD that is skipped or marked xfail, a conftest.py
// new or changed since HEAD that can hook pytest, or a pytest section
// of a configuration file new or changed since HEAD, fails the run.
// Refused: an empty target, a target starting with "-", required_runs
// < 1, and with scope "project" a Python root the change made
// (rootAtHead).
type pytestClass struct{}

type pytestConfig struct {
	Python string `yaml:"python"`
}

func init() { classes["pytest_pass"] = pytestClass{} }

func (pytestClass) params() map[string]paramSpec {
	return map[string]paramSpec{
		"target":        {typ: "string"},
		"required_runs": {typ: "integer"},
		"timeout":       {typ: "duration"},
	}
}

func (pytestClass) config(raw yaml.RawMessage) (any, error) {
	c := &pytestConfig{Python: "python3"}
	if err := decodeConfig(raw, c); err != nil {
		return nil, err
	}
	if c.Python == "" || strings.ContainsAny(c.Python, " \t") {
		return nil, fmt.Errorf("python: want an interpreter name or path, got %q", c.Python)
	}
	return c, nil
}

func (pytestClass) check(a Args, d *Definition) error {
	t := a.str("target")
	switch {
	case strings.TrimSpace(t) == "":
		return errors.New("target is empty")
	case strings.HasPrefix(t, "-"):
		return fmt.Errorf("target %q looks like a flag", t)
	case a.integer("required_runs") < 1:
		return fmt.Errorf("required_runs is %d, want at least 1", a.integer("required_runs"))
	case a.dur("timeout") <= 0:
		return errors.New("timeout must be positive")
	}
	return nil
}

func (pytestClass) prepare(ctx context.Context, x *execution) error {
	if x.rule.Scope != "project" {
		return nil
	}
	if t := x.args.str("target"); t != "." {
		return refusef("claim %s needs the whole test suite: target must be \".\" (the policy's scope for %s is project), not %q", x.claim, x.def.Name, t)
	}
	for d := x.cwd; within(x.root, d); d = filepath.Dir(d) {
		if policies.IsPythonProject(d) {
			x.cwd = d
			if d == x.root {
				return nil
			}
			return x.rootAtHead(ctx, policies.PythonProjectMarkers...)
		}
		if d == x.root {
			break
		}
	}
	x.cwd = x.root
	return nil
}

func (pytestClass) run(ctx context.Context, x *execution) (*outcome, error) {
	tool := x.tc.Python
	if py := x.def.config.(*pytestConfig).Python; filepath.IsAbs(py) {
		tool = &Tool{Path: py, Source: "definition"}
	}
	if tool == nil {
		return nil, fmt.Errorf("pytest_pass: no python3 toolchain: run 'docket init' where python3 is on PATH, or set toolchains.python3 in claim_binding.yaml")
	}
	if err := tool.usable("python3", "toolchains.python3"); err != nil {
		return nil, err
	}
	x.useTool("python3", tool)
	py := tool.Path
	// -v: a line per test, -rs: a line per skip (a module's too), for the
	// skips of tests the change touched
	argv := []string{py, "-I", "-B", "-c", pytestMain, "-p", "no:cacheprovider", "--color=no", "-v", "-rs"}
	// pytest looks for its configuration from where it runs upward, past
	// the project, and loads the conftest.py files up to it: a pytest.ini
	// and a conftest.py an agent writes above the project would rewrite
	// the run. So the configuration must lie in the project (else an empty
	// one is given), and no conftest.py above where pytest runs is loaded.
	if !pytestConfigured(x.cwd, x.root) {
		empty := filepath.Join(x.tmp, "pytest.ini")
		if err := os.WriteFile(empty, []byte("[pytest]\n"), 0o644); err != nil {
			return nil, err
		}
		argv = append(argv, "-c", empty, "--rootdir", x.cwd)
	}
	argv = append(argv, "--confcutdir", x.cwd)
	whole := x.rule.Scope == "project"
	target := "."
	if !whole {
		target = x.args.str("target")
		argv = append(argv, target)
	}
	out := &outcome{testsRun: -1, detail: map[string]any{}}
	base, err := x.pyBaseOf(ctx, py, target)
	if err != nil {
		return nil, err
	}
	if base != nil {
		out.detail["base"] = base.commit
		if len(base.touched) > 0 {
			out.detail["tests_changed_since_base"] = clipList(sortedKeys(base.touched), 20)
		}
		if len(base.removed) > 0 {
			return out.goneSinceBase("removed_since_base", "test(s) HEAD defines", base.removed), nil
		}
		if len(base.startup) > 0 {
			return out.changedSinceBase("startup_changed_since_base", base.startup,
				"it decides what pytest runs or reports (a conftest.py that can hook pytest, the pytest section of a configuration file)"), nil
		}
	}
	env := append(x.tc.baseEnv(x.tmp), "HOME="+filepath.Join(x.tmp, "home"))
	runs := int(x.args.integer("required_runs"))
	timeout := x.args.dur("timeout")
	for i := 1; i <= runs; i++ {
		var last pytestSummary
		skips := &pytestSkipsTouched{base: base}
		lw := &lineWriter{fn: func(b []byte) {
			if s, ok := parsePytestSummary(string(b)); ok {
				last = s
			}
			skips.line(b)
		}}
		p, err := x.runProc(ctx, argv, env, timeout, fmt.Sprintf("run%d", i), lw)
		if err != nil {
			return nil, err
		}
		lw.Flush()
		if !last.Found && strings.Contains(x.readArtifact(fmt.Sprintf("run%d.stderr", i)), "No module named pytest") {
			return nil, fmt.Errorf("pytest_pass: pytest is not installed for %s", py)
		}
		out.runs = i
		ran := last.Passed + last.Failed
		if out.testsRun < 0 || ran < out.testsRun {
			out.testsRun = ran
		}
		reason := last.verdict(p, timeout.String())
		if reason == "" && whole && last.Deselected > 0 {
			reason = fmt.Sprintf("%d test(s) deselected: the whole suite must run", last.Deselected)
		}
		if reason == "" {
			reason = skips.verdict()
		}
		if reason != "" {
			out.reason = fmt.Sprintf("run %d of %d: %s", i, runs, reason)
			return out, nil
		}
	}
	out.pass = true
	return out, nil
}

// pytestSummary is pytest's final summary line, parsed.
type pytestSummary struct {
	Found                                             bool
	Passed, Failed, Errors, Skipped, XFailed, XPassed int
	Deselected                                        int
	NoTests                                           bool
}

var (
	ansiRE      = regexp.MustCompile("\x1b\\[[0-9;]*m")
	pySummaryRE = regexp.MustCompile(`^=*\s*(.*?)\s+in\s+[0-9.]+(?:s| seconds)(?:\s*\([0-9:.]+\))?\s*=*$`)
	pyCountRE   = regexp.MustCompile(`^(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|warnings?|deselected|rerun)$`)
)

// parsePytestSummary parses a summary line such as
// "==== 1 failed, 2 passed, 1 warning in 0.05s ====" or, in quiet mode,
// "2 passed in 0.01s". ok is false for any other line.
func parsePytestSummary(line string) (pytestSummary, bool) {
	line = strings.TrimSpace(ansiRE.ReplaceAllString(line, ""))
	m := pySummaryRE.FindStringSubmatch(line)
	if m == nil {
		return pytestSummary{}, false
	}
	s := pytestSummary{Found: true}
	if m[1] == "no tests ran" {
		s.NoTests = true
		return s, true
	}
	for _, part := range strings.Split(m[1], ", ") {
		c := pyCountRE.FindStringSubmatch(part)
		if c == nil {
			return pytestSummary{}, false
		}
		n, _ := strconv.Atoi(c[1])
		switch c[2] {
		case "passed":
			s.Passed = n
		case "failed":
			s.Failed = n
		case "error", "errors":
			s.Errors = n
		case "skipped":
			s.Skipped = n
		case "xfailed":
			s.XFailed = n
		case "xpassed":
			s.XPassed = n
		case "deselected":
			s.Deselected = n
		}
	}
	return s, true
}

func (s pytestSummary) verdict(p *proc, timeout string) string {
	switch {
	case p.timedOut:
		return "pytest timed out after " + timeout + " (process group killed)"
	case !s.Found:
		return fmt.Sprintf("no pytest summary line in the output (%s)", p.describe(0))
	case s.Failed > 0 || s.Errors > 0:
		return fmt.Sprintf("%d failed, %d errors", s.Failed, s.Errors)
	case p.exitCode == 5 || s.NoTests || s.Passed == 0:
		return "no test ran: nothing collected, or every test was skipped or deselected"
	case p.exitCode != 0:
		return fmt.Sprintf("pytest exited with status %d", p.exitCode)
	}
	return ""
}

// pytestConfigured reports whether pytest, run in dir, finds its
// configuration in a file between dir and root (the project): its
// configuration files, each only with pytest's section where the file
// serves other tools too.
func pytestConfigured(dir, root string) bool {
	for d := dir; within(root, d); d = filepath.Dir(d) {
		for _, f := range pyConfigFiles {
			b, err := os.ReadFile(filepath.Join(d, f))
			if err != nil {
				continue
			}
			switch f {
			case "pyproject.toml":
				if !bytes.Contains(b, []byte("[tool.pytest.ini_options]")) {
					continue
				}
			case "tox.ini":
				if !bytes.Contains(b, []byte("[pytest]")) {
					continue
				}
			case "setup.cfg":
				if !bytes.Contains(b, []byte("[tool:pytest]")) {
					continue
				}
			}
			return true
		}
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	return false
}
