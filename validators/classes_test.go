package validators

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func runReq(t *testing.T, r *Runner, session, claim, validator, args, cwd string) *Result {
	t.Helper()
	res, err := r.Run(context.Background(), Request{Session: session, Claim: claim, Validator: validator, Args: json.RawMessage(args), Cwd: cwd})
	if err != nil {
		t.Fatalf("%s %s: %v", validator, args, err)
	}
	return res
}

func TestGoTestPass(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	r, l, dir := newLooseRunner(t)
	writeFiles(t, dir, map[string]string{
		"go.mod":             "module example.com/tiny\n\ngo 1.21\n",
		"add/add.go":         "package add\n\nfunc Add(a, b int) int { return a + b }\n",
		"add/add_test.go":    "package add\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 2) != 4 {\n\t\tt.Fatal(\"bad\")\n\t}\n}\n\nfunc TestSkipped(t *testing.T) { t.Skip(\"later\") }\n",
		"bad/bad.go":         "package bad\n",
		"bad/bad_test.go":    "package bad\n\nimport \"testing\"\n\nfunc TestBroken(t *testing.T) { t.Error(\"broken\") }\n",
		"empty/empty.go":     "package empty\n",
		"skip/skip_test.go":  "package skip\n\nimport \"testing\"\n\nfunc TestLater(t *testing.T) { t.Skip(\"later\") }\n",
		"nobuild/nobuild.go": "package nobuild\n\nfunc F() int { return \"x\" }\n",
		"nobuild/nb_test.go": "package nobuild\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n",
	})
	// GOFLAGS must not reach the test run: -run=NONE would make it vacuous.
	t.Setenv("GOFLAGS", "-run=NONE")
	tests := []struct {
		args   string
		want   Outcome
		runs   int
		tests  int
		reason string
	}{
		{`{"package":"./add","required_runs":2}`, Pass, 2, 1, ""},
		{`{"package":"./add","run":"TestAdd"}`, Pass, 1, 1, ""},
		{`{"package":"./add","run":"TestNothingMatches"}`, Fail, 1, 0, "matched nothing"},
		{`{"package":"./add","run":"TestSkipped"}`, Fail, 1, 0, "matched nothing"},
		{`{"package":"./bad","required_runs":3}`, Fail, 1, 1, "TestBroken"},
		{`{"package":"./empty"}`, Fail, 1, 0, "no test ran"},
		{`{"package":"./skip"}`, Fail, 1, 0, "no test ran"},
		{`{"package":"./nobuild"}`, Fail, 1, 0, "fail"},
		{`{"package":"./missing"}`, Refused, 0, 0, "./missing"},
		{`{"package":"./...","run":"TestAdd"}`, Fail, 1, 1, "nobuild"},
	}
	for _, tt := range tests {
		res := runReq(t, r, "s1", "done", "go_test_pass", tt.args, dir)
		if res.Outcome != tt.want || res.Runs != tt.runs || res.TestsRun != tt.tests || !strings.Contains(res.Reason, tt.reason) {
			t.Errorf("%s: got %s runs=%d tests=%d %q; want %s runs=%d tests=%d %q",
				tt.args, res.Outcome, res.Runs, res.TestsRun, res.Reason, tt.want, tt.runs, tt.tests, tt.reason)
		}
	}
	// The pass stores each run's go test -json output.
	es, _ := l.ReadVerified("s1")
	f, err := l.OpenArtifact(es[0], "run2.stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ev goTestEvent
	if err := json.NewDecoder(f).Decode(&ev); err != nil || ev.Package != "example.com/tiny/add" {
		t.Errorf("run2.stdout does not hold go test -json output: %v %+v", err, ev)
	}
}

func TestGoTestSummary(t *testing.T) {
	// Lines as `go test -json` (go1.26) prints them.
	out := `{"Time":"2026-11-23T10:00:00Z","Action":"start","Package":"example.com/tiny/add"}
{"Time":"2026-11-23T10:00:00Z","Action":"run","Package":"example.com/tiny/add","Test":"TestAdd"}
{"Time":"2026-11-23T10:00:00Z","Action":"output","Package":"example.com/tiny/add","Test":"TestAdd","Output":"=== RUN   TestAdd\n"}
{"Time":"2026-11-23T10:00:00Z","Action":"run","Package":"example.com/tiny/add","Test":"TestAdd/sub"}
{"Time":"2026-11-23T10:00:00Z","Action":"fail","Package":"example.com/tiny/add","Test":"TestAdd/sub","Elapsed":0}
{"Time":"2026-11-23T10:00:00Z","Action":"fail","Package":"example.com/tiny/add","Test":"TestAdd","Elapsed":0}
{"Time":"2026-11-23T10:00:00Z","Action":"pass","Package":"example.com/tiny/add","Test":"TestOther","Elapsed":0}
{"Time":"2026-11-23T10:00:00Z","Action":"skip","Package":"example.com/tiny/add","Test":"TestSkip","Elapsed":0}
{"Time":"2026-11-23T10:00:00Z","Action":"output","Package":"example.com/tiny/add","Output":"FAIL\n"}
{"Time":"2026-11-23T10:00:00Z","Action":"fail","Package":"example.com/tiny/add","Elapsed":0.01}
not json at all
`
	var s goTestSummary
	lw := &lineWriter{fn: s.line}
	// Feed it in awkward pieces: lines split across writes.
	for i := 0; i < len(out); i += 7 {
		end := min(i+7, len(out))
		lw.Write([]byte(out[i:end]))
	}
	lw.Flush()
	if s.passed != 1 || s.failed != 1 || s.skipped != 1 || s.ran() != 2 || len(s.failedTests) != 2 || len(s.failedPkgs) != 1 {
		t.Errorf("summary = %+v", s)
	}
	if v := s.verdict(&proc{exitCode: 1}, time.Minute, ""); !strings.Contains(v, "2 test(s) failed: TestAdd, TestAdd/sub") {
		t.Errorf("verdict = %q", v)
	}
	if v := (&goTestSummary{passed: 3}).verdict(&proc{timedOut: true}, time.Minute, ""); !strings.Contains(v, "timed out after 1m0s") {
		t.Errorf("timeout verdict = %q", v)
	}
	if v := (&goTestSummary{passed: 3}).verdict(&proc{}, time.Minute, ""); v != "" {
		t.Errorf("passing verdict = %q", v)
	}
}

func TestParsePytestSummary(t *testing.T) {
	// Summary lines as pytest prints them (-q, colored, pytest < 5's
	// "seconds"); the first five are copied from real runs published in
	// public repositories (a funparam README, pytest-json-report and
	// sidecar docs, VS Code's python test fixtures).
	tests := []struct {
		line string
		ok   bool
		want pytestSummary
	}{
		{"========================= 1 failed, 2 passed in 0.03s ==========================", true, pytestSummary{Found: true, Passed: 2, Failed: 1}},
		{"============================ no tests ran in 0.02s =============================", true, pytestSummary{Found: true, NoTests: true}},
		{"===== no tests ran in 0.00s =====", true, pytestSummary{Found: true, NoTests: true}},
		{"========================= no tests ran in 0.03 seconds =========================", true, pytestSummary{Found: true, NoTests: true}},
		{"1 failed, 2 passed in 0.42s", true, pytestSummary{Found: true, Passed: 2, Failed: 1}},
		{"========================= 1 failed, 2 passed in 0.05s ==========================", true, pytestSummary{Found: true, Passed: 2, Failed: 1}},
		{"============================== 3 passed in 0.01s ===============================", true, pytestSummary{Found: true, Passed: 3}},
		{"3 passed in 0.01s", true, pytestSummary{Found: true, Passed: 3}},
		{"========== 5 passed, 2 skipped, 1 xfailed, 1 xpassed, 3 warnings in 1.23s ==========", true, pytestSummary{Found: true, Passed: 5, Skipped: 2, XFailed: 1, XPassed: 1}},
		{"============================ no tests ran in 0.01s =============================", true, pytestSummary{Found: true, NoTests: true}},
		{"=============================== 1 error in 0.08s ===============================", true, pytestSummary{Found: true, Errors: 1}},
		{"==================== 1 passed, 2 errors in 0.10s ====================", true, pytestSummary{Found: true, Passed: 1, Errors: 2}},
		{"================= 4 passed, 1 deselected in 0.02s =================", true, pytestSummary{Found: true, Passed: 4, Deselected: 1}},
		{"======================= 12 passed in 61.23s (0:01:01) ========================", true, pytestSummary{Found: true, Passed: 12}},
		{"\x1b[32m============================== \x1b[32m\x1b[1m2 passed\x1b[0m\x1b[32m in 0.01s\x1b[0m\x1b[32m ===============================\x1b[0m", true, pytestSummary{Found: true, Passed: 2}},
		{"============================= test session starts ==============================", false, pytestSummary{}},
		{"collected 3 items", false, pytestSummary{}},
		{"test_a.py ..F                                                            [100%]", false, pytestSummary{}},
		{"!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!", false, pytestSummary{}},
		{"print('2 passed in 0.01s') was here", false, pytestSummary{}},
	}
	for _, tt := range tests {
		got, ok := parsePytestSummary(tt.line)
		if ok != tt.ok || got != tt.want {
			t.Errorf("parsePytestSummary(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
	verdicts := []struct {
		s    pytestSummary
		p    proc
		want string
	}{
		{pytestSummary{Found: true, Passed: 2}, proc{}, ""},
		{pytestSummary{Found: true, Passed: 2, Failed: 1}, proc{exitCode: 1}, "1 failed"},
		{pytestSummary{Found: true, NoTests: true}, proc{exitCode: 5}, "no test ran"},
		{pytestSummary{Found: true, Skipped: 3}, proc{}, "no test ran"},
		{pytestSummary{Found: true, Errors: 1}, proc{exitCode: 2}, "1 errors"},
		{pytestSummary{}, proc{exitCode: 4}, "no pytest summary"},
		{pytestSummary{Found: true, Passed: 1}, proc{exitCode: 3}, "status 3"},
	}
	for _, v := range verdicts {
		if got := v.s.verdict(&v.p, "1m0s"); !strings.Contains(got, v.want) || (v.want == "") != (got == "") {
			t.Errorf("verdict(%+v, exit %d) = %q, want %q", v.s, v.p.exitCode, got, v.want)
		}
	}
}

// needPytest skips unless the runner's python3 has pytest.
func needPytest(t *testing.T, r *Runner) {
	t.Helper()
	if r.Toolchain.Python == nil || exec.Command(r.Toolchain.Python.Path, "-m", "pytest", "--version").Run() != nil {
		t.Skip("pytest is not installed for the toolchain's python3; the summary parser is tested on recorded output in TestParsePytestSummary")
	}
}

func TestPytestPass(t *testing.T) {
	r, _, dir := newLooseRunner(t)
	needPytest(t, r)
	writeFiles(t, dir, map[string]string{
		"tests/test_ok.py":   "def test_one():\n    assert 1 + 1 == 2\n",
		"tests/test_bad.py":  "def test_bad():\n    assert 1 == 2\n",
		"empty/test_none.py": "x = 1\n",
	})
	tests := []struct {
		args string
		want Outcome
	}{
		{`{"target":"tests/test_ok.py","required_runs":2}`, Pass},
		{`{"target":"tests/test_bad.py"}`, Fail},
		{`{"target":"empty"}`, Fail},
		{`{"target":"tests/test_ok.py::test_missing"}`, Fail},
	}
	for _, tt := range tests {
		if res := runReq(t, r, "s1", "done", "pytest_pass", tt.args, dir); res.Outcome != tt.want {
			t.Errorf("%s: %s %q, want %s", tt.args, res.Outcome, res.Reason, tt.want)
		}
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestFileDiffPresent(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	r, _, dir := newLooseRunner(t)
	writeFiles(t, dir, map[string]string{
		"main.go":    "package main\n\nfunc main() {}\n",
		"ws.go":      "package main\n\nvar x = 1\n",
		"same.go":    "package main\n",
		"bin.dat":    "\x00\x01\x02",
		".gitignore": "ignored.txt\n",
	})
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "base")
	writeFiles(t, dir, map[string]string{
		"main.go":     "package main\n\nfunc main() { println(1) }\n",
		"ws.go":       "package main\n\n\nvar x  =  1   \n",
		"bin.dat":     "\x00\x01\x03",
		"new.go":      "package main\n",
		"blank.go":    "  \n\n",
		"ignored.txt": "build output\n",
		"sub/new.go":  "package sub\n",
	})
	git(t, dir, "add", "ws.go") // staged, still white space only
	tests := []struct {
		args   string
		want   Outcome
		reason string
	}{
		{`{"path":"main.go"}`, Pass, ""},
		{`{"path":"bin.dat"}`, Pass, ""},
		{`{"path":"new.go"}`, Pass, ""},
		{`{"path":"sub"}`, Pass, ""},
		{`{"path":"ws.go"}`, Fail, "beyond white space"},
		{`{"path":"same.go"}`, Fail, "beyond white space"},
		{`{"path":"blank.go"}`, Fail, "beyond white space"},
		{`{"path":"ignored.txt"}`, Fail, "beyond white space"},
		{`{"path":"missing.go"}`, Fail, ""},
		{`{"path":"main.go","base":"nosuchref"}`, Fail, "is not a commit"},
		{`{"path":"m*.go"}`, Fail, ""}, // pathspecs are literal, not globs
	}
	for _, tt := range tests {
		res := runReq(t, r, "s1", "done", "file_diff_present", tt.args, dir)
		if res.Outcome != tt.want || !strings.Contains(res.Reason, tt.reason) {
			t.Errorf("%s: %s %q, want %s %q", tt.args, res.Outcome, res.Reason, tt.want, tt.reason)
		}
	}
	// A committed change counts against an older base, not against HEAD.
	git(t, dir, "commit", "-q", "-am", "second")
	if res := runReq(t, r, "s1", "done", "file_diff_present", `{"path":"main.go","base":"HEAD~1"}`, dir); res.Outcome != Pass {
		t.Errorf("vs HEAD~1: %s %q", res.Outcome, res.Reason)
	}
	if res := runReq(t, r, "s1", "done", "file_diff_present", `{"path":"main.go"}`, dir); res.Outcome != Fail {
		t.Errorf("vs HEAD after commit: %s", res.Outcome)
	}
	// Not a repository.
	if res := runReq(t, r, "s1", "done", "file_diff_present", `{"path":"x"}`, t.TempDir()); res.Outcome != Fail {
		t.Errorf("outside a repository: %s", res.Outcome)
	}
}

func TestHTTP2xx(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/ok":
			fmt.Fprintln(w, "healthy")
		case "/redirect":
			http.Redirect(w, req, "/ok", http.StatusFound)
		case "/slow":
			time.Sleep(3 * time.Second)
		default:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	r, l, dir := newTestRunner(t)
	binding, err := policies.ParseBinding(policies.Source{Name: "claim_binding.yaml", Origin: "test", Data: []byte(strings.Replace(looseBinding,
		"  fixed: []", "  fixed:\n    - {validator: http_2xx, example: '{\"url\":\"http://127.0.0.1:8080/healthz\"}'}", 1))})
	if err != nil {
		t.Fatal(err)
	}
	r.Binding = binding
	tests := []struct {
		args string
		want Outcome
	}{
		{`{"url":"` + srv.URL + `/ok"}`, Pass},
		{`{"url":"` + strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + `/ok"}`, Pass},
		{`{"url":"` + srv.URL + `/down"}`, Fail},
		{`{"url":"` + srv.URL + `/redirect"}`, Fail},
		{`{"url":"` + srv.URL + `/slow","timeout":"1s"}`, Fail},
		{`{"url":"http://127.0.0.1:1/"}`, Fail},
	}
	for _, tt := range tests {
		if res := runReq(t, r, "s1", "fixed", "http_2xx", tt.args, dir); res.Outcome != tt.want {
			t.Errorf("%s: %s %q, want %s", tt.args, res.Outcome, res.Reason, tt.want)
		}
	}
	// shipped (the default binding's) is not backed by a server on this
	// machine, which the session could have started itself
	shipping, _, _ := newTestRunner(t)
	if res := runReq(t, shipping, "s2", "shipped", "http_2xx", `{"url":"`+srv.URL+`/ok"}`, dir); res.Outcome != Refused || !strings.Contains(res.Reason, "is this machine") {
		t.Errorf("shipped on loopback: %s %q", res.Outcome, res.Reason)
	}
	es, _ := l.ReadVerified("s1")
	f, err := l.OpenArtifact(es[0], "response.body")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, readAll(t, f))
	if b.String() != "healthy\n" {
		t.Errorf("response.body = %q", b.String())
	}
}

func readAll(t *testing.T, f interface{ Read([]byte) (int, error) }) string {
	t.Helper()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String()
		}
	}
}

func TestHTTPAllowedHosts(t *testing.T) {
	def, err := ParseDefinition("embedded:http_2xx.yaml", []byte(strings.Replace(string(DefaultDefinitions()["http_2xx.yaml"]), "allowed_hosts: []", "allowed_hosts: [status.example.com]", 1)))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://status.example.com/health", true},
		{"https://STATUS.example.com/health", true},
		{"https://evil.example.com/", false},
		{"http://[::1]:8080/", true},
		{"http://127.0.0.2/", true},
		{"http://10.0.0.1/", false},
		{"http://app.localhost/", true},
	}
	for _, tt := range tests {
		args, err := parseArgs(def, json.RawMessage(`{"url":"`+tt.url+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := (httpClass{}).check(args, def); (err == nil) != tt.ok {
			t.Errorf("check(%s) = %v, want ok=%v", tt.url, err, tt.ok)
		}
	}
}

// recordFailure appends a failed tool call as the ledger hook would.
func recordFailure(t *testing.T, l *MemLedger, session, tool, input string, asKind bool) {
	t.Helper()
	rec := ledger.Record{Kind: ledger.KindToolFailure, Runtime: "claude", Event: "PostToolUseFailure", Tool: tool,
		Body:      map[string]any{"error": "request failed"},
		Artifacts: []ledger.Artifact{{Name: "input.json", Data: strings.NewReader(input)}}}
	if !asKind {
		rec.Kind, rec.Event, rec.Body = ledger.KindToolCall, "PostToolUse", map[string]any{"failed": true}
	}
	if _, err := l.Append(session, rec); err != nil {
		t.Fatal(err)
	}
}

func recordSuccess(t *testing.T, l *MemLedger, session, tool, input string) {
	t.Helper()
	if _, err := l.Append(session, ledger.Record{Kind: ledger.KindToolCall, Tool: tool,
		Artifacts: []ledger.Artifact{{Name: "input.json", Data: strings.NewReader(input)}}}); err != nil {
		t.Fatal(err)
	}
}

func TestFetchAttemptProof(t *testing.T) {
	r, l, dir := newTestRunner(t)
	const args = `{"keyword":"linkedin_cookie","min_attempts":3,"min_routes":2}`
	check := func(want Outcome, why string) {
		t.Helper()
		res := runReq(t, r, "s1", "delegation", "fetch_attempt_proof", args, dir)
		if res.Outcome != want {
			t.Fatalf("%s: %s %q, want %s", why, res.Outcome, res.Reason, want)
		}
	}
	check(Fail, "empty ledger")
	recordFailure(t, l, "s1", "WebFetch", `{"url":"https://www.linkedin.com/x?linkedin_cookie=1","prompt":"get it"}`, true)
	recordFailure(t, l, "s1", "WebFetch", `{"url":"https://www.linkedin.com/y","prompt":"the LinkedIn_Cookie value"}`, false)
	// Not counted: a success, an unrelated keyword, a non-fetch tool,
	// another session, a Bash command that fetches nothing.
	recordSuccess(t, l, "s1", "WebFetch", `{"url":"https://m.linkedin.com/","prompt":"linkedin_cookie"}`)
	recordFailure(t, l, "s1", "WebFetch", `{"url":"https://example.com/","prompt":"weather"}`, true)
	recordFailure(t, l, "s1", "Read", `{"file_path":"/tmp/linkedin_cookie.txt"}`, true)
	recordFailure(t, l, "s2", "WebSearch", `{"query":"linkedin_cookie"}`, true)
	recordFailure(t, l, "s1", "Bash", `{"command":"cat linkedin_cookie.txt"}`, true)
	check(Fail, "two attempts over one route")
	recordFailure(t, l, "s1", "WebFetch", `{"url":"https://www.linkedin.com/z","prompt":"linkedin_cookie"}`, true)
	check(Fail, "three attempts over one route")
	recordFailure(t, l, "s1", "Bash", `{"command":"curl -fsS https://api.linkedin.com/v2/me -H 'Cookie: linkedin_cookie'"}`, true)
	check(Pass, "four attempts over two routes")

	r2, l2, _ := newTestRunner(t)
	recordFailure(t, l2, "s1", "mcp__fetch__fetch", `{"url":"https://a.example/linkedin_cookie"}`, true)
	recordFailure(t, l2, "s1", "WebSearch", `{"query":"linkedin_cookie export"}`, true)
	recordFailure(t, l2, "s1", "Bash", `{"command":"wget https://b.example/linkedin_cookie"}`, true)
	if res := runReq(t, r2, "s1", "delegation", "fetch_attempt_proof", args, dir); res.Outcome != Pass {
		t.Errorf("mcp, search and wget: %s %q", res.Outcome, res.Reason)
	}
	l2.Err = &ledger.VerifyError{Session: "s1", Seq: 1, Reason: "hash mismatch"}
	if _, err := r2.Run(context.Background(), Request{Session: "s1", Claim: "delegation", Validator: "fetch_attempt_proof", Args: json.RawMessage(args), Cwd: dir}); err == nil || !strings.Contains(err.Error(), "docket verify") {
		t.Errorf("broken ledger: err = %v", err)
	}
}

func TestLadderExhaustionProof(t *testing.T) {
	r, l, dir := newTestRunner(t)
	const args = `{"keyword":"oauth_token"}`
	run := func() *Result { return runReq(t, r, "s1", "blocked", "ladder_exhaustion_proof", args, dir) }
	steps := []struct {
		tool, input string
		want        Outcome
	}{
		{"Read", `{"file_path":"docs/oauth_token.md"}`, Fail},
		{"Grep", `{"pattern":"oauth_token","path":"."}`, Fail},
		{"Task", `{"prompt":"find the oauth_token for staging"}`, Fail},
		{"Bash", `{"command":"curl https://auth.example/oauth_token"}`, Fail},
		// The same route again is no alternative.
		{"Bash", `{"command":"curl https://auth.example/oauth_token -v"}`, Fail},
		{"mcp__vault__read", `{"path":"secret/oauth_token"}`, Pass},
	}
	for i, s := range steps {
		recordFailure(t, l, "s1", s.tool, s.input, true)
		res := run()
		if res.Outcome != s.want {
			t.Fatalf("after step %d (%s): %s %q, want %s", i, s.tool, res.Outcome, res.Reason, s.want)
		}
		if s.want == Fail && !strings.Contains(res.Reason, "not exhausted") {
			t.Errorf("step %d reason = %q", i, res.Reason)
		}
	}
	// One failed call climbs one rung: two failed WebFetch calls cannot
	// be both the docs read and the two-route retry.
	r4, l4, _ := newTestRunner(t)
	for _, s := range []struct{ tool, input string }{
		{"WebFetch", `{"url":"https://a.example/oauth_token"}`},
		{"WebFetch", `{"url":"https://b.example/oauth_token"}`},
		{"Grep", `{"pattern":"oauth_token"}`},
		{"Agent", `{"prompt":"oauth_token"}`},
	} {
		recordFailure(t, l4, "s1", s.tool, s.input, true)
	}
	if res := runReq(t, r4, "s1", "blocked", "ladder_exhaustion_proof", args, dir); res.Outcome != Fail {
		t.Errorf("shared calls: %s %q, want fail", res.Outcome, res.Reason)
	}
	recordFailure(t, l4, "s1", "WebFetch", `{"url":"https://c.example/oauth_token"}`, true)
	if res := runReq(t, r4, "s1", "blocked", "ladder_exhaustion_proof", args, dir); res.Outcome != Pass {
		t.Errorf("a third WebFetch: %s %q, want pass", res.Outcome, res.Reason)
	}
	// Failures about something else do not climb a rung.
	r3, l3, _ := newTestRunner(t)
	for _, s := range steps {
		recordFailure(t, l3, "s1", s.tool, strings.ReplaceAll(s.input, "oauth_token", "weather"), true)
	}
	if res := runReq(t, r3, "s1", "blocked", "ladder_exhaustion_proof", args, dir); res.Outcome != Fail {
		t.Errorf("other keyword: %s %q", res.Outcome, res.Reason)
	}
	// Successes do not climb a rung.
	r2, l2, _ := newTestRunner(t)
	for _, s := range steps {
		recordSuccess(t, l2, "s1", s.tool, s.input)
	}
	if res := runReq(t, r2, "s1", "blocked", "ladder_exhaustion_proof", args, dir); res.Outcome != Fail || !strings.Contains(res.Reason, "read_docs (0 of 1") {
		t.Errorf("successes only: %s %q", res.Outcome, res.Reason)
	}
}

// TestLadderOtherRuntimes: the binding names Claude Code's tools; Codex's
// and Gemini CLI's calls of the same kinds climb the same rungs, as
// docket-ledger records them (their own tool name, tool_kind in the body,
// failures as tool_call entries marked failed).
func TestLadderOtherRuntimes(t *testing.T) {
	r, l, dir := newTestRunner(t)
	const args = `{"keyword":"oauth_token"}`
	record := func(tool string, kind hooks.ToolKind, input string) {
		t.Helper()
		body := map[string]any{"failed": true, "tool_kind": string(kind)}
		if server, name, ok := strings.Cut(strings.TrimPrefix(tool, "mcp_"), "_"); ok && kind == hooks.KindMCP {
			body["mcp_name"] = "mcp__" + server + "__" + name // as docket-ledger records Gemini CLI's
		}
		rec := ledger.Record{Kind: ledger.KindToolCall, Runtime: "gemini", Event: "AfterTool", Tool: tool,
			Body:      body,
			Artifacts: []ledger.Artifact{{Name: "input.json", Data: strings.NewReader(input)}}}
		if _, err := l.Append("s1", rec); err != nil {
			t.Fatal(err)
		}
	}
	run := func() *Result { return runReq(t, r, "s1", "blocked", "ladder_exhaustion_proof", args, dir) }
	record("read_file", hooks.KindRead, `{"file_path":"docs/oauth_token.md"}`)
	record("grep_search", hooks.KindSearch, `{"pattern":"oauth_token"}`)
	record("run_shell_command", hooks.KindShell, `{"command":"curl https://auth.example/oauth_token"}`)
	if res := run(); res.Outcome != Fail || !strings.Contains(res.Reason, "retry_alternative") {
		t.Fatalf("one route so far: %s %q, want the retry rung short", res.Outcome, res.Reason)
	}
	// Codex's argv form of a command, on another host
	record("exec_command", hooks.KindShell, `{"cmd":["bash","-lc","wget https://vault.example/oauth_token"]}`)
	// neither CLI has a subagent tool the ladder knows: an MCP assistant,
	// by Gemini CLI's name for it (mcp_team_ask: the binding's mcp__*ask*
	// matches its recorded mcp_name)
	record("mcp_team_ask", hooks.KindMCP, `{"question":"where is the oauth_token kept?"}`)
	if res := run(); res.Outcome != Pass {
		t.Fatalf("docs, search and two shell routes: %s %q, want pass", res.Outcome, res.Reason)
	}

	// a shell running man, by Gemini CLI's name, is the docs rung
	r2, l2, _ := newTestRunner(t)
	l = l2
	record("run_shell_command", hooks.KindShell, `{"command":"man oauth_token"}`)
	if res := runReq(t, r2, "s1", "blocked", "ladder_exhaustion_proof", args, dir); strings.Contains(res.Reason, "read_docs (0 of 1") {
		t.Errorf("man by run_shell_command did not count as reading the docs: %q", res.Reason)
	}
}

func TestCommandTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	arts := []string{}
	x := &execution{cwd: dir, tmp: t.TempDir(), arts: &arts}
	start := time.Now()
	p, err := x.runProc(context.Background(), []string{"/bin/sh", "-c", "sleep 30 & echo $! > child.pid; sleep 30"}, nil, 300*time.Millisecond, "run1", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Killing only the shell would leave the background sleep holding the
	// output pipe until waitDelay; killing the group frees it at once.
	if elapsed := time.Since(start); !p.timedOut || elapsed >= waitDelay-500*time.Millisecond {
		t.Fatalf("timedOut=%v after %v, want the group killed well before waitDelay %v", p.timedOut, elapsed, waitDelay)
	}
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	deadline := time.Now().Add(5 * time.Second)
	for {
		// Signal 0 probes; a killed, reaped (or zombie-reparented) child
		// eventually stops existing.
		if err := syscall.Kill(pid, 0); err != nil {
			break
		}
		if zombie(pid) || time.Now().After(deadline) {
			if !zombie(pid) {
				t.Fatalf("background child %d still alive after the timeout", pid)
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

func TestCommandKeywords(t *testing.T) {
	r, _, dir := newTestRunner(t)
	writeFiles(t, dir, map[string]string{"auth_login.txt": "TestLogin ok\n"})
	tests := []struct {
		validator, args string
		want            Outcome
	}{
		{"command_must_match_objective_keywords", `{"command":"grep -q TestLogin auth_login.txt","objective_keywords":["TestLogin","auth_login"]}`, Pass},
		{"command_must_match_objective_keywords", `{"command":"grep -q TestLogin auth_login.txt","objective_keywords":["billing"]}`, Refused},
		{"command_must_match_objective_keywords", `{"command":"grep -q TestLogin auth_login.txt","objective_keywords":[]}`, Refused},
		{"command_must_match_objective_keywords", `{"command":"grep -q TestLogin auth_login.txt"}`, Refused},
		{"command_must_match_objective_keywords", `{"command":["grep","-q","TestLogout","auth_login.txt"],"objective_keywords":["TestLogout"]}`, Fail},
		{"command_zero_exit", `{"command":"grep -q TestLogin auth_login.txt","objective_keywords":["auth_login"]}`, Pass},
		{"command_zero_exit", `{"command":"grep -q TestLogin auth_login.txt","objective_keywords":["nothere"]}`, Refused},
	}
	// command_must_match_objective_keywords is not in the default binding;
	// a policy may list it. Test the class through the definitions.
	for _, tt := range tests {
		def := r.Definitions[tt.validator]
		args, err := parseArgs(def, json.RawMessage(tt.args))
		got := Refused
		if err == nil {
			err = def.cls.check(args, def)
		}
		if err == nil {
			x := r.execution(Request{Cwd: dir}, def, args, policies.ValidatorRule{}, dir, t.TempDir(), "")
			out, rerr := def.cls.run(context.Background(), x)
			if rerr != nil {
				t.Fatal(rerr)
			}
			got = Fail
			if out.pass {
				got = Pass
			}
		}
		if got != tt.want {
			t.Errorf("%s %s: %s (%v), want %s", tt.validator, tt.args, got, err, tt.want)
		}
	}
}

// Without pytest installed the runner cannot run pytest_pass: an error
// (exit 1), not a FAIL entry.
func TestPytestMissing(t *testing.T) {
	r, l, dir := newTestRunner(t)
	if r.Toolchain.Python == nil {
		t.Skip("no python3")
	}
	if err := exec.Command(r.Toolchain.Python.Path, "-m", "pytest", "--version").Run(); err == nil {
		t.Skip("pytest is installed")
	}
	_, err := r.Run(context.Background(), Request{Session: "s1", Claim: "done", Validator: "pytest_pass", Args: json.RawMessage(`{"target":"."}`), Cwd: dir})
	if err == nil || !strings.Contains(err.Error(), "pytest is not installed") {
		t.Fatalf("err = %v", err)
	}
	if es, _ := l.ReadVerified("s1"); len(es) != 0 {
		t.Errorf("appended %d entries", len(es))
	}
}

// With the default policy pytest_pass runs the whole suite: a failing
// test elsewhere, a narrower target, or a conftest that deselects the
// failing test cannot back done.
func TestPytestWholeSuite(t *testing.T) {
	r, _, dir := newTestRunner(t)
	needPytest(t, r)
	writeFiles(t, dir, map[string]string{
		"pyproject.toml":    "[tool.pytest.ini_options]\n",
		"tests/test_ok.py":  "def test_one():\n    assert 1 + 1 == 2\n",
		"tests/test_bad.py": "def test_bad():\n    assert 1 == 2\n",
	})
	if res := runReq(t, r, "s1", "done", "pytest_pass", `{"target":"tests/test_ok.py"}`, dir); res.Outcome != Refused || !strings.Contains(res.Reason, `target must be "."`) {
		t.Errorf("narrow target: %s %q", res.Outcome, res.Reason)
	}
	if res := runReq(t, r, "s1", "done", "pytest_pass", `{}`, filepath.Join(dir, "tests")); res.Outcome != Fail || !strings.Contains(res.Reason, "1 failed") {
		t.Errorf("whole suite from a subdirectory: %s %q", res.Outcome, res.Reason)
	}
	writeFiles(t, dir, map[string]string{"conftest.py": "def pytest_collection_modifyitems(config, items):\n    keep = [i for i in items if 'bad' not in i.name]\n    config.hook.pytest_deselected(items=[i for i in items if 'bad' in i.name])\n    items[:] = keep\n"})
	if res := runReq(t, r, "s1", "done", "pytest_pass", `{}`, dir); res.Outcome != Fail || !strings.Contains(res.Reason, "deselected") {
		t.Errorf("conftest deselecting the failure: %s %q", res.Outcome, res.Reason)
	}
	t.Setenv("PYTEST_ADDOPTS", "-k test_one")
	writeFiles(t, dir, map[string]string{"conftest.py": "\n"})
	if res := runReq(t, r, "s1", "done", "pytest_pass", `{}`, dir); res.Outcome != Fail || !strings.Contains(res.Reason, "1 failed") {
		t.Errorf("PYTEST_ADDOPTS from the caller: %s %q", res.Outcome, res.Reason)
	}
}
