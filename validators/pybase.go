package validators

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// pyBase is pytest_pass's goBase: the test functions of the suite as the
// commit HEAD names it, read by Python's own parser (pyTestsScript, run
// with the harness's python), never by importing the code. A test HEAD
// defines that is gone fails the run (deleted, renamed, or moved into a
// file pytest does not collect), and so does a test new or changed since
// HEAD that is skipped or marked xfail; a skip or xfail mark counts as a
// change, on the test, its class or its module (pytestmark, or a
// statement run at import such as pytest.skip(allow_module_level=True)).
//
// pytest also runs code of the project's before any test: conftest.py,
// and plugins its configuration loads. Such code can rewrite every
// result (a pytest_runtest_makereport hook that turns failed into
// passed), and the configuration decides which tests are collected at
// all (python_classes, testpaths, addopts -k). So a conftest.py new or
// changed since HEAD that can hook pytest (pyTestsScript's
// loads_pytest), or a pytest section of a configuration file new or
// changed since HEAD (pytest_section), fails the run too.
type pyBase struct {
	commit  string
	removed []string        // path::[Class::]test at HEAD, gone now
	touched map[string]bool // path::[Class::]test new or changed since HEAD
	// startup are the conftest.py files new or changed since HEAD that
	// can hook pytest, and the configuration files whose pytest section
	// is.
	startup []string
}

// pyConfigFiles are the files pytest reads its configuration from, in
// the directory it runs in.
var pyConfigFiles = []string{"pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"}

// pyStartupSpecs are the paths (relative to where pytest runs) of the
// files it loads before the tests, beside the conftest.py files under
// target: the conftest.py of each directory between there and target,
// and the configuration files.
func pyStartupSpecs(target string) []string {
	specs := append([]string(nil), pyConfigFiles...)
	for d := filepath.ToSlash(filepath.Dir(target)); d != "." && d != "/" && d != ""; d = filepath.ToSlash(filepath.Dir(d)) {
		specs = append(specs, d+"/conftest.py")
	}
	return append(specs, "conftest.py")
}

// isPyStartup reports whether the file name of dir (both as git lists
// them) is one pytest loads before the tests: a conftest.py in a
// directory it collects, or a configuration file where it runs.
func isPyStartup(dir, name string) bool {
	if name == "conftest.py" {
		return collectedDir(dir)
	}
	return dir == "." && slices.Contains(pyConfigFiles, name)
}

// pyTestsScript prints, as JSON, the test functions of the files a spec
// names at HEAD and now ({"head": {id: digest}, "now": {...}, "errors":
// [...]}): module-level test* functions and the test* methods of Test*
// classes and of TestCase subclasses, by pytest's default rules; a
// digest covers the function (without line numbers) and the marks of its
// class and module. It runs isolated (-I): the project's directory is not
// on sys.path, so no module of the project's stands in for one it imports.
const pyTestsScript = `
import ast, hashlib, json, re, sys

def marks(body):
    # what decides for every test below it: pytestmark, and statements
    # run at import (pytest.skip(allow_module_level=True), an if around
    # one), not imports, definitions or other assignments
    out = []
    for n in body:
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
        if any(getattr(t, "id", "") == "pytestmark" for t in targets):
            out.append(ast.dump(n))
        elif not isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.AugAssign)):
            out.append(ast.dump(n))
    return out

def base_name(e):
    return e.attr if isinstance(e, ast.Attribute) else getattr(e, "id", "")

def digest(ctx, node):
    h = hashlib.sha256()
    for c in ctx:
        h.update(c.encode() + b"\0")
    h.update(ast.dump(node).encode())
    return h.hexdigest()

def tests(path, src):
    tree = ast.parse(src, path)
    funcs = (ast.FunctionDef, ast.AsyncFunctionDef)
    out, mod = {}, marks(tree.body)
    for n in tree.body:
        if isinstance(n, funcs) and n.name.startswith("test"):
            out[path + "::" + n.name] = digest(mod, n)
        elif isinstance(n, ast.ClassDef) and (n.name.startswith("Test") or any(base_name(b).endswith("TestCase") for b in n.bases)):
            ctx = mod + [ast.dump(d) for d in n.decorator_list] + marks(n.body)
            for m in n.body:
                if isinstance(m, funcs) and m.name.startswith("test"):
                    out[path + "::" + n.name + "::" + m.name] = digest(ctx, m)
    return out

DYNAMIC = {"globals", "locals", "vars", "setattr", "exec", "eval", "__import__", "import_module", "register"}

def loads_pytest(path, src):
    # whether a conftest.py can hook pytest: any name, attribute or
    # string with pytest_ in it (a hook, pytest_plugins), or a call that
    # could make one unseen (globals(), setattr, exec, an import by
    # name, a plugin registered); one that does not parse, too
    try:
        tree = ast.parse(src, path)
    except SyntaxError:
        return True
    for n in ast.walk(tree):
        for v in (getattr(n, "name", None), getattr(n, "asname", None), getattr(n, "id", None), getattr(n, "attr", None), getattr(n, "arg", None)):
            if isinstance(v, str) and "pytest_" in v:
                return True
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and "pytest_" in n.value:
            return True
        if isinstance(n, ast.Call) and (getattr(n.func, "id", None) in DYNAMIC or getattr(n.func, "attr", None) in DYNAMIC):
            return True
    return False

def pytest_section(rel, src):
    # the digest of a configuration file's pytest section: what decides
    # which tests pytest collects and how it runs them (addopts, python_*,
    # testpaths, norecursedirs...); the rest of the file serves other tools
    name = rel.rsplit("/", 1)[-1]
    text = src.decode("utf-8", "replace")
    section = None
    try:
        if name == "pyproject.toml":
            try:
                import tomllib
                section = tomllib.loads(text).get("tool", {}).get("pytest", {}).get("ini_options")
            except ImportError:  # before Python 3.11: the section's text
                m = re.search(r"(?ms)^\[tool\.pytest\.ini_options\][^\n]*\n(.*?)(?=^\[|\Z)", text)
                section = m and m.group(1).strip()
        else:
            import configparser
            cp = configparser.RawConfigParser(strict=False)
            cp.read_string(text)
            want = "tool:pytest" if name == "setup.cfg" else "pytest"
            if cp.has_section(want):
                section = dict(cp.items(want))
    except Exception as e:  # unreadable: count it as changed
        section = "unreadable: " + str(e) + " " + hashlib.sha256(src).hexdigest()
    return hashlib.sha256(json.dumps(section, sort_keys=True, default=str).encode()).hexdigest()

def startup_digest(rel, src):
    if rel.endswith("conftest.py"):
        return hashlib.sha256(src).hexdigest()
    return pytest_section(rel, src)

with open(sys.argv[1]) as f:
    spec = json.load(f)
res = {"head": {}, "now": {}, "startup_head": {}, "startup_now": {}, "errors": []}
for side in ("startup_head", "startup_now"):
    for rel, path in spec[side]:
        try:
            with open(path, "rb") as f:
                src = f.read()
        except Exception as e:
            res["errors"].append(side + " " + rel + ": " + str(e))
            continue
        sd = startup_digest(rel, src)
        if side == "startup_head":
            res[side][rel] = sd
        else:
            loads = loads_pytest(rel, src) if rel.endswith("conftest.py") else True
            res[side][rel] = {"digest": sd, "loads": loads}
for side in ("head", "now"):
    for rel, path in spec[side]:
        try:
            with open(path, "rb") as f:
                res[side].update(tests(rel, f.read()))
        except Exception as e:  # unreadable, or no Python: its tests are not there
            res["errors"].append(side + " " + rel + ": " + str(e))
json.dump(res, sys.stdout)
`

// pyBaseOf reads the suite under target (relative to the working
// directory) at HEAD and now, with the python at py. Nil, and no error,
// without a base (goBaseOf's rules).
func (x *execution) pyBaseOf(ctx context.Context, py, target string) (*pyBase, error) {
	git, commit, err := x.headCommit(ctx)
	if commit == "" || err != nil {
		return nil, err
	}
	base := &pyBase{commit: commit, touched: map[string]bool{}}
	target = filepath.ToSlash(filepath.Clean(target))
	spec := target
	file := strings.HasSuffix(target, ".py")
	if !file {
		spec += "/"
	}
	specs := append([]string{spec}, pyStartupSpecs(target)...)
	listed, err := x.lsTreeHEAD(git, true, specs...)
	if err != nil {
		return nil, err
	}
	var atHead, startupAtHead []*headBlob
	for _, b := range listed {
		switch {
		case isPyStartup(b.dir, b.name):
			startupAtHead = append(startupAtHead, b)
		case file && pathJoin(b.dir, b.name) == target, !file && isPyTestFile(b.dir, b.name):
			atHead = append(atHead, b)
		}
	}
	if err := x.readBlobs(git, append(atHead, startupAtHead...)); err != nil {
		return nil, err
	}
	// the files now: tracked, and new ones git does not ignore
	var now bytes.Buffer
	p, err := git("base-now", &now, append([]string{"ls-files", "-z", "--cached", "--others", "--exclude-standard", "--"}, specs...)...)
	if err != nil {
		return nil, err
	}
	x.dropArtifact("base-now.stdout")
	if p.exitCode != 0 {
		return nil, fmt.Errorf("%s: git ls-files failed (%s): %s", x.def.Name, p.describe(gitTimeout), x.firstLine("base-now.stderr"))
	}
	in := struct {
		Head        [][2]string `json:"head"`
		Now         [][2]string `json:"now"`
		StartupHead [][2]string `json:"startup_head"`
		StartupNow  [][2]string `json:"startup_now"`
	}{Head: [][2]string{}, Now: [][2]string{}, StartupHead: [][2]string{}, StartupNow: [][2]string{}}
	dir := filepath.Join(x.tmp, "pybase")
	if err := os.MkdirAll(dir, 0o755); err != nil { // the caller's python reads it
		return nil, err
	}
	for i, b := range append(atHead, startupAtHead...) {
		p := filepath.Join(dir, strconv.Itoa(i)+".py")
		if err := os.WriteFile(p, b.data, 0o644); err != nil {
			return nil, err
		}
		if i < len(atHead) {
			in.Head = append(in.Head, [2]string{pathJoin(b.dir, b.name), p})
		} else {
			in.StartupHead = append(in.StartupHead, [2]string{pathJoin(b.dir, b.name), p})
		}
	}
	for _, rel := range strings.Split(now.String(), "\x00") {
		d, name := filepath.ToSlash(filepath.Dir(rel)), filepath.Base(rel)
		switch {
		case rel == "":
		case isPyStartup(d, name):
			in.StartupNow = append(in.StartupNow, [2]string{filepath.ToSlash(rel), filepath.Join(x.cwd, rel)})
		case file && filepath.ToSlash(rel) == target, !file && isPyTestFile(d, name):
			in.Now = append(in.Now, [2]string{filepath.ToSlash(rel), filepath.Join(x.cwd, rel)})
		}
	}
	specFile := filepath.Join(dir, "spec.json")
	b, _ := json.Marshal(in)
	if err := os.WriteFile(specFile, b, 0o644); err != nil {
		return nil, err
	}
	var outb bytes.Buffer
	p, err = x.runProc(ctx, []string{py, "-I", "-B", "-c", pyTestsScript, specFile}, x.tc.baseEnv(x.tmp), gitTimeout, "base-tests", &outb)
	if err != nil {
		return nil, err
	}
	var res struct {
		Head, Now   map[string]string
		StartupHead map[string]string `json:"startup_head"`
		StartupNow  map[string]struct {
			Digest string
			Loads  bool
		} `json:"startup_now"`
		Errors []string
	}
	if p.exitCode != 0 || json.Unmarshal(outb.Bytes(), &res) != nil {
		return nil, fmt.Errorf("%s: reading the tests at HEAD failed (%s): %s", x.def.Name, p.describe(gitTimeout), x.firstLine("base-tests.stderr"))
	}
	for id := range res.Head {
		if _, ok := res.Now[id]; !ok {
			base.removed = append(base.removed, id)
		}
	}
	for id, d := range res.Now {
		if was, ok := res.Head[id]; !ok || was != d {
			base.touched[id] = true
		}
	}
	for rel, f := range res.StartupNow {
		if f.Loads && f.Digest != res.StartupHead[rel] {
			base.startup = append(base.startup, rel)
		}
	}
	sort.Strings(base.startup)
	sort.Strings(base.removed)
	return base, nil
}

// pathJoin joins a directory ls-tree gave and a name, as pytest names
// the file (no "./").
func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// isPyTestFile is pytest's default collection: test_*.py or *_test.py,
// in a directory it collects.
func isPyTestFile(dir, name string) bool {
	return strings.HasSuffix(name, ".py") && (strings.HasPrefix(name, "test_") || strings.HasSuffix(name, "_test.py")) && collectedDir(dir)
}

// collectedDir reports whether pytest's norecursedirs default leaves
// every part of dir (as git lists it) to collect.
func collectedDir(dir string) bool {
	if dir == "." {
		return true
	}
	for _, part := range strings.Split(dir, "/") {
		switch {
		case strings.HasPrefix(part, "."), strings.HasSuffix(part, ".egg"),
			part == "build", part == "dist", part == "venv", part == "node_modules", part == "CVS", part == "_darcs", part == "{arch}":
			return false
		}
	}
	return true
}

// pytestResultRE is one result line of `pytest -v`: the node id (its
// parameters apart) and the outcome.
var pytestResultRE = regexp.MustCompile(`^(\S+?::[^\s\[]+)(?:\[\S*\])?\s+(PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b`)

// pytestSkipRE is a skip of the short summary (-rs): where the skip was
// called. A module skipped at import is reported there alone.
var pytestSkipRE = regexp.MustCompile(`^SKIPPED \[\d+\] (\S+?\.py):\d+`)

// pytestSkipsTouched collects, from `pytest -v -rs` lines, the tests new
// or changed since the base that were skipped or xfailed, alone or with
// their module.
type pytestSkipsTouched struct {
	base    *pyBase
	found   []string
	ran     map[string]bool // files with a result line of their own
	skipped []string        // files the short summary has a skip in
}

func (s *pytestSkipsTouched) line(b []byte) {
	if s.base == nil {
		return
	}
	b = bytes.TrimSpace(ansiRE.ReplaceAll(b, nil))
	if m := pytestSkipRE.FindSubmatch(b); m != nil {
		s.skipped = append(s.skipped, string(m[1]))
		return
	}
	m := pytestResultRE.FindSubmatch(b)
	if m == nil {
		return
	}
	st, id := string(m[2]), string(m[1])
	if s.ran == nil {
		s.ran = map[string]bool{}
	}
	file, _, _ := strings.Cut(id, "::")
	s.ran[file] = true
	if (st == "SKIPPED" || st == "XFAIL") && s.base.touched[id] {
		s.found = append(s.found, id+" ("+strings.ToLower(st)+")")
	}
}

// verdict is "" unless such a test was found.
func (s *pytestSkipsTouched) verdict() string {
	if s.ran == nil {
		s.ran = map[string]bool{}
	}
	for _, file := range s.skipped {
		if s.ran[file] {
			continue // a test's own skip, read from its result line
		}
		for t := range s.base.touched {
			if strings.HasPrefix(t, file+"::") {
				s.found = append(s.found, t+" (skipped with its module)")
			}
		}
		s.ran[file] = true // once
	}
	if len(s.found) == 0 {
		return ""
	}
	sort.Strings(s.found)
	return fmt.Sprintf("%d test(s) written or changed since HEAD were skipped or marked xfail: %s. A test that does not run proves nothing: make it run", len(s.found), clipNames(s.found))
}
