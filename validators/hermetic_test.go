package validators

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
)

// brokenModule is a Go module whose TestBroken really fails; TestOK
// passes. Every attack below tries to get a pass out of it.
var brokenModule = map[string]string{
	"go.mod":            "module example.com/broken\n\ngo 1.21\n",
	"calc/calc.go":      "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
	"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n\nfunc TestBroken(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"Add(2, 2) != 4\")\n\t}\n}\n",
}

// fakePass is a script that prints test2json-readable output claiming
// TestBroken and TestOK passed, and exits 0.
const fakePass = "#!/bin/sh\nprintf '=== RUN   TestOK\\n--- PASS: TestOK (0.00s)\\n=== RUN   TestBroken\\n--- PASS: TestBroken (0.00s)\\nPASS\\n'\nexit 0\n"

func needGo(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
}

// agentGoTest runs `go test` the way the agent's own shell would, with
// the (poisoned) process environment, to show the attack is real.
func agentGoTest(t *testing.T, dir string) error {
	t.Helper()
	cmd := exec.Command("go", "test", "-count=1", "./...")
	cmd.Dir = dir
	return cmd.Run()
}

func mustFailBroken(t *testing.T, r *Runner, dir string) *Result {
	t.Helper()
	res := runReq(t, r, "s1", "done", "go_test_pass", `{"package":"./..."}`, dir)
	if res.Outcome != Fail || !strings.Contains(res.Reason, "TestBroken") {
		t.Fatalf("got %s %q, want FAIL naming TestBroken", res.Outcome, res.Reason)
	}
	return res
}

// go env -w GOFLAGS=-exec=./fake writes the go env file, which survives
// removing GOFLAGS from the environment; GOENV=off ignores it.
func TestHermeticGoEnvFile(t *testing.T) {
	needGo(t)
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, brokenModule)
	fake := filepath.Join(dir, "fake")
	if err := os.WriteFile(fake, []byte(fakePass), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := t.TempDir()
	t.Setenv("GOCACHE", r.Toolchain.GoCache)
	t.Setenv("XDG_CONFIG_HOME", cfg)
	t.Setenv("HOME", cfg)
	t.Setenv("GOENV", filepath.Join(cfg, "go", "env"))
	if out, err := exec.Command("go", "env", "-w", "GOFLAGS=-exec="+fake).CombinedOutput(); err != nil {
		t.Fatalf("go env -w: %v\n%s", err, out)
	}
	if err := agentGoTest(t, dir); err != nil {
		t.Fatalf("the attack does not work here (go test failed: %v), so this test proves nothing", err)
	}
	mustFailBroken(t, r, dir)
}

// A go shim earlier on PATH answers for the agent's `go`, never for the
// runner's.
func TestHermeticGoShimOnPath(t *testing.T) {
	needGo(t)
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, brokenModule)
	shims := t.TempDir()
	shim := "#!/bin/sh\nprintf '{\"Action\":\"run\",\"Package\":\"example.com/broken/calc\",\"Test\":\"TestBroken\"}\\n{\"Action\":\"pass\",\"Package\":\"example.com/broken/calc\",\"Test\":\"TestBroken\"}\\n{\"Action\":\"pass\",\"Package\":\"example.com/broken/calc\",\"Test\":\"TestOK\"}\\n{\"Action\":\"pass\",\"Package\":\"example.com/broken/calc\"}\\n'\nexit 0\n"
	if err := os.WriteFile(filepath.Join(shims, "go"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := agentGoTest(t, dir); err != nil {
		t.Fatalf("the shim is not first on PATH (%v), so this test proves nothing", err)
	}
	res := mustFailBroken(t, r, dir)
	tools, _ := bodyOf(res.Entry)["toolchain"].(map[string]any)
	goTool, _ := tools["go"].(map[string]any)
	if p, _ := goTool["path"].(string); p == "" || strings.HasPrefix(p, shims) {
		t.Errorf("recorded toolchain %v, want the real go", tools)
	}
	if v, _ := goTool["version"].(string); !strings.HasPrefix(v, "go1.") {
		t.Errorf("recorded go version %q", v)
	}
}

// GOFLAGS in the environment (-run narrowing to the passing test, or
// -exec with a fake) never reaches the runner's go.
func TestHermeticGOFLAGS(t *testing.T) {
	needGo(t)
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, brokenModule)
	fake := filepath.Join(dir, "fake")
	if err := os.WriteFile(fake, []byte(fakePass), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, flags := range []string{"-run=TestOK", "-exec=" + fake, "-toolexec=" + fake} {
		t.Run(flags, func(t *testing.T) {
			t.Setenv("GOFLAGS", flags)
			if !strings.HasPrefix(flags, "-toolexec") {
				if err := agentGoTest(t, dir); err != nil {
					t.Fatalf("GOFLAGS=%s does not fake a pass here (%v), so this test proves nothing", flags, err)
				}
			}
			mustFailBroken(t, r, dir)
		})
	}
}

// A TestMain that narrows -test.run passes every test it lets run; the
// runner compares what ran with what the package defines.
func TestTestMainNarrowing(t *testing.T) {
	needGo(t)
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, brokenModule)
	writeFiles(t, dir, map[string]string{
		"calc/main_test.go": "package calc\n\nimport (\n\t\"flag\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\tflag.Parse()\n\tflag.Set(\"test.run\", \"^TestOK$\")\n\tos.Exit(m.Run())\n}\n",
	})
	if err := agentGoTest(t, dir); err != nil {
		t.Fatalf("the TestMain does not hide TestBroken (%v), so this test proves nothing", err)
	}
	res := runReq(t, r, "s1", "done", "go_test_pass", `{"package":"./..."}`, dir)
	if res.Outcome != Fail || !strings.Contains(res.Reason, "did not run: example.com/broken/calc.TestBroken") {
		t.Fatalf("got %s %q, want FAIL naming the test that did not run", res.Outcome, res.Reason)
	}
	if tm, _ := bodyOf(res.Entry)["detail"].(map[string]any)["test_main"].([]any); len(tm) != 1 {
		t.Errorf("detail.test_main = %v", bodyOf(res.Entry)["detail"])
	}

	// The same TestMain over a module whose tests all pass, without
	// narrowing, passes: a TestMain alone is not suspicious.
	ok := t.TempDir()
	writeFiles(t, ok, map[string]string{
		"go.mod":            "module example.com/ok\n\ngo 1.21\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestA(t *testing.T) {}\n\nfunc TestB(t *testing.T) { t.Run(\"sub\", func(t *testing.T) {}) }\n\nfunc FuzzC(f *testing.F) { f.Add(1); f.Fuzz(func(t *testing.T, n int) {}) }\n",
		"calc/x_test.go":    "package calc_test\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) { os.Exit(m.Run()) }\n\nfunc Example() {\n\tfmt.Println(1)\n\t// Output: 1\n}\n\nfunc Example_notRun() {}\n",
	})
	res = runReq(t, r, "s1", "done", "go_test_pass", `{"package":"./..."}`, ok)
	if res.Outcome != Pass || res.TestsRun != 4 {
		t.Fatalf("honest module: %s %q, tests_run %d, want PASS with 4 (TestA, TestB, FuzzC, Example)", res.Outcome, res.Reason, res.TestsRun)
	}
}

// The test process sees the harness's environment, not the caller's.
func TestHermeticEnvironment(t *testing.T) {
	needGo(t)
	r, _, dir := newTestRunner(t)
	out := filepath.Join(t.TempDir(), "env.json")
	writeFiles(t, dir, map[string]string{
		"go.mod": "module example.com/env\n\ngo 1.21\n",
		"e/e_test.go": `package e

import (
	"encoding/json"
	"os"
	"testing"
)

func TestEnv(t *testing.T) {
	m := map[string]string{}
	for _, k := range []string{"PATH", "GOFLAGS", "GOENV", "GOTOOLCHAIN", "GOCACHE", "TMPDIR", "HOME", "SECRET_FROM_CALLER"} {
		m[k] = os.Getenv(k)
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(` + "`" + out + "`" + `, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
`,
	})
	t.Setenv("SECRET_FROM_CALLER", "x")
	t.Setenv("GOCACHE", t.TempDir())
	if res := runReq(t, r, "s1", "done", "go_test_pass", `{"package":"./..."}`, dir); res.Outcome != Pass {
		t.Fatalf("%s %q", res.Outcome, res.Reason)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"GOFLAGS": "-modcacherw", "GOENV": "off", "GOTOOLCHAIN": "local", "GOCACHE": r.Toolchain.GoCache, "SECRET_FROM_CALLER": ""}
	// go test puts its own GOROOT/bin first; the rest is the fixed PATH.
	if p := env["PATH"]; !strings.HasSuffix(p, strings.Join(r.Toolchain.Path, ":")) || strings.Count(p, ":") > len(r.Toolchain.Path) {
		t.Errorf("PATH = %q, want the fixed %q", p, strings.Join(r.Toolchain.Path, ":"))
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if !strings.HasPrefix(env["TMPDIR"], os.TempDir()) || !strings.Contains(env["TMPDIR"], "docket-validate-") {
		t.Errorf("TMPDIR = %q, want the run's private directory", env["TMPDIR"])
	}
	if env["HOME"] == os.Getenv("HOME") {
		t.Errorf("HOME is the caller's")
	}
}

// Evidence must come from the session's project: its working directory,
// its main module, its whole module when the policy says so.
func TestRelevantEvidence(t *testing.T) {
	needGo(t)
	r, _, _ := newTestRunner(t)
	base := t.TempDir()
	proj := filepath.Join(base, "proj")
	other := filepath.Join(base, "other")
	writeFiles(t, proj, brokenModule)
	writeFiles(t, proj, map[string]string{
		".git/HEAD":           "ref: refs/heads/main\n",
		"good/good.go":        "package good\n",
		"good/good_test.go":   "package good\n\nimport \"testing\"\n\nfunc TestGood(t *testing.T) {}\n",
		"nested/go.mod":       "module example.com/nested\n\ngo 1.21\n",
		"nested/n/n_test.go":  "package n\n\nimport \"testing\"\n\nfunc TestN(t *testing.T) {}\n",
		"usesother/u.go":      "package usesother\n\nimport _ \"example.com/other/o\"\n",
		"usesother/u_test.go": "package usesother\n\nimport \"testing\"\n\nfunc TestU(t *testing.T) {}\n",
	})
	writeFiles(t, proj, map[string]string{"go.mod": "module example.com/broken\n\ngo 1.21\n\nrequire example.com/other v0.0.0\n\nreplace example.com/other => ../other\n"})
	writeFiles(t, other, map[string]string{
		"go.mod":        "module example.com/other\n\ngo 1.21\n",
		"o/o.go":        "package o\n",
		"o/o_test.go":   "package o\n\nimport \"testing\"\n\nfunc TestO(t *testing.T) {}\n",
		"sub/x_test.go": "package sub\n\nimport \"testing\"\n\nfunc TestX(t *testing.T) {}\n",
	})
	loose, _, _ := newLooseRunner(t)
	tests := []struct {
		name   string
		r      *Runner
		claim  string
		args   string
		cwd    string
		want   Outcome
		reason string
	}{
		{"cwd elsewhere", r, "done", `{"package":"./..."}`, other, Refused, "outside the session's project"},
		{"cwd elsewhere, loose policy", loose, "done", `{"package":"./..."}`, other, Refused, "outside the session's project"},
		{"stdlib", loose, "done", `{"package":"strings"}`, proj, Refused, "standard library"},
		{"other module by path", loose, "done", `{"package":"example.com/other/o"}`, proj, Refused, "not to the project's main module"},
		{"nested module", loose, "done", `{"package":"./nested/..."}`, proj, Refused, ""},
		{"passing package only", r, "done", `{"package":"./good"}`, proj, Refused, "package must be ./..."},
		{"passing package only, tests_pass", r, "tests_pass", `{"package":"./good","required_runs":2}`, proj, Refused, "package must be ./..."},
		{"run filter dodging the failure", r, "tests_pass", `{"package":"./...","run":"TestOK","required_runs":2}`, proj, Refused, "allows no run filter"},
		{"whole module from a subdirectory", r, "done", `{"package":"./..."}`, filepath.Join(proj, "good"), Fail, "TestBroken"},
		{"whole module", r, "done", `{}`, proj, Fail, "TestBroken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := tt.r.Run(context.Background(), Request{Session: "s1", Claim: tt.claim, Validator: "go_test_pass", Args: json.RawMessage(tt.args), Cwd: tt.cwd, ProjectRoot: proj})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.want || !strings.Contains(res.Reason, tt.reason) {
				t.Fatalf("got %s %q, want %s mentioning %q", res.Outcome, res.Reason, tt.want, tt.reason)
			}
		})
	}
	// A symlink into another tree does not make it part of the project.
	link := filepath.Join(proj, "link")
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	res, err := loose.Run(context.Background(), Request{Session: "s1", Claim: "done", Validator: "go_test_pass", Args: json.RawMessage(`{"package":"./..."}`), Cwd: link, ProjectRoot: proj})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Refused || !strings.Contains(res.Reason, "outside the session's project") {
		t.Fatalf("through a symlink: %s %q", res.Outcome, res.Reason)
	}
}

// file_diff_present cannot back fixed alone: a comment edit is a diff,
// and the companion test validator must pass in the same validation.
func TestFileDiffNeedsCompanion(t *testing.T) {
	needGo(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, brokenModule)
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "base")
	writeFiles(t, dir, map[string]string{"calc/calc.go": "package calc\n\n// Add adds. (fixed, honest)\nfunc Add(a, b int) int { return a - b }\n"})
	res := runReq(t, r, "s1", "fixed", "file_diff_present", `{"path":"calc/calc.go"}`, dir)
	if res.Outcome != Fail || !strings.Contains(res.Reason, "companion go_test_pass failed") || !strings.Contains(res.Reason, "TestBroken") {
		t.Fatalf("comment edit as fixed: %s %q", res.Outcome, res.Reason)
	}
	if w, _ := bodyOf(res.Entry)["with"].(map[string]any); w["validator"] != "go_test_pass" || w["result"] != "fail" {
		t.Errorf("body.with = %v", w)
	}

	// The real fix: both pass, one validator_pass recording both.
	writeFiles(t, dir, map[string]string{"calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n"})
	res = runReq(t, r, "s1", "fixed", "file_diff_present", `{"path":"calc/calc.go"}`, dir)
	if res.Outcome != Pass {
		t.Fatalf("real fix: %s %q", res.Outcome, res.Reason)
	}
	if w, _ := bodyOf(res.Entry)["with"].(map[string]any); w["validator"] != "go_test_pass" || w["result"] != "pass" {
		t.Errorf("body.with = %v", w)
	}

	// A project no companion fits: refused, nothing appended.
	plain := t.TempDir()
	writeFiles(t, plain, map[string]string{"notes.txt": "a\n"})
	git(t, plain, "init", "-q")
	git(t, plain, "add", ".")
	git(t, plain, "commit", "-q", "-m", "base")
	writeFiles(t, plain, map[string]string{"notes.txt": "b\n"})
	res = runReq(t, r, "s1", "fixed", "file_diff_present", `{"path":"notes.txt"}`, plain)
	if res.Outcome != Refused || !strings.Contains(res.Reason, "cannot back fixed alone") {
		t.Fatalf("no companion: %s %q", res.Outcome, res.Reason)
	}
}

// A project's own commands come from the policy's projects list, and
// only for that project.
func TestCommandAllowListPerProject(t *testing.T) {
	r, _, _ := newTestRunner(t)
	a, b := t.TempDir(), t.TempDir()
	writeFiles(t, a, map[string]string{"ok.sh": "#!/bin/sh\nexit 0\n", ".git/HEAD": "ref: refs/heads/main\n"})
	writeFiles(t, b, map[string]string{"ok.sh": "#!/bin/sh\nexit 0\n", ".git/HEAD": "ref: refs/heads/main\n"})
	for _, d := range []string{a, b} {
		if err := os.Chmod(filepath.Join(d, "ok.sh"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pol := strings.Replace(string(mustDefault(t)), "projects: []", "projects:\n  - root: "+a+"\n    commands: {done: [\"./ok.sh\"]}", 1)
	bind, err := parseBindingString(pol)
	if err != nil {
		t.Fatal(err)
	}
	r.Binding = bind
	res := runReq(t, r, "s1", "done", "command_zero_exit", `{"command":"./ok.sh"}`, a)
	if res.Outcome != Pass {
		t.Fatalf("project a: %s %q", res.Outcome, res.Reason)
	}
	res = runReq(t, r, "s1", "done", "command_zero_exit", `{"command":"./ok.sh"}`, b)
	if res.Outcome != Refused || !strings.Contains(res.Reason, "allow list") {
		t.Fatalf("project b: %s %q", res.Outcome, res.Reason)
	}
}

// Commands run from the fixed PATH: a `make` shim on the caller's PATH
// is not the make that runs.
func TestCommandIgnoresCallerPath(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, map[string]string{"Makefile": "test:\n\texit 3\n"})
	shims := t.TempDir()
	if err := os.WriteFile(filepath.Join(shims, "make"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	res := runReq(t, r, "s1", "done", "command_zero_exit", `{"command":"make test"}`, dir)
	if res.Outcome != Fail {
		t.Fatalf("make shim: %s %q", res.Outcome, res.Reason)
	}
}

// A recorded toolchain that no longer runs is an error naming the fix,
// never a fallback to whatever go is on PATH.
func TestBrokenRecordedToolchain(t *testing.T) {
	needGo(t)
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rec := &ToolchainRecord{Version: 1, Tools: map[string]Tool{"go": {Path: "/nonexistent/go/bin/go", Version: "go1.0"}}}
	if _, err := WriteToolchainRecord(h, rec, false); err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(h, &MemLedger{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, brokenModule)
	_, err = r.Run(context.Background(), Request{Session: "s1", Claim: "done", Validator: "go_test_pass", Args: json.RawMessage(`{}`), Cwd: dir})
	if err == nil || !strings.Contains(err.Error(), "docket init --toolchains") {
		t.Fatalf("err = %v", err)
	}
	// A record is never overwritten unless asked.
	if wrote, _ := WriteToolchainRecord(h, &ToolchainRecord{Version: 1}, false); wrote {
		t.Error("record overwritten")
	}
	got, err := ReadToolchainRecord(h)
	if err != nil || got.Tools["go"].Path != "/nonexistent/go/bin/go" {
		t.Errorf("record = %+v, %v", got, err)
	}
}

// RecordToolchains resolves what the human's PATH names to its real
// path and version.
func TestRecordToolchains(t *testing.T) {
	needGo(t)
	rec, _ := RecordToolchains(context.Background(), nil)
	g, ok := rec.Tools["go"]
	if !ok || !filepath.IsAbs(g.Path) || !strings.HasPrefix(g.Version, "go1.") {
		t.Fatalf("go = %+v", g)
	}
	// A shim that is not a go toolchain is not recorded.
	shims := t.TempDir()
	if err := os.WriteFile(filepath.Join(shims, "go"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rec, notes := RecordToolchains(context.Background(), func(name string) (string, error) { return filepath.Join(shims, name), nil })
	if _, ok := rec.Tools["go"]; ok || len(notes) == 0 {
		t.Errorf("shim recorded: %+v %q", rec.Tools, notes)
	}
}

// GOTOOLCHAIN=path and a go.mod toolchain line would make the real go
// hand the run to a "go1.99.0" found on PATH; the runner's go stays local.
func TestHermeticToolchainSwitch(t *testing.T) {
	needGo(t)
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, brokenModule)
	writeFiles(t, dir, map[string]string{"go.mod": "module example.com/broken\n\ngo 1.21\n\ntoolchain go1.99.0\n"})
	shims := t.TempDir()
	if err := os.WriteFile(filepath.Join(shims, "go1.99.0"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOTOOLCHAIN", "path")
	if err := agentGoTest(t, dir); err != nil {
		t.Fatalf("the toolchain switch does not happen here (%v), so this test proves nothing", err)
	}
	mustFailBroken(t, r, dir)
}

// The allow list compares word by word: a list argv whose words hold
// spaces joins to the listed text but runs something else (here make
// -C " sub", a directory the agent made).
func TestCommandAllowListWordSplit(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, map[string]string{
		"sub/Makefile":  "test:\n\texit 3\n",
		" sub/Makefile": "test:\n\ttrue\n",
		".git/HEAD":     "ref: refs/heads/main\n",
	})
	pol := strings.Replace(string(mustDefault(t)), "projects: []", "projects:\n  - root: "+dir+"\n    commands: {done: [\"make -C sub test\"]}", 1)
	bind, err := parseBindingString(pol)
	if err != nil {
		t.Fatal(err)
	}
	r.Binding = bind
	res := runReq(t, r, "s1", "done", "command_zero_exit", `{"command":"make -C sub test"}`, dir)
	if res.Outcome != Fail {
		t.Fatalf("listed command: %s %q", res.Outcome, res.Reason)
	}
	res = runReq(t, r, "s1", "done", "command_zero_exit", `{"command":["make","-C sub","test"]}`, dir)
	if res.Outcome != Refused || !strings.Contains(res.Reason, "allow list") {
		t.Fatalf("merged words: %s %q", res.Outcome, res.Reason)
	}
}

// A go.mod ignore directive (go 1.25) drops directories from ./..., so
// the whole-module run would skip the failing package.
func TestGoModIgnoreHidesPackage(t *testing.T) {
	needGo(t)
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, brokenModule)
	writeFiles(t, dir, map[string]string{
		"go.mod":        "module example.com/broken\n\ngo 1.25\n\nignore (\n\t./calc\n)\n",
		"ok/ok.go":      "package ok\n",
		"ok/ok_test.go": "package ok\n\nimport \"testing\"\n\nfunc TestGood(t *testing.T) {}\n",
	})
	if err := agentGoTest(t, dir); err != nil {
		t.Skipf("this go does not honour ignore (%v), so this test proves nothing", err)
	}
	res := runReq(t, r, "s1", "done", "go_test_pass", `{"package":"./..."}`, dir)
	if res.Outcome != Refused || !strings.Contains(res.Reason, "ignore directives (./calc)") {
		t.Fatalf("got %s %q, want REFUSED naming the ignore directive", res.Outcome, res.Reason)
	}
}
