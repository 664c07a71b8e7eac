package validators

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/ledger"
)

// TestGoTestPassAgainstHead: what an agent does to a failing test to
// make `go test` pass — delete it, rename it, move it into a file the
// build leaves out, make it skip, or write a new test that skips — fails
// go_test_pass, which compares the suite with the one HEAD commits. What
// HEAD already skipped or left out of the build still passes, and so
// does a removal committed first.
func TestGoTestPassAgainstHead(t *testing.T) {
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	const (
		addTest = "package add\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n"
		// TestSub fails: Sub is wrong
		subTest = "package add\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n"
		envTest = "package add\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestDB(t *testing.T) {\n\tif os.Getenv(\"DB_URL\") == \"\" {\n\t\tt.Skip(\"no database\")\n\t}\n}\n"
		winTest = "package add\n\nimport \"testing\"\n\nfunc TestWindowsOnly(t *testing.T) {}\n"
		ignored = "//go:build ignore\n\npackage add\n\nimport \"testing\"\n\nfunc TestIgnored(t *testing.T) { t.Fatal(\"never built\") }\n"
		// forged prints what a passing run of add's tests prints, in the
		// framing go test -json reads, and exits 0 without running them
		forged       = "\tfor _, n := range []string{\"TestAdd\", \"TestSub\", \"TestDB\"} {\n\t\tfmt.Printf(\"\\x16=== RUN   %s\\n\\x16--- PASS: %s (0.00s)\\n\", n, n)\n\t}\n\tfmt.Print(\"\\x16PASS\\n\")\n\tos.Exit(0)\n"
		forgeImports = "package add\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nvar _ testing.M\n\n"
	)
	setup := func(t *testing.T) (*Runner, string, func(args ...string)) {
		r, _, dir := newLooseRunner(t)
		writeFiles(t, dir, map[string]string{
			"go.mod":                  "module example.com/tiny\n\ngo 1.21\n",
			"add/add.go":              "package add\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a + b }\n",
			"add/add_test.go":         addTest,
			"add/sub_test.go":         subTest,
			"add/db_test.go":          envTest,
			"add/win_windows_test.go": winTest,
			"add/ignored_test.go":     ignored,
			"mul/mul.go":              "package mul\n\nfunc Mul(a, b int) int { return a * b }\n",
			"mul/mul_test.go":         "package mul\n\nimport \"testing\"\n\nfunc TestMul(t *testing.T) {\n\tif Mul(2, 3) != 6 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
			// a TestMain HEAD has already: unchanged, it decides nothing new
			"mul/main_test.go": "package mul\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(m.Run()) }\n",
			// not reached by ./...: a module of its own, and test data
			"tools/go.mod":           "module example.com/tools\n\ngo 1.21\n",
			"tools/tool_test.go":     "package tools\n\nimport \"testing\"\n\nfunc TestTool(t *testing.T) {}\n",
			"mul/testdata/x_test.go": "package x\n\nimport \"testing\"\n\nfunc TestData(t *testing.T) {}\n",
		})
		return r, dir, committedRepo(t, dir)
	}
	write, remove := writeFile, removeFile
	fixed := "package add\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Sub(a, b int) int { return a - b }\n"
	for _, tc := range []baseCase{
		{"the bug fixed", func(t *testing.T, dir string, _ func(...string)) { write(t, dir, "add/add.go", fixed) }, Pass, ""},
		{"the failing test deleted", func(t *testing.T, dir string, _ func(...string)) { remove(t, dir, "add/sub_test.go") }, Fail, "example.com/tiny/add.TestSub"},
		{"the failing test renamed", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/sub_test.go", strings.Replace(subTest, "func TestSub(", "func testSub(", 1))
		}, Fail, "HEAD defines are gone"},
		{"the failing test left out of the build", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/sub_test.go", "//go:build ignore\n\n"+subTest)
		}, Fail, "TestSub"},
		{"the failing test's file renamed out of the test build", func(t *testing.T, dir string, _ func(...string)) {
			remove(t, dir, "add/sub_test.go")
			write(t, dir, "add/sub_checks.go", subTest)
		}, Fail, "TestSub"},
		{"the failing test made to skip", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/sub_test.go", strings.Replace(subTest, "{\n\tif", "{\n\tt.Skip(\"flaky\")\n\tif", 1))
		}, Fail, "skipped: example.com/tiny/add.TestSub"},
		{"a subtest made to skip", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/sub_test.go", strings.Replace(subTest, "{\n\tif Sub(3, 1) != 2 {\n\t\tt.Fatal(\"bad\")\n\t}\n}",
				"{\n\tt.Run(\"three\", func(t *testing.T) {\n\t\tt.Skip(\"later\")\n\t\tif Sub(3, 1) != 2 {\n\t\t\tt.Fatal(\"bad\")\n\t\t}\n\t})\n}", 1))
		}, Fail, "TestSub/three"},
		{"a new test that skips", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/add.go", fixed)
			write(t, dir, "add/new_test.go", "package add\n\nimport \"testing\"\n\nfunc TestNew(t *testing.T) { t.Skip(\"todo\") }\n")
		}, Fail, "TestNew"},
		{"the windows-only test deleted", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/add.go", fixed)
			remove(t, dir, "add/win_windows_test.go")
		}, Pass, ""},
		{"a new test", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/add.go", fixed)
			write(t, dir, "add/new_test.go", "package add\n\nimport \"testing\"\n\nfunc TestNew(t *testing.T) {}\n")
		}, Pass, ""},
		{"the failing test's package deleted whole", func(t *testing.T, dir string, _ func(...string)) {
			if err := os.RemoveAll(filepath.Join(dir, "add")); err != nil {
				t.Fatal(err)
			}
		}, Fail, "./add.TestSub"},
		{"another module and test data deleted", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/add.go", fixed)
			for _, d := range []string{"tools", "mul/testdata"} {
				if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
					t.Fatal(err)
				}
			}
		}, Pass, ""},
		{"HEAD pointed at a branch that does not exist", func(t *testing.T, dir string, git func(...string)) {
			remove(t, dir, "add/sub_test.go")
			git("symbolic-ref", "HEAD", "refs/heads/nowhere")
		}, Refused, "HEAD names no commit"},
		{"HEAD made unreadable", func(t *testing.T, dir string, _ func(...string)) {
			remove(t, dir, "add/sub_test.go")
			write(t, dir, ".git/HEAD", "garbage\n")
		}, Refused, "HEAD names no commit"},
		{"a TestMain that reports every test passed", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/main_test.go", forgeImports+"func TestMain(m *testing.M) {\n"+forged+"}\n")
		}, Fail, "example.com/tiny/add.TestMain new or changed since HEAD"},
		{"an init in a test file that reports every test passed", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/zz_test.go", forgeImports+"func init() {\n"+forged+"}\n")
		}, Fail, "example.com/tiny/add.init new or changed"},
		// the same, from code the base check does not read: an init in a
		// source file, and HEAD's own TestMain that never runs the tests
		{"an init in a source file that reports every test passed", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/zz.go", "package add\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"strings\"\n)\n\n"+
				"func init() {\n\tif !strings.HasSuffix(os.Args[0], \".test\") {\n\t\treturn\n\t}\n"+forged+"}\n")
		}, Fail, "reported without running the tests"},
		{"HEAD's TestMain that never runs the tests, committed", func(t *testing.T, dir string, git func(...string)) {
			write(t, dir, "add/main_test.go", forgeImports+"func TestMain(m *testing.M) {\n"+forged+"}\n")
			git("add", "-A")
			git("commit", "-q", "-m", "a TestMain")
		}, Fail, "example.com/tiny/add reported without running the tests"},
		{"HEAD's TestMain changed", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "add/add.go", fixed)
			write(t, dir, "mul/main_test.go", "package mul\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { m.Run(); os.Exit(0) }\n")
		}, Fail, "example.com/tiny/mul.TestMain"},
		{"the removal committed first", func(t *testing.T, dir string, git func(...string)) {
			remove(t, dir, "add/sub_test.go")
			git("commit", "-q", "-am", "drop TestSub")
		}, Pass, ""},
	} {
		res := tc.run(t, setup, "go_test_pass", `{"package":"./..."}`)
		if tc.name == "a new test" && !strings.Contains(string(res.Entry.Body), `"tests_changed_since_base":["example.com/tiny/add.TestNew"]`) {
			t.Errorf("the pass does not name the test it rests on that the change wrote: %s", res.Entry.Body)
		}
		// the check test is added to the run, not to the project, and is
		// not counted: TestAdd, TestSub and TestMul ran, TestDB skipped
		if tc.name == "the bug fixed" && (!strings.Contains(string(res.Entry.Body), `"tests_run":3,`) ||
			!strings.Contains(string(res.Entry.Body), `"digest":"`) || strings.Contains(string(res.Entry.Body), "changed while")) {
			t.Errorf("the pass counts or writes the check test: %s", res.Entry.Body)
		}
	}
	// the commit's tree and files are read, not kept: detail.base names them
	{
		r, l, dir := newLooseRunner(t)
		writeFiles(t, dir, map[string]string{"go.mod": "module example.com/tiny\n\ngo 1.21\n", "add/add.go": fixed, "add/add_test.go": addTest})
		committedRepo(t, dir)
		res := runReq(t, r, "s1", "done", "go_test_pass", `{"package":"./..."}`, dir)
		if res.Outcome != Pass || !strings.Contains(string(res.Entry.Body), `"base":"`) {
			t.Fatalf("%s %q %s", res.Outcome, res.Reason, res.Entry.Body)
		}
		for _, name := range []string{"base-tree.stdout", "base-files.stdout"} {
			if rc, err := l.OpenArtifact(res.Entry, name); err == nil {
				rc.Close()
				t.Errorf("the pass keeps %s", name)
			}
		}
		if rc, err := l.OpenArtifact(res.Entry, "run1.stdout"); err != nil {
			t.Errorf("the pass lost its run's output: %v", err)
		} else {
			rc.Close()
		}
	}
	// outside a repository, or in one with no commit yet, there is no
	// base: the run alone decides
	for _, repo := range []bool{false, true} {
		r, _, dir := newLooseRunner(t)
		writeFiles(t, dir, map[string]string{"go.mod": "module example.com/tiny\n\ngo 1.21\n", "add/add.go": fixed, "add/new_test.go": "package add\n\nimport \"testing\"\n\nfunc TestNew(t *testing.T) {}\n\nfunc TestLater(t *testing.T) { t.Skip(\"todo\") }\n"})
		if repo {
			cmd := exec.Command("git", "init", "-q")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
		}
		if res := runReq(t, r, "s1", "done", "go_test_pass", `{"package":"./..."}`, dir); res.Outcome != Pass {
			t.Fatalf("repository %v, no commit: %s %q", repo, res.Outcome, res.Reason)
		}
	}
}

// committedRepo makes dir a git repository with everything in it
// committed (no user or system git configuration), and returns a
// function that runs git there.
func committedRepo(t *testing.T, dir string) func(args ...string) {
	t.Helper()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "base")
	return git
}

func writeFile(t *testing.T, dir, name, body string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{name: body})
}

func removeFile(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

// baseCase is a change to a committed project, and what a test
// validator must make of it.
type baseCase struct {
	name   string
	change func(t *testing.T, dir string, git func(...string))
	want   Outcome
	reason string // substring of the result's reason
}

// run makes the change in a project from setup and runs validator.
func (tc baseCase) run(t *testing.T, setup func(t *testing.T) (*Runner, string, func(...string)), validator, args string) *Result {
	t.Helper()
	var res *Result
	t.Run(tc.name, func(t *testing.T) {
		r, dir, git := setup(t)
		tc.change(t, dir, git)
		res = runReq(t, r, "s1", "done", validator, args, dir)
		if res.Outcome != tc.want || !strings.Contains(res.Reason, tc.reason) {
			t.Fatalf("got %s %q; want %s %q", res.Outcome, res.Reason, tc.want, tc.reason)
		}
	})
	if res == nil {
		return &Result{Entry: &ledger.Entry{}}
	}
	if res.Entry == nil {
		res.Entry = &ledger.Entry{}
	}
	return res
}

// A project-scope validation runs from the module or Python root above
// its working directory: a go.mod, or a tests directory, that the change
// adds below the project makes a root whose suite holds only the tests
// the change chose there. It is refused; a root HEAD has is not.
func TestProjectRootAtHead(t *testing.T) {
	for _, tool := range []string{"go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH", tool)
		}
	}
	py := pythonWithPytest(t)
	failing := map[string]string{
		"go.mod":                "module example.com/tiny\n\ngo 1.21\n",
		"add/add.go":            "package add\n\nfunc Add(a, b int) int { return a - b }\n",
		"add/add_test.go":       "package add\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n",
		"pyproject.toml":        "[project]\nname = \"calc\"\nversion = \"0\"\n",
		"tests/test_add.py":     "def test_add():\n    assert 2 - 2 == 4\n",
		"docs/README.md":        "docs\n",
		"tools/go.mod":          "module example.com/tools\n\ngo 1.21\n",
		"tools/tool_test.go":    "package tools\n\nimport \"testing\"\n\nfunc TestTool(t *testing.T) {}\n",
		"tools/tests/test_t.py": "def test_t():\n    pass\n",
	}
	carve := map[string]string{
		"docs/go.mod":           "module example.com/docs\n\ngo 1.21\n",
		"docs/ok_test.go":       "package docs\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n",
		"docs/tests/test_ok.py": "def test_ok():\n    pass\n",
	}
	for _, tc := range []struct {
		name, validator, args, dir string
		want                       Outcome
	}{
		{"a module the change made", "go_test_pass", `{"package":"./...","required_runs":1}`, "docs", Refused},
		{"a module HEAD has", "go_test_pass", `{"package":"./...","required_runs":1}`, "tools", Pass},
		{"a tests directory the change made", "pytest_pass", `{"target":".","required_runs":1}`, "docs", Refused},
		{"a tests directory HEAD has", "pytest_pass", `{"target":".","required_runs":1}`, "tools", Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.validator == "pytest_pass" && py == "" {
				t.Skip("no python3 with pytest (Debian: python3-pytest)")
			}
			r, _, dir := newTestRunner(t)
			if py != "" {
				r.Toolchain.Python = &Tool{Path: py, Source: "system"}
			}
			writeFiles(t, dir, failing)
			committedRepo(t, dir)
			writeFiles(t, dir, carve)
			res := runReq(t, r, "s1", "done", tc.validator, tc.args, filepath.Join(dir, tc.dir))
			if res.Outcome != tc.want || tc.want == Refused && !strings.Contains(res.Reason, "a root the change made") {
				t.Fatalf("got %s %q, want %s", res.Outcome, res.Reason, tc.want)
			}
		})
	}
}
