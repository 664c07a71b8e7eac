package validators

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

// newTestRunner returns a runner over the default binding and
// definitions, an in-memory ledger, and a scratch working directory.
func newTestRunner(t *testing.T) (*Runner, *MemLedger, string) {
	t.Helper()
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := &MemLedger{}
	r, err := NewRunner(h, l)
	if err != nil {
		t.Fatal(err)
	}
	shareGoCache(t, r)
	return r, l, t.TempDir()
}

// looseBinding lets done be backed by any package, run filter, the
// commands the class tests run, and file_diff_present alone: for testing
// the classes themselves, apart from the default policy's limits.
const looseBinding = `version: 1
claims:
  done:
    - {validator: go_test_pass, allow_run: true, example: '{"package":"./..."}'}
    - {validator: pytest_pass, example: '{"target":"tests"}'}
    - validator: command_zero_exit
      commands: ["grep hello out.txt", "grep -q goodbye out.txt", "grep -q x /dev/null", "grep -q TestLogin auth_login.txt", "sh -c sleep"]
      example: '{"command":["make","test"]}'
    - {validator: file_diff_present, example: '{"path":"main.go"}'}
  fixed: []
  tests_pass: []
  shipped: []
  blocked: []
  delegation: []
`

// newLooseRunner is newTestRunner over looseBinding.
func newLooseRunner(t *testing.T) (*Runner, *MemLedger, string) {
	t.Helper()
	r, l, dir := newTestRunner(t)
	b, err := policies.ParseBinding(policies.Source{Name: "claim_binding.yaml", Origin: "test", Data: []byte(looseBinding)})
	if err != nil {
		t.Fatal(err)
	}
	r.Binding = b
	return r, l, dir
}

// shareGoCache points the runner's build cache at the test process's
// (a fresh cache rebuilds the standard library: seconds per test).
func shareGoCache(t *testing.T, r *Runner) {
	t.Helper()
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil && len(strings.TrimSpace(string(out))) > 0 {
		r.Toolchain.GoCache = strings.TrimSpace(string(out))
	}
}

func TestRunnerRefusals(t *testing.T) {
	r, l, dir := newTestRunner(t)
	tests := []struct {
		name, claim, validator, args string
		want                         string // substring of the reason
	}{
		{"unknown claim", "finished", "go_test_pass", `{"package":"./..."}`, "unknown claim type"},
		{"wrong validator", "tests_pass", "command_zero_exit", `{"command":["make","test"]}`, "may not back claim"},
		{"wrong validator for delegation", "delegation", "go_test_pass", `{"package":"./..."}`, "may not back claim"},
		{"unknown validator", "done", "magic_pass", `{}`, "may not back claim"},
		{"not json", "done", "go_test_pass", `package=./...`, "not a JSON object"},
		{"json list", "done", "go_test_pass", `["./..."]`, "not a JSON object"},
		{"trailing data", "done", "go_test_pass", `{"package":"./..."} {}`, "data after"},
		{"null", "done", "go_test_pass", `null`, "null"},
		{"unknown argument", "done", "go_test_pass", `{"package":"./...","count":1}`, `unknown argument "count"`},
		{"wrong type", "done", "go_test_pass", `{"package":"./...","required_runs":"3"}`, "want an integer"},
		{"fraction", "done", "go_test_pass", `{"package":"./...","required_runs":1.5}`, "want an integer"},
		{"run filter not allowed", "done", "go_test_pass", `{"run":"TestX"}`, `allows no run filter`},
		{"narrow package", "done", "go_test_pass", `{"package":"./calc"}`, `package must be ./...`},
		{"narrow package tests_pass", "tests_pass", "go_test_pass", `{"package":"./calc","required_runs":2}`, `package must be ./...`},
		{"narrow pytest", "done", "pytest_pass", `{"target":"tests/test_x.py::test_one"}`, `target must be "."`},
		{"zero runs", "done", "go_test_pass", `{"package":"./...","required_runs":0}`, "below the minimum 1"},
		{"too many runs", "done", "go_test_pass", `{"package":"./...","required_runs":1000}`, "above the maximum"},
		{"policy minimum", "tests_pass", "go_test_pass", `{"package":"./...","required_runs":1}`, "requires at least 2"},
		{"policy minimum default", "tests_pass", "pytest_pass", `{"target":"tests"}`, "requires at least 2"},
		{"empty package", "done", "go_test_pass", `{"package":""}`, "package is required"},
		{"flag package", "done", "go_test_pass", `{"package":"-exec=true"}`, "looks like a flag"},
		{"bad run pattern", "done", "go_test_pass", `{"package":"./...","run":"Test("}`, "run pattern"},
		{"trivial command", "done", "command_zero_exit", `{"command":"true"}`, "not on the claim binding policy's allow list"},
		{"trivial argv", "done", "command_zero_exit", `{"command":["echo","tests pass"]}`, "not on the claim binding policy's allow list"},
		{"expr", "done", "command_zero_exit", `{"command":["expr","1"]}`, "not on the claim binding policy's allow list"},
		{"python -c", "done", "command_zero_exit", `{"command":"python3 -c 0"}`, "not on the claim binding policy's allow list"},
		{"go vet", "done", "command_zero_exit", `{"command":"go vet ./..."}`, "not on the claim binding policy's allow list"},
		{"git rev-parse", "shipped", "command_zero_exit", `{"command":["git","rev-parse","HEAD"]}`, "not on the claim binding policy's allow list"},
		{"allowed plus args", "done", "command_zero_exit", `{"command":["make","test","TESTS=none"]}`, "not on the claim binding policy's allow list"},
		{"allowed in a shell", "done", "command_zero_exit", `{"command":["sh","-c","make test"]}`, "not on the claim binding policy's allow list"},
		{"masked command", "shipped", "command_zero_exit", `{"command":"git push || true"}`, "not on the claim binding policy's allow list"},
		{"exit 0", "done", "command_zero_exit", `{"command":"go test ./...; exit 0"}`, "not on the claim binding policy's allow list"},
		{"empty command", "done", "command_zero_exit", `{"command":""}`, "command is required"},
		{"blank command", "done", "command_zero_exit", `{"command":"  "}`, "command is empty"},
		{"command number", "done", "command_zero_exit", `{"command":3}`, "command string or an argv list"},
		{"timeout too long", "done", "command_zero_exit", `{"command":["make","test"],"timeout":"100h"}`, "above the maximum"},
		{"bad timeout", "done", "command_zero_exit", `{"command":["make","test"],"timeout":"soon"}`, "duration"},
		{"keyword missing", "done", "command_zero_exit", `{"command":["make","test-auth"],"objective_keywords":["billing"]}`, "does not mention"},
		{"go test narrowed", "done", "command_zero_exit", `{"command":"go test -run TestLogin ./auth"}`, "not on the claim binding policy's allow list"},
		{"go test wrapped", "done", "command_zero_exit", `{"command":["sh","-c","cd auth && go test ./..."]}`, "not on the claim binding policy's allow list"},
		{"pytest directly", "done", "command_zero_exit", `{"command":"python3 -m pytest -k login"}`, "not on the claim binding policy's allow list"},
		{"pytest in pipeline", "done", "command_zero_exit", `{"command":"set -o pipefail; pytest -q | tee log"}`, "not on the claim binding policy's allow list"},
		{"whole tree diff", "done", "file_diff_present", `{"path":"."}`, "whole tree"},
		{"escaping diff", "done", "file_diff_present", `{"path":"../x"}`, "leaves the working directory"},
		{"range base", "done", "file_diff_present", `{"path":"a.go","base":"HEAD~3..HEAD"}`, "not a range"},
		{"remote url", "shipped", "http_2xx", `{"url":"https://example.com/"}`, "neither loopback"},
		{"ftp url", "shipped", "http_2xx", `{"url":"ftp://127.0.0.1/"}`, "scheme"},
		{"url creds", "shipped", "http_2xx", `{"url":"http://u:p@127.0.0.1/"}`, "credentials"},
		{"short keyword", "delegation", "fetch_attempt_proof", `{"keyword":"ab","min_attempts":3,"min_routes":2}`, "shorter than 3"},
		{"stop keyword", "delegation", "fetch_attempt_proof", `{"keyword":"https","min_attempts":3,"min_routes":2}`, "almost any"},
		{"weak attempts", "delegation", "fetch_attempt_proof", `{"keyword":"cookie","min_attempts":1,"min_routes":1}`, "at least 3"},
		{"routes above attempts", "delegation", "fetch_attempt_proof", `{"keyword":"cookie","min_attempts":3,"min_routes":5}`, "exceeds"},
		{"ladder keyword", "blocked", "ladder_exhaustion_proof", `{"keyword":""}`, "keyword is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := r.Run(context.Background(), Request{Session: "s1", Claim: tt.claim, Validator: tt.validator, Args: json.RawMessage(tt.args), Cwd: dir})
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != Refused || !strings.Contains(res.Reason, tt.want) {
				t.Fatalf("got %s %q, want refused mentioning %q", res.Outcome, res.Reason, tt.want)
			}
		})
	}
	if es, _ := l.ReadVerified("s1"); len(es) != 0 {
		t.Errorf("refusals appended %d entries", len(es))
	}
}

func TestRunnerHint(t *testing.T) {
	r, _, dir := newTestRunner(t)
	res, err := r.Run(context.Background(), Request{Session: "s1", Claim: "tests_pass", Validator: "command_zero_exit", Args: json.RawMessage(`{}`), Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	want := `docket validate --claim tests_pass --validator go_test_pass --args '{"package":"./...","required_runs":2}'`
	if res.Hint != want {
		t.Errorf("hint = %q, want %q", res.Hint, want)
	}
}

func TestRunnerPassAndFail(t *testing.T) {
	r, l, dir := newLooseRunner(t)
	if err := os.WriteFile(filepath.Join(dir, "out.txt"), []byte("hello world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args string) *Result {
		t.Helper()
		res, err := r.Run(context.Background(), Request{Session: "s1", Claim: "done", Validator: "command_zero_exit", Args: json.RawMessage(args), Cwd: dir})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := run(`{"command":["grep","hello","out.txt"]}`)
	if res.Outcome != Pass || res.Runs != 1 || res.Entry == nil || res.Entry.Kind != ledger.KindValidatorPass {
		t.Fatalf("grep hello: %+v", res)
	}
	e := res.Entry
	if e.Tool != "command_zero_exit" || e.Runtime != "docket" || e.Event != "validate" || e.Args == "" {
		t.Errorf("entry header = %+v", e)
	}
	body := bodyOf(e)
	for k, want := range map[string]any{"claim": "done", "validator": "command_zero_exit", "class": "command_zero_exit", "cwd": dir, "result": "pass"} {
		if body[k] != want {
			t.Errorf("body[%q] = %v, want %v", k, body[k], want)
		}
	}
	if d, _ := body["definition_digest"].(string); !strings.HasPrefix(d, "sha256:") {
		t.Errorf("definition_digest = %v", body["definition_digest"])
	}
	args, _ := body["args"].(map[string]any)
	if args["timeout"] != "10m0s" || args["command"] == nil {
		t.Errorf("body args = %v (want defaults applied)", args)
	}
	if string(res.Args) != `{"command":["grep","hello","out.txt"],"timeout":"10m0s"}` {
		t.Errorf("canonical args = %s", res.Args)
	}
	f, err := l.OpenArtifact(e, "run1.stdout")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(f)
	if string(out) != "hello world\n" {
		t.Errorf("stdout artifact = %q", out)
	}

	res = run(`{"command":"grep -q goodbye out.txt"}`)
	if res.Outcome != Fail || res.Entry.Kind != ledger.KindValidatorFail || !strings.Contains(res.Reason, "exit status 1") {
		t.Fatalf("grep goodbye: %+v", res)
	}
	if b := bodyOf(res.Entry); b["result"] != "fail" || b["reason"] == nil {
		t.Errorf("fail body = %v", b)
	}
	es, _ := l.ReadVerified("s1")
	if len(es) != 2 {
		t.Errorf("ledger has %d entries, want 2", len(es))
	}
}

func TestRunnerErrors(t *testing.T) {
	r, l, dir := newLooseRunner(t)
	req := Request{Session: "s1", Claim: "done", Validator: "command_zero_exit", Args: json.RawMessage(`{"command":["grep","-q","x","/dev/null"]}`), Cwd: dir}
	l.Err = io.ErrUnexpectedEOF
	if _, err := r.Run(context.Background(), req); err == nil || !strings.Contains(err.Error(), "run validator: append") {
		t.Errorf("append failure: err = %v", err)
	}
	l.Err = nil
	bad := req
	bad.Session = "../x"
	if _, err := r.Run(context.Background(), bad); err == nil {
		t.Error("invalid session accepted")
	}
	bad = req
	bad.Cwd = "relative"
	if _, err := r.Run(context.Background(), bad); err == nil {
		t.Error("relative cwd accepted")
	}
}

func mustDefault(t *testing.T) []byte {
	t.Helper()
	b, err := policies.Default(policies.BindingFile)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseBindingString(s string) (*policies.Binding, error) {
	return policies.ParseBinding(policies.Source{Name: policies.BindingFile, Origin: "test", Data: []byte(s)})
}
