package validators

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonWithPytest is a python3 that can import pytest, or "".
func pythonWithPytest(t *testing.T) string {
	t.Helper()
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, py := range cands {
		if exec.Command(py, "-c", "import pytest").Run() == nil {
			return py
		}
	}
	return ""
}

// TestPytestPassAgainstHead: pytest_pass's side of
// TestGoTestPassAgainstHead. What an agent does to a failing Python test
// to make pytest pass — delete it, rename it, move it into a file pytest
// does not collect, mark it skip or xfail (on the test, its class or
// its module), or write a new test that skips — fails pytest_pass; what
// HEAD already skipped still passes, and so does a removal committed
// first.
func TestPytestPassAgainstHead(t *testing.T) {
	py := pythonWithPytest(t)
	if py == "" {
		t.Skip("no python3 with pytest (Debian: python3-pytest)")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	const (
		calc    = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a + b\n"
		fixed   = "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n"
		addTest = "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"
		// test_sub fails: sub is wrong
		subTest = "from calc import sub\n\n\nclass TestSub:\n    def test_sub(self):\n        assert sub(3, 1) == 2\n"
		envTest = "import os\nimport pytest\n\n@pytest.mark.skipif(not os.environ.get('DB_URL'), reason='no database')\ndef test_db():\n    pass\n"
		// forge turns every failed result into a pass, as a conftest.py
		// hook or a plugin may
		forge = "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n    rep = (yield).get_result()\n    if rep.failed:\n        rep.outcome = 'passed'\n"
		// a hook HEAD has already: unchanged, it decides nothing new
		headHook = "def pytest_configure(config):\n    config.addinivalue_line('markers', 'slow: a slow test')\n"
		project  = "[project]\nname = \"calc\"\nversion = \"0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n"
	)
	setup := func(t *testing.T) (*Runner, string, func(args ...string)) {
		r, _, dir := newLooseRunner(t)
		r.Toolchain.Python = &Tool{Path: py, Source: "system"}
		writeFiles(t, dir, map[string]string{
			"pyproject.toml":      project,
			"conftest.py":         headHook,
			"calc.py":             calc,
			"tests/test_add.py":   addTest,
			"tests/test_sub.py":   subTest,
			"tests/test_db.py":    envTest,
			".venv/lib/x_test.py": "def test_vendored():\n    pass\n",
		})
		return r, dir, committedRepo(t, dir)
	}
	write, remove := writeFile, removeFile
	for _, tc := range []baseCase{
		{"the bug fixed", func(t *testing.T, dir string, _ func(...string)) { write(t, dir, "calc.py", fixed) }, Pass, ""},
		{"the bug left", func(t *testing.T, dir string, _ func(...string)) {}, Fail, "1 failed"},
		{"the failing test deleted", func(t *testing.T, dir string, _ func(...string)) { remove(t, dir, "tests/test_sub.py") }, Fail, "tests/test_sub.py::TestSub::test_sub"},
		{"the failing test renamed", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/test_sub.py", strings.Replace(subTest, "def test_sub", "def check_sub", 1))
		}, Fail, "HEAD defines are gone"},
		{"the failing test's file renamed out of collection", func(t *testing.T, dir string, _ func(...string)) {
			remove(t, dir, "tests/test_sub.py")
			write(t, dir, "tests/sub_checks.py", subTest)
		}, Fail, "HEAD defines are gone"},
		{"the failing test marked skip", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/test_sub.py", strings.Replace(subTest, "    def test_sub", "    @__import__('pytest').mark.skip(reason='flaky')\n    def test_sub", 1))
		}, Fail, "tests/test_sub.py::TestSub::test_sub (skipped)"},
		{"the failing test marked xfail", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/test_sub.py", "import pytest\n"+strings.Replace(subTest, "    def test_sub", "    @pytest.mark.xfail\n    def test_sub", 1))
		}, Fail, "(xfail)"},
		{"its class marked skip", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/test_sub.py", "import pytest\n"+strings.Replace(subTest, "class TestSub", "@pytest.mark.skip\nclass TestSub", 1))
		}, Fail, "TestSub::test_sub (skipped)"},
		{"its module marked skip", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/test_sub.py", "import pytest\npytestmark = pytest.mark.skip\n"+subTest)
		}, Fail, "TestSub::test_sub (skipped)"},
		{"its module skipped at import", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/test_sub.py", "import pytest\npytest.skip('later', allow_module_level=True)\n"+subTest)
		}, Fail, "TestSub::test_sub (skipped with its module)"},
		{"a new test that skips", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "calc.py", fixed)
			write(t, dir, "tests/test_new.py", "import pytest\n\ndef test_new():\n    pytest.skip('todo')\n")
		}, Fail, "tests/test_new.py::test_new (skipped)"},
		{"a new test", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "calc.py", fixed)
			write(t, dir, "tests/test_new.py", "def test_new():\n    pass\n")
		}, Pass, ""},
		{"a conftest.py that reports failures as passes", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/conftest.py", forge)
		}, Fail, "tests/conftest.py new or changed since HEAD"},
		{"HEAD's conftest.py given that hook", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "conftest.py", forge+"\n\n"+headHook)
		}, Fail, "conftest.py new or changed since HEAD"},
		{"a conftest.py that makes the hook unseen", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/forge.py", forge)
			write(t, dir, "tests/conftest.py", "import importlib\n\nm = importlib.import_module('forge')\nfor k in dir(m):\n    if k.startswith('py' + 'test_'):\n        globals()[k] = getattr(m, k)\n")
		}, Fail, "tests/conftest.py"},
		{"a plugin the configuration loads", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "forge.py", forge)
			write(t, dir, "pyproject.toml", project+"addopts = \"-p forge\"\n")
		}, Fail, "pyproject.toml new or changed since HEAD"},
		// pytest finds a configuration above a project that has none, and
		// loads the conftest.py beside it
		{"a configuration and a conftest.py above the project", func(t *testing.T, dir string, git func(...string)) {
			write(t, dir, "pyproject.toml", strings.Split(project, "\n\n")[0]+"\n")
			git("commit", "-q", "-am", "no pytest section")
			write(t, filepath.Dir(dir), "pytest.ini", "[pytest]\n")
			write(t, filepath.Dir(dir), "conftest.py", forge)
		}, Fail, "1 failed"},
		// a module of the project's own that shadows pytest, or one the
		// base check's script imports
		{"a pytest.py that reports a pass", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "pytest.py", "print('tests/test_sub.py::TestSub::test_sub PASSED')\nprint('==== 3 passed in 0.01s ====')\n")
		}, Fail, "1 failed"},
		{"a hashlib.py that hides a change", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "tests/test_sub.py", "import pytest\n"+strings.Replace(subTest, "class TestSub", "@pytest.mark.skip\nclass TestSub", 1))
			write(t, dir, "hashlib.py", "class H:\n    def __init__(self, *a, **k): pass\n    def update(self, b): pass\n    def hexdigest(self): return '0'\n\ndef sha256(*a, **k): return H()\n")
		}, Fail, "TestSub::test_sub (skipped)"},
		{"the configuration collects around the failing test", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "pyproject.toml", project+"python_classes = [\"Nothing\"]\n")
		}, Fail, "pyproject.toml new or changed since HEAD"},
		{"a pytest.ini that deselects the failing test", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "pytest.ini", "[pytest]\npythonpath = .\naddopts = -k \"not test_sub\"\n")
		}, Fail, "pytest.ini new or changed since HEAD"},
		{"a conftest.py with a fixture", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "calc.py", fixed)
			write(t, dir, "tests/conftest.py", "import pytest\n\n@pytest.fixture\ndef two():\n    return 2\n")
		}, Pass, ""},
		{"the configuration changed outside its pytest section", func(t *testing.T, dir string, _ func(...string)) {
			write(t, dir, "calc.py", fixed)
			write(t, dir, "pyproject.toml", strings.Replace(project, "version = \"0\"\n", "version = \"1\"\ndependencies = [\"requests\"]\n", 1))
		}, Pass, ""},
		{"the removal committed first", func(t *testing.T, dir string, git func(...string)) {
			remove(t, dir, "tests/test_sub.py")
			git("commit", "-q", "-am", "drop test_sub")
		}, Pass, ""},
	} {
		res := tc.run(t, setup, "pytest_pass", `{"target":"."}`)
		if tc.name == "a new test" && !strings.Contains(string(res.Entry.Body), `"tests_changed_since_base":["tests/test_new.py::test_new"]`) {
			t.Errorf("the pass does not name the test the change wrote: %s", res.Entry.Body)
		}
		// pytest wrote nothing into the project: the pass pins the tree
		if tc.want == Pass && strings.Contains(string(res.Entry.Body), "changed while the validator ran") {
			t.Errorf("%s: the run changed the working tree: %s", tc.name, res.Entry.Body)
		}
	}
}

// TestPytestSkipsTouched reads `pytest -v -rs` output as pytest 7.2
// prints it: a test's own skip from its result line, a module skipped at
// import (no result line of its own) from the short summary, and only
// for tests the change touched.
func TestPytestSkipsTouched(t *testing.T) {
	base := &pyBase{touched: map[string]bool{"tests/test_new.py::test_new": true, "tests/test_mod.py::test_a": true}}
	for _, tc := range []struct {
		name, out, want string
	}{
		{"a touched test skipped", "tests/test_new.py::test_new SKIPPED (todo)                    [ 50%]\n", "tests/test_new.py::test_new (skipped)"},
		{"a touched test xfailed, with parameters", "tests/test_new.py::test_new[1-2] XFAIL                    [ 50%]\n", "tests/test_new.py::test_new (xfail)"},
		{"an untouched test skipped", "tests/test_db.py::test_db SKIPPED (no database)\nSKIPPED [1] tests/test_db.py:5: no database\n", ""},
		{"only a module skipped at import", "=== short test summary info ===\nSKIPPED [1] tests/test_mod.py:2: later\n", "tests/test_mod.py::test_a (skipped with its module)"},
		{"a touched test passed", "tests/test_new.py::test_new PASSED                    [ 50%]\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &pytestSkipsTouched{base: base}
			lw := &lineWriter{fn: s.line}
			lw.Write([]byte(tc.out))
			lw.Flush()
			v := s.verdict()
			if tc.want == "" && v != "" || !strings.Contains(v, tc.want) {
				t.Fatalf("verdict %q, want %q", v, tc.want)
			}
		})
	}
}
