package validators

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/policies"
)

// commandBinding allows make test and npm test, as the default binding
// does.
const commandBinding = `version: 1
claims:
  done:
    - validator: command_zero_exit
      commands: ["make test", "npm test"]
      example: '{"command":["make","test"]}'
  fixed: []
  tests_pass: []
  shipped: []
  blocked: []
  delegation: []
`

// An allowed command's exit status speaks for the work only while what
// it runs is HEAD's: each way an agent could make make test pass without
// fixing anything (its recipe, a test file gone, a skip added) fails,
// and the change committed first passes.
func TestCommandZeroExitAgainstHead(t *testing.T) {
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	// the suite: make test passes once status.txt says ok, and checks
	// that its test files are there
	setup := func(t *testing.T) (*Runner, string, func(args ...string)) {
		r, _, dir := newTestRunner(t)
		b, err := policies.ParseBinding(policies.Source{Name: "claim_binding.yaml", Origin: "test", Data: []byte(commandBinding)})
		if err != nil {
			t.Fatal(err)
		}
		r.Binding = b
		writeFiles(t, dir, map[string]string{
			"Makefile":              "include rules.mk\n",
			"rules.mk":              "test:\n\tgrep -q ok status.txt\n",
			"status.txt":            "failing\n",
			"pkg/calc_test.go":      "package pkg\n",
			"tests/test_calc.py":    "def test_calc():\n    pass\n",
			"web/app.test.js":       "test('x', () => {})\n",
			"package.json":          `{"name":"calc","scripts":{"test":"grep -q ok status.txt"},"dependencies":{}}` + "\n",
			"docs/notes_testing.md": "not a test\n",
		})
		return r, dir, committedRepo(t, dir)
	}
	write, remove := writeFile, removeFile
	fix := func(t *testing.T, dir string) { write(t, dir, "status.txt", "ok\n") }
	for _, tc := range []baseCase{
		{"the bug fixed", func(t *testing.T, dir string, _ func(...string)) { fix(t, dir) }, Pass, ""},
		{"the bug left", func(t *testing.T, dir string, _ func(...string)) {}, Fail, "command failed"},
		{"the recipe emptied", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "rules.mk", "test:\n\ttrue\n")
		}, Fail, "rules.mk new or changed since HEAD"},
		{"the include dropped", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "Makefile", "test:\n\ttrue\n")
		}, Fail, "Makefile new or changed since HEAD"},
		{"a GNUmakefile, which make reads first", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "GNUmakefile", "test:\n\ttrue\n")
		}, Fail, "GNUmakefile new or changed since HEAD"},
		{"a GNUmakefile the repository ignores", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, ".git/info/exclude", "GNUmakefile\n")
			write(t, dir, "GNUmakefile", "test:\n\ttrue\n")
		}, Fail, "GNUmakefile"},
		{"a Go test file deleted", func(t *testing.T, dir string, _ func(...string)) {
			fix(t, dir)
			remove(t, dir, "pkg/calc_test.go")
		}, Fail, "pkg/calc_test.go"},
		{"a Python test file renamed out of the suite", func(t *testing.T, dir string, git func(...string)) {
			fix(t, dir)
			git("mv", "tests/test_calc.py", "calc_checks.py")
		}, Fail, "tests/test_calc.py"},
		{"a JavaScript test file deleted", func(t *testing.T, dir string, _ func(...string)) {
			fix(t, dir)
			remove(t, dir, "web/app.test.js")
		}, Fail, "web/app.test.js"},
		{"a test file renamed to another", func(t *testing.T, dir string, git func(...string)) {
			fix(t, dir)
			git("mv", "pkg/calc_test.go", "pkg/sum_test.go")
		}, Pass, ""},
		{"another file deleted", func(t *testing.T, dir string, _ func(...string)) {
			fix(t, dir)
			remove(t, dir, "docs/notes_testing.md")
		}, Pass, ""},
		{"a skip added to a Go test", func(t *testing.T, dir string, _ func(...string)) {
			fix(t, dir)
			write(t, dir, "pkg/calc_test.go", "package pkg\n\nimport \"testing\"\n\nfunc TestCalc(t *testing.T) { t.Skip(\"later\") }\n")
		}, Fail, `pkg/calc_test.go: func TestCalc(t *testing.T) { t.Skip("later") }`},
		{"a pytest mark added", func(t *testing.T, dir string, _ func(...string)) {
			fix(t, dir)
			write(t, dir, "tests/test_calc.py", "import pytest\n\n@pytest.mark.skip\ndef test_calc():\n    pass\n")
		}, Fail, "tests/test_calc.py: @pytest.mark.skip"},
		{"a JavaScript suite narrowed to one test", func(t *testing.T, dir string, _ func(...string)) {
			fix(t, dir)
			write(t, dir, "web/app.test.js", "test.only('x', () => {})\n")
		}, Fail, "web/app.test.js"},
		{"a build constraint added to a Go test", func(t *testing.T, dir string, _ func(...string)) {
			fix(t, dir)
			write(t, dir, "pkg/calc_test.go", "//go:build never\n\npackage pkg\n")
		}, Fail, "//go:build never"},
		{"a test changed without a skip", func(t *testing.T, dir string, _ func(...string)) {
			fix(t, dir)
			write(t, dir, "tests/test_calc.py", "def test_calc():\n    assert 1 + 1 == 2\n")
		}, Pass, ""},
		{"the skip committed first", func(t *testing.T, dir string, git func(...string)) {
			fix(t, dir)
			write(t, dir, "tests/test_calc.py", "import pytest\n\n@pytest.mark.skip\ndef test_calc():\n    pass\n")
			git("commit", "-q", "-am", "skip it")
		}, Pass, ""},
		{"the recipe change committed first", func(t *testing.T, dir string, git func(...string)) {
			write(t, dir, "rules.mk", "test:\n\ttrue\n")
			git("commit", "-q", "-am", "no tests")
		}, Pass, ""},
	} {
		tc.run(t, setup, "command_zero_exit", `{"command":"make test"}`)
	}

	// npm: the scripts of package.json, not the rest of it
	for _, tc := range []struct {
		name, packageJSON string
		flagged           bool
	}{
		{"the test script replaced", `{"name":"calc","scripts":{"test":"true"},"dependencies":{}}`, true},
		{"a pretest script added", `{"name":"calc","scripts":{"pretest":"exit 0","test":"grep -q ok status.txt"}}`, true},
		{"a dependency added", `{"name":"calc","scripts":{"test":"grep -q ok status.txt"},"dependencies":{"left-pad":"1.3.0"}}`, false},
	} {
		t.Run("npm: "+tc.name, func(t *testing.T) {
			r, dir, _ := setup(t)
			fix(t, dir)
			write(t, dir, "package.json", tc.packageJSON+"\n")
			res := runReq(t, r, "s1", "done", "command_zero_exit", `{"command":"npm test"}`, dir)
			flagged := strings.Contains(res.Reason, "package.json new or changed since HEAD")
			if flagged != tc.flagged {
				t.Fatalf("got %s %q; want package.json flagged: %v", res.Outcome, res.Reason, tc.flagged)
			}
		})
	}
}

// shipped is backed by the ref on the remote: a remote that resolves to
// a repository on this machine, by its URL or by a url.*.insteadOf
// rewrite, or to a remote helper, says nothing of what was shipped.
func TestCommandShippedRemote(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	const binding = `version: 1
claims:
  done: []
  fixed: []
  tests_pass: []
  shipped:
    - validator: command_zero_exit
      commands: ["git ls-remote --exit-code origin refs/heads/main"]
      example: '{"command":"git ls-remote --exit-code origin refs/heads/main"}'
  blocked: []
  delegation: []
`
	for _, tc := range []struct {
		name   string
		config []string // git config settings, name then value
		want   string   // substring of the reason
	}{
		{"a path", []string{"remote.origin.url", "BARE"}, "a repository on this machine"},
		{"a file URL", []string{"remote.origin.url", "file://BARE"}, "a repository on this machine"},
		{"a rewrite to a path", []string{"remote.origin.url", "https://example.invalid/calc.git", "url.BARE.insteadOf", "https://example.invalid/calc.git"}, "a repository on this machine"},
		{"a remote helper", []string{"remote.origin.url", "ext::sh -c true"}, "a remote helper's address"},
		{"a network remote", []string{"remote.origin.url", "https://example.invalid/calc.git"}, "command failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _, dir := newTestRunner(t)
			b, err := policies.ParseBinding(policies.Source{Name: "claim_binding.yaml", Origin: "test", Data: []byte(binding)})
			if err != nil {
				t.Fatal(err)
			}
			r.Binding = b
			writeFiles(t, dir, map[string]string{"README": "calc\n"})
			git := committedRepo(t, dir)
			git("branch", "-M", "main")
			bare := filepath.Join(t.TempDir(), "calc.git")
			git("clone", "-q", "--bare", dir, bare)
			for i := 0; i+1 < len(tc.config); i += 2 {
				git("config", strings.ReplaceAll(tc.config[i], "BARE", bare), strings.ReplaceAll(tc.config[i+1], "BARE", bare))
			}
			res := runReq(t, r, "s1", "shipped", "command_zero_exit", `{"command":"git ls-remote --exit-code origin refs/heads/main"}`, dir)
			if res.Outcome != Fail || !strings.Contains(res.Reason, tc.want) {
				t.Fatalf("got %s %q, want FAIL %q", res.Outcome, res.Reason, tc.want)
			}
		})
	}
}
