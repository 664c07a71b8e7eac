package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/trust"
)

func TestValidateCommand(t *testing.T) {
	root := t.TempDir()
	t.Setenv("DOCKET_HOME", root)
	h, err := home.At(root)
	if err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	work := filepath.Join(proj, "work")
	for _, d := range []string{work, filepath.Join(proj, ".git")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "result.txt"), []byte("ok: migration applied\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The hooks saw session s1 start in the project, whose policy allows
	// two grep commands.
	if err := h.RecordSessionForDir(proj, "s1"); err != nil {
		t.Fatal(err)
	}
	def, err := policies.Default(policies.BindingFile)
	if err != nil {
		t.Fatal(err)
	}
	pol := strings.Replace(string(def), "projects: []", "projects:\n  - root: "+proj+"\n    commands: {done: [\"grep -q migration result.txt\", \"grep -q rollback result.txt\"]}", 1)
	if err := os.MkdirAll(h.PoliciesDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.PoliciesDir(), policies.BindingFile), []byte(pol), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	call := func(args ...string) (code int, stdout, stderr string) {
		t.Helper()
		var out, errb bytes.Buffer
		err := run(context.Background(), append([]string{"validate"}, args...), strings.NewReader(`{"command":["grep","-q","migration","result.txt"]}`), &out, &errb)
		code = report(err, &errb)
		return code, out.String(), errb.String()
	}
	pass := `{"command":["grep","-q","migration","result.txt"]}`

	// Before docket init: could not run, and the message says how to fix it.
	code, _, stderr := call("--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args", pass, "--cwd", work)
	if code != 1 || !strings.Contains(stderr, "docket init") {
		t.Fatalf("without keys: exit %d, stderr %q", code, stderr)
	}
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	// The binding written above is not approved yet: nothing runs.
	code, _, stderr = call("--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args", pass, "--cwd", work)
	if code != 1 || !strings.Contains(stderr, "docket policy approve") {
		t.Fatalf("unapproved policy: exit %d, stderr %q", code, stderr)
	}
	if _, err := policies.Approve(h, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
	// s1's chain began at a prompt the ledger hook recorded: its O-Tag
	// goes on the validator's entries
	const oTag = "ot_0123456789abcdef01234567"
	if l, err := ledger.Open(h); err != nil {
		t.Fatal(err)
	} else if err := trust.WriteOrigin(h, l.Keys(), trust.Origin{OTag: oTag, Session: "s1", Time: time.Now().UTC().Format(time.RFC3339Nano)}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"pass", []string{"--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args", pass, "--cwd", work}, 0, "PASS done command_zero_exit: 1 run(s)", ""},
		{"args from stdin", []string{"--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args-file", "-", "--cwd", work}, 0, "validator_pass seq 1", ""},
		{"fail", []string{"--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args", `{"command":"grep -q rollback result.txt"}`, "--cwd", work}, 2, "FAIL done command_zero_exit: command failed: exit status 1", ""},
		{"wrong validator", []string{"--session", "s1", "--claim", "tests_pass", "--validator", "command_zero_exit", "--args", pass, "--cwd", work}, 3, "REFUSED tests_pass command_zero_exit: validator \"command_zero_exit\" may not back claim", "hint: docket validate --claim tests_pass --validator go_test_pass"},
		{"weak args", []string{"--session", "s1", "--claim", "tests_pass", "--validator", "go_test_pass", "--args", `{"package":"./...","required_runs":1}`, "--cwd", work}, 3, "REFUSED tests_pass go_test_pass: weak arguments", "hint:"},
		{"trivial", []string{"--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args", `{"command":"echo done"}`, "--cwd", work}, 3, "not on the claim binding policy's allow list", ""},
		{"outside the project", []string{"--session", "s1", "--claim", "done", "--validator", "command_zero_exit", "--args", pass, "--cwd", elsewhere}, 3, "outside the session's project", "hint:"},
		{"unknown validator", []string{"--session", "s1", "--claim", "done", "--validator", "vibes", "--args", `{}`, "--cwd", work}, 3, "REFUSED done vibes", ""},
		{"unquoted json", []string{"--session", "s1", "--claim", "done", "--validator", "go_test_pass", "--args", `{"package":`, `"./..."}`}, 1, "", "hint: quote the JSON"},
		{"args twice", []string{"--session", "s1", "--claim", "done", "--validator", "go_test_pass", "--args", `{}`, "--args-file", "x.json"}, 1, "", "mutually exclusive"},
		{"no args", []string{"--session", "s1", "--claim", "done", "--validator", "go_test_pass"}, 1, "", "--args is required"},
		{"no claim", []string{"--session", "s1", "--validator", "go_test_pass", "--args", `{}`}, 1, "", "--claim is required"},
		{"bad session", []string{"--session", "../etc", "--claim", "done", "--validator", "go_test_pass", "--args", `{}`}, 1, "", "invalid session id"},
		{"bad cwd", []string{"--session", "s1", "--claim", "done", "--validator", "go_test_pass", "--args", `{}`, "--cwd", filepath.Join(work, "nope")}, 1, "", "--cwd"},
		{"no session recorded", []string{"--claim", "done", "--validator", "command_zero_exit", "--args", pass, "--cwd", work}, 1, "", "hint: pass --session S"},
		{"bad flag", []string{"--sesion", "s1"}, 1, "", "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := call(tt.args...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, stdout ~ %q, stderr ~ %q", code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
			}
			if strings.Count(strings.TrimRight(stdout, "\n"), "\n") > 0 {
				t.Errorf("stdout is more than one line: %q", stdout)
			}
		})
	}

	// The session the hooks recorded for the directory is the default.
	if err := h.RecordSessionForDir(work, "s2"); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := call("--claim", "done", "--validator", "command_zero_exit", "--args", pass, "--cwd", work, "--json")
	if code != 0 {
		t.Fatalf("default session: exit %d %s %s", code, stdout, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output %q: %v", stdout, err)
	}
	if res["result"] != "pass" || res["session"] != "s2" || res["cwd"] != work || res["seq"] != 0.0 {
		t.Errorf("--json result = %v", res)
	}

	// What the gate reads: verified validator_pass / validator_fail entries.
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	es, err := l.ReadVerified("s1")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range es {
		kinds = append(kinds, string(e.Kind))
	}
	if strings.Join(kinds, " ") != "validator_pass validator_pass validator_fail" {
		t.Fatalf("session s1 kinds = %v", kinds)
	}
	var body map[string]any
	if err := json.Unmarshal(es[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"claim", "validator", "args", "cwd", "result", "runs", "tests_run", "duration_ms", "definition_digest"} {
		if _, ok := body[k]; !ok {
			t.Errorf("validator_pass body lacks %q: %v", k, body)
		}
	}
	if es[0].Tool != "command_zero_exit" || body["claim"] != "done" || body["result"] != "pass" || body["cwd"] != work || body["o_tag"] != oTag {
		t.Errorf("entry = %+v body = %v", es[0], body)
	}
	if s2, err := l.ReadVerified("s2"); err != nil || len(s2) != 1 || strings.Contains(string(s2[0].Body), `"o_tag"`) {
		t.Errorf("s2, which has no origin: %v %v", s2, err)
	}
	f, err := l.OpenArtifact(es[0], "run1.stderr")
	if err != nil {
		t.Fatalf("run1.stderr artifact: %v", err)
	}
	f.Close()
}
