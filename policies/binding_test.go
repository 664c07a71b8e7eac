package policies

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
)

func TestDefaultBinding(t *testing.T) {
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadBinding(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Source().Origin; got != "embedded:claim_binding.yaml" {
		t.Errorf("origin = %q", got)
	}
	want := map[string][]string{
		"done":       {"go_test_pass", "pytest_pass", "command_zero_exit", "file_diff_present"},
		"fixed":      {"go_test_pass", "pytest_pass", "command_zero_exit", "file_diff_present"},
		"tests_pass": {"go_test_pass", "pytest_pass"},
		"shipped":    {"command_zero_exit", "http_2xx"},
		"blocked":    {"ladder_exhaustion_proof"},
		"delegation": {"fetch_attempt_proof"},
	}
	for claim, names := range want {
		var got []string
		for _, r := range b.Validators(claim) {
			got = append(got, r.Name)
			var ex map[string]any
			if err := json.Unmarshal([]byte(r.Example), &ex); err != nil {
				t.Errorf("%s/%s: example %q: %v", claim, r.Name, r.Example, err)
			}
		}
		if !reflect.DeepEqual(got, names) {
			t.Errorf("Validators(%q) = %v, want %v", claim, got, names)
		}
	}
	if b.Validators("finished") != nil {
		t.Error("unknown claim type has validators")
	}
	rungs := b.Ladder()
	if len(rungs) < 3 {
		t.Fatalf("ladder has %d rungs", len(rungs))
	}
	if rungs[0].Name != "read_docs" || rungs[0].MinAttempts != 1 {
		t.Errorf("first rung = %+v", rungs[0])
	}
}

func TestBindingAllows(t *testing.T) {
	b, err := ParseBinding(mustDefault(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		claim, validator string
		want             bool
	}{
		{"done", "go_test_pass", true},
		{"done", "http_2xx", false},
		{"tests_pass", "command_zero_exit", false},
		{"tests_pass", "pytest_pass", true},
		{"shipped", "http_2xx", true},
		{"blocked", "ladder_exhaustion_proof", true},
		{"blocked", "go_test_pass", false},
		{"delegation", "fetch_attempt_proof", true},
		{"delegation", "command_zero_exit", false},
		{"nonsense", "go_test_pass", false},
		{"done", "", false},
	}
	for _, tt := range tests {
		if got := b.Allows(tt.claim, tt.validator); got != tt.want {
			t.Errorf("Allows(%q, %q) = %v, want %v", tt.claim, tt.validator, got, tt.want)
		}
	}
	r, ok := b.Rule("tests_pass", "go_test_pass")
	if !ok || r.MinArgs["required_runs"] != 2.0 || r.MinArgs["package"] != true {
		t.Errorf("tests_pass/go_test_pass min args = %#v", r.MinArgs)
	}
	// Callers cannot mutate the policy through the returned rules.
	r.MinArgs["required_runs"] = 0.0
	if r2, _ := b.Rule("tests_pass", "go_test_pass"); r2.MinArgs["required_runs"] != 2.0 {
		t.Error("MinArgs aliases the policy")
	}
}

func mustDefault(t *testing.T) Source {
	t.Helper()
	data, err := Default(BindingFile)
	if err != nil {
		t.Fatal(err)
	}
	return Source{Name: BindingFile, Origin: "test", Data: data}
}

const minimalBinding = `version: 1
claims:
  done:
    - validator: go_test_pass
      min_args: {required_runs: 1}
      example: '{"package":"./...","required_runs":1}'
  fixed: []
  tests_pass: []
  shipped: []
  blocked: []
  delegation: []
`

func TestParseBindingErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"ok", minimalBinding, ""},
		{"unknown top key", minimalBinding + "extra: 1\n", "unknown field"},
		{"unknown rule key", strings.Replace(minimalBinding, "min_args:", "min_arg:", 1), "unknown field"},
		{"malformed", "version: 1\nclaims: [\n", "decode"},
		{"no version", strings.Replace(minimalBinding, "version: 1\n", "", 1), "version"},
		{"unknown claim", minimalBinding + "  finished: []\n", `unknown claim type "finished"`},
		{"missing claim", strings.Replace(minimalBinding, "  delegation: []\n", "", 1), `"delegation" missing`},
		{"bad name", strings.Replace(minimalBinding, "go_test_pass", "Go Test", 1), "bad name"},
		{"diff alone for fixed", strings.Replace(minimalBinding, "  fixed: []\n", "  fixed:\n    - {validator: file_diff_present, example: '{\"path\":\"a\"}'}\n", 1), "cannot back fixed alone"},
		{"bad scope", strings.Replace(minimalBinding, "min_args: {required_runs: 1}", "scope: module\n      min_args: {required_runs: 1}", 1), "scope"},
		{"with unknown", strings.Replace(minimalBinding, "min_args: {required_runs: 1}", "with: [pytest_pass]\n      min_args: {required_runs: 1}", 1), "is not another validator"},
		{"with itself", strings.Replace(minimalBinding, "min_args: {required_runs: 1}", "with: [go_test_pass]\n      min_args: {required_runs: 1}", 1), "is not another validator"},
		{"empty command", strings.Replace(minimalBinding, "min_args: {required_runs: 1}", "commands: [\"  \"]\n      min_args: {required_runs: 1}", 1), "empty command"},
		{"relative toolchain", minimalBinding + "toolchains: {go: bin/go}\n", "toolchains.go"},
		{"unclean toolchain", minimalBinding + "toolchains: {python3: /usr/bin/../bin/python3}\n", "toolchains.python3"},
		{"relative path dir", minimalBinding + "toolchains: {path: [bin]}\n", "toolchains.path[0]"},
		{"relative project", minimalBinding + "projects: [{root: src/x, commands: {done: [make]}}]\n", "projects[0].root"},
		{"project unknown claim", minimalBinding + "projects: [{root: /src/x, commands: {finished: [make]}}]\n", "unknown claim type"},
		{"duplicate", strings.Replace(minimalBinding, "  fixed: []\n", "", 1) + "  fixed:\n    - {validator: a, example: '{}'}\n    - {validator: a, example: '{}'}\n", "listed twice"},
		{"negative min", strings.Replace(minimalBinding, "required_runs: 1}", "required_runs: -1}", 1), "negative"},
		{"string min", strings.Replace(minimalBinding, "required_runs: 1}", "required_runs: many}", 1), "want a number or true"},
		{"false min", strings.Replace(minimalBinding, "required_runs: 1}", "required_runs: false}", 1), "meaningless"},
		{"example weak", strings.Replace(minimalBinding, `"required_runs":1`, `"required_runs":0`, 1), "does not meet min_args"},
		{"example not json", strings.Replace(minimalBinding, `'{"package":"./...","required_runs":1}'`, `'package=./...'`, 1), "not a JSON object"},
		{"no example", strings.Replace(minimalBinding, `      example: '{"package":"./...","required_runs":1}'`+"\n", "", 1), "example: missing"},
		{"blocked without ladder", strings.Replace(minimalBinding, "  blocked: []\n", "  blocked:\n    - {validator: ladder_exhaustion_proof, example: '{}'}\n", 1), "escalation_ladder: empty"},
		{"ladder bad glob", minimalBinding + "escalation_ladder:\n  - rung: a\n    match: [{tool: '['}]\n", "bad glob"},
		{"ladder bad regexp", minimalBinding + "escalation_ladder:\n  - rung: a\n    match: [{tool: Bash, command: '('}]\n", "match[0].command"},
		{"ladder zero attempts", minimalBinding + "escalation_ladder:\n  - rung: a\n    min_attempts: 0\n    match: [{tool: Bash}]\n", "min_attempts"},
		{"ladder routes above attempts", minimalBinding + "escalation_ladder:\n  - rung: a\n    min_routes: 2\n    match: [{tool: Bash}]\n", "min_routes"},
		{"ladder empty match", minimalBinding + "escalation_ladder:\n  - rung: a\n", "match: empty"},
		{"ladder unknown key", minimalBinding + "escalation_ladder:\n  - rung: a\n    tools: [Bash]\n    match: [{tool: Bash}]\n", "unknown field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseBinding(Source{Name: BindingFile, Origin: "/p/claim_binding.yaml", Data: []byte(tt.yaml)})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to mention %q", err, tt.want)
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Origin != "/p/claim_binding.yaml" {
				t.Errorf("error is not a *Error naming the file: %#v", err)
			}
		})
	}
}

// A policy file in the state root replaces the default; a broken one is
// an error, never a silent fallback.
func TestLoadBindingOverride(t *testing.T) {
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(h.PoliciesDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(h.PoliciesDir(), BindingFile)
	if err := os.WriteFile(p, []byte(minimalBinding), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := LoadBinding(h)
	if err != nil {
		t.Fatal(err)
	}
	if b.Source().Origin != p || b.Allows("done", "pytest_pass") || !b.Allows("done", "go_test_pass") {
		t.Errorf("override not in force: origin %q", b.Source().Origin)
	}
	if err := os.WriteFile(p, []byte("version: 1\nclaims: {done: [}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadBinding(h); err == nil {
		t.Fatal("malformed override accepted")
	}
}

func TestCheckMinArgs(t *testing.T) {
	min := map[string]any{"required_runs": 2.0, "package": true}
	tests := []struct {
		args string
		want string
	}{
		{`{"package":"./...","required_runs":2}`, ""},
		{`{"package":"./...","required_runs":5}`, ""},
		{`{"package":"./...","required_runs":1}`, "at least 2"},
		{`{"package":"./...","required_runs":"2"}`, "must be a number"},
		{`{"package":"./..."}`, "must be a number"},
		{`{"package":"","required_runs":2}`, "package is required"},
		{`{"required_runs":2}`, "package is required"},
		{`{"package":[],"required_runs":2}`, "package is required"},
	}
	for _, tt := range tests {
		var args map[string]any
		dec := json.NewDecoder(strings.NewReader(tt.args))
		dec.UseNumber()
		if err := dec.Decode(&args); err != nil {
			t.Fatal(err)
		}
		err := CheckMinArgs(min, args)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckMinArgs(%s) = %v, want %q", tt.args, err, tt.want)
		}
	}
}

func TestRungMatch(t *testing.T) {
	tests := []struct {
		m             RungMatch
		tool, command string
		want          bool
	}{
		{RungMatch{Tool: "WebFetch"}, "WebFetch", "", true},
		{RungMatch{Tool: "mcp__*search*"}, "mcp__brave__web_search", "", true},
		{RungMatch{Tool: "mcp__*search*"}, "WebSearch", "", false},
		{RungMatch{Tool: "Bash", Command: `\bgrep\s`}, "Bash", "grep -r x .", true},
		{RungMatch{Tool: "Bash", Command: `\bgrep\s`}, "Bash", "ls", false},
		{RungMatch{Tool: "["}, "[", "", false},
	}
	for _, tt := range tests {
		if got := tt.m.Matches(tt.tool, tt.command); got != tt.want {
			t.Errorf("%+v.Matches(%q, %q) = %v", tt.m, tt.tool, tt.command, got)
		}
	}
}

func writeTree(t *testing.T, dir string, files map[string]string) {
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

// The suggestions fit the project: what cannot run there is left out,
// file_diff_present (never alone) is never suggested, a command example
// is an allowed command the project can run.
func TestBindingForProject(t *testing.T) {
	b, err := ParseBinding(mustDefault(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		files map[string]string
		claim string
		want  []string // validator=example
	}{
		// go test ./... is go_test_pass's, which holds the suite to HEAD
		{"go module", map[string]string{"go.mod": "module x\n"}, "done",
			[]string{`go_test_pass={"package":"./...","required_runs":1}`}},
		{"go module with make test", map[string]string{"go.mod": "module x\n", "Makefile": "GO := go\ntest: build\n\tgo test ./...\n"}, "fixed",
			[]string{`go_test_pass={"package":"./...","required_runs":1}`, `command_zero_exit={"command":["make","test"]}`}},
		{"makefile without test target", map[string]string{"Makefile": "test := 1\nbuild:\n\ttrue\n"}, "done", nil},
		{"python", map[string]string{"pyproject.toml": "", "tests/test_x.py": ""}, "tests_pass",
			[]string{`pytest_pass={"target":".","required_runs":2}`}},
		{"npm", map[string]string{"package.json": `{"scripts":{"test":"jest"}}`}, "done",
			[]string{`command_zero_exit={"command":["npm","test"]}`}},
		{"npm without test script", map[string]string{"package.json": `{"scripts":{"build":"tsc"}}`}, "done", nil},
		{"cargo", map[string]string{"Cargo.toml": ""}, "done", []string{`command_zero_exit={"command":["cargo","test"]}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			var got []string
			for _, r := range b.ForProject(root).Validators(tt.claim) {
				got = append(got, r.Name+"="+r.Example)
			}
			want := tt.want
			if want == nil { // nothing fits: the policy's list as is
				for _, r := range b.Validators(tt.claim) {
					want = append(want, r.Name+"="+r.Example)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %q\nwant %q", got, want)
			}
			for _, r := range b.ForProject(root).Validators(tt.claim) {
				if tt.want != nil && r.Name == "file_diff_present" {
					t.Errorf("file_diff_present suggested")
				}
			}
		})
	}
	// Fitting changes suggestions only: what the policy allows is the same.
	fit := b.ForProject(t.TempDir())
	for _, c := range ClaimTypes {
		for _, r := range b.Validators(c) {
			if !fit.Allows(c, r.Name) {
				t.Errorf("fitted binding does not allow %s for %s", r.Name, c)
			}
			got, _ := fit.Rule(c, r.Name)
			if !reflect.DeepEqual(got, r) {
				t.Errorf("Rule(%s, %s) = %+v, want %+v", c, r.Name, got, r)
			}
		}
	}
	// ForCwd fits a *Binding behind an interface, and leaves others be.
	type validatorsOnly interface {
		Validators(string) []ValidatorRule
	}
	goProj := t.TempDir()
	writeTree(t, goProj, map[string]string{"go.mod": "module x\n", ".git/HEAD": "ref: refs/heads/main\n", "sub/x.go": ""})
	var vb validatorsOnly = b
	if rs := ForCwd(vb, filepath.Join(goProj, "sub")).Validators("done"); len(rs) != 1 || rs[0].Name != "go_test_pass" {
		t.Errorf("ForCwd from a subdirectory: %+v", rs)
	}
}

func TestBindingCommands(t *testing.T) {
	src := mustDefault(t)
	src.Data = []byte(strings.Replace(string(src.Data), "projects: []", "projects:\n  - root: /src/site\n    commands: {done: [\"make   e2e\"], shipped: [\"./smoke\"]}", 1))
	b, err := ParseBinding(src)
	if err != nil {
		t.Fatal(err)
	}
	has := func(l []string, s string) bool {
		for _, x := range l {
			if x == s {
				return true
			}
		}
		return false
	}
	if c := b.Commands("done", "command_zero_exit", "/src/site/web"); !has(c, "make e2e") || !has(c, "make test") {
		t.Errorf("inside the project: %q", c)
	}
	if c := b.Commands("done", "command_zero_exit", "/src/sitemap"); has(c, "make e2e") {
		t.Errorf("a sibling with a common prefix gets the project's commands: %q", c)
	}
	if c := b.Commands("shipped", "command_zero_exit", "/src/site"); !has(c, "./smoke") || has(c, "make test") {
		t.Errorf("shipped: %q", c)
	}
	if c := b.Commands("tests_pass", "command_zero_exit", "/src/site"); c != nil {
		t.Errorf("a validator the claim does not allow has commands: %q", c)
	}
}

func TestProjectRoot(t *testing.T) {
	base := t.TempDir()
	writeTree(t, base, map[string]string{"repo/.git/HEAD": "x", "repo/a/b/f": "", "plain/c/f": "", "wt/.git": "gitdir: /elsewhere\n"})
	real, _ := filepath.EvalSymlinks(base)
	if err := os.Symlink(filepath.Join(base, "repo", "a"), filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		filepath.Join(base, "repo", "a", "b"): filepath.Join(real, "repo"),
		filepath.Join(base, "repo"):           filepath.Join(real, "repo"),
		filepath.Join(base, "plain", "c"):     filepath.Join(real, "plain", "c"),
		filepath.Join(base, "wt"):             filepath.Join(real, "wt"),
		filepath.Join(base, "link"):           filepath.Join(real, "repo"),
		"":                                    "",
	} {
		if in == filepath.Join(base, "plain", "c") && ProjectRoot(base) != real {
			continue // a .git above the temporary directory (a shared /tmp)
		}
		if got := ProjectRoot(in); got != want {
			t.Errorf("ProjectRoot(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkForCwd is what the gate adds to a stop with a done claim:
// locate the project and fit the suggestions.
func BenchmarkForCwd(b *testing.B) {
	bind, err := ParseBinding(Source{Name: BindingFile, Origin: "bench", Data: func() []byte { d, _ := Default(BindingFile); return d }()})
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	for name, body := range map[string]string{"go.mod": "module x\n", "Makefile": "test:\n\tgo test ./...\n", ".git/HEAD": "x", "a/b/c/x.go": ""} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	cwd := filepath.Join(root, "a", "b", "c")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rs := ForCwd(bind, cwd).Validators("done"); len(rs) == 0 {
			b.Fatal("no rules")
		}
	}
}
