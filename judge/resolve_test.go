package judge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

// realFS builds a user home with a state root on disk, so that globs and
// symlinks resolve against a real filesystem.
type realFS struct {
	tmp, user, proj string
	h               home.Home
}

func newRealFS(t *testing.T) realFS {
	t.Helper()
	tmp := t.TempDir()
	user := filepath.Join(tmp, "home", "u")
	h, _ := home.At(filepath.Join(user, ".local", "state", "docket"))
	proj := filepath.Join(user, "proj")
	for _, d := range []string{h.KeysDir(), h.LedgerDir(), h.PoliciesDir(), h.RunDir(), filepath.Join(h.Root, "tokens"), proj} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for p, b := range map[string]string{
		h.HMACKeyPath():                         "secret",
		filepath.Join(h.LedgerDir(), "s.jsonl"): "{}\n",
		filepath.Join(h.Root, "tokens", "t1"):   "tok",
		filepath.Join(proj, "main.go"):          "package main\n",
		filepath.Join(proj, "p.go"):             "package p\n",
	} {
		if err := os.WriteFile(p, []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return realFS{tmp: tmp, user: user, proj: proj, h: h}
}

func (fs realFS) engine(t *testing.T, unapproved string) *Engine {
	t.Helper()
	e := &Engine{Home: fs.h, Protector: &Protector{Home: fs.h, UserHome: fs.user, XDGState: filepath.Join(fs.user, ".local", "state"),
		Docket: "/opt/docket/bin/docket", Unapproved: unapproved}}
	e.SetPolicy(defaultSet(t))
	return e
}

func (fs realFS) ev(tool string, input any) *hooks.Event {
	b, _ := json.Marshal(input)
	return &hooks.Event{Runtime: hooks.Claude, Name: hooks.PreToolUse, SessionID: "s1", Cwd: fs.proj, ToolName: tool, ToolInput: b, ToolUseID: "toolu_1"}
}

func builtinRule(d *Decision) string {
	for _, id := range d.RuleIDs {
		if strings.HasPrefix(id, "builtin:") {
			return id
		}
	}
	return ""
}

// Each bypass of issue 9 (class 4) and issue 14, tried as an agent would:
// every one must be denied by a built-in protection.
func TestResolveBypasses(t *testing.T) {
	fs := newRealFS(t)
	e := fs.engine(t, "")
	link := filepath.Join(fs.tmp, "k")
	if err := os.Symlink(fs.h.KeysDir(), link); err != nil {
		t.Fatal(err)
	}
	rootLink := filepath.Join(fs.proj, "st")
	if err := os.Symlink(fs.h.Root, rootLink); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(fs.h.KeysDir(), "sub"), 0o700)
	subLink := filepath.Join(fs.tmp, "sub")
	if err := os.Symlink(filepath.Join(fs.h.KeysDir(), "sub"), subLink); err != nil {
		t.Fatal(err)
	}
	state := fs.h.Root
	bash := func(c string) map[string]any { return map[string]any{"command": c} }
	patch := func(body string) map[string]any {
		return map[string]any{"command": "*** Begin Patch\n" + body + "\n*** End Patch\n"}
	}
	tests := []struct {
		name, tool string
		input      any
		rule       string
	}{
		{"glob dock?t", "Bash", bash("cat ~/.local/state/dock?t/keys/*"), ProtectKeys},
		{"glob star", "Bash", bash("cat ~/.local/state/d*/keys/hmac.key"), ProtectKeys},
		{"glob class", "Bash", bash("cat ~/.local/state/[d]ocket/keys/hmac.key"), ProtectKeys},
		{"cd unknown", "Bash", bash("cd $(echo ~/.local/state) && cat docket/keys/hmac.key"), ProtectKeys},
		{"cd unknown then relative", "Bash", bash("cd `dirname x`; cd state; cat */keys/hmac.key"), ProtectKeys},
		{"recursive glob above root", "Bash", bash("cp -r ~/.local/st* /tmp/x"), ProtectKeys},
		{"recursive glob relative", "Bash", bash("cd ~/.local && tar czf /tmp/x.tgz s*"), ProtectKeys},
		{"braces", "Bash", bash("cat ~/.local/state/{x,docket}/keys/hmac.key"), ProtectKeys},
		{"braces in name", "Bash", bash("cat ~/.local/state/dock{e,}t/ke{y,}s/hmac.key"), ProtectKeys},
		{"glob relative", "Bash", bash("cd ~/.local/state && cat */keys/*"), ProtectKeys},
		{"subst echo", "Bash", bash("cat $(echo ~/.local/state/docket)/keys/hmac.key"), ProtectShellState},
		{"subst split", "Bash", bash("cat $(printf %s ~/.local/state/doc; printf ket)/keys/hmac.key"), ProtectKeys},
		{"backticks", "Bash", bash("cat `dirname ~/.local/state/x`/dock?t/keys/hmac.key"), ProtectKeys},
		{"unknown var", "Bash", bash("D=~/.local/state/doc; cat ${D}ket/keys/hmac.key"), ProtectKeys},
		{"unknown var ledger", "Bash", bash("cat $S/docket/ledger/s.jsonl"), ProtectShellState},
		{"unknown var keys", "Bash", bash("cat $S/keys/hmac.key"), ProtectKeys},
		{"var mid word", "Bash", bash("cat x$HOME/.local/state/docket/keys/hmac.key"), ProtectShellState},
		{"python concat", "Bash", bash(`python3 -c "open('` + fs.user + `/.local/state/doc'+'ket/keys/hmac.key').read()"`), ProtectShellState},
		{"python join", "Bash", bash(`python3 -c "import os;print(open(os.path.join(os.environ['HO'+'ME'],'.local','state','doc'+'ket','keys','hm'+'ac.key')).read())"`), ProtectShellState},
		{"python version", "Bash", bash(`python3.12 -c "print(open('` + fs.user + `/.local/sta'+'te/docket/ledger/s.jsonl').read())"`), ProtectShellState},
		{"node env", "Bash", bash(`node -e "console.log(require('fs').readFileSync(process.env.DOCKET_HOME+'/keys/x'))"`), ProtectShellState},
		{"perl ENV", "Bash", bash(`perl -e 'open F, "$ENV{HOME}/.local/state/docket/ledger/s.jsonl"; print <F>'`), ProtectShellState},
		{"ruby", "Bash", bash(`ruby -e 'puts File.read(Dir.home + "/.local/state/" + "doc" + "ket/keys/hm" + "ac.key")'`), ProtectShellState},
		{"python glob", "Bash", bash(`python3 -c "import glob; print(open(glob.glob('/home/*/.local/state/*/keys/*')[0]).read())"`), ProtectShellState},
		{"heredoc", "Bash", bash("python3 <<'EOF'\nprint(open('" + fs.user + "/.local/state/do'+'cket/keys/hm'+'ac.key').read())\nEOF"), ProtectShellState},
		{"here-string", "Bash", bash(`python3 - <<< "print(open('/x/doc'+'ket/ke'+'ys/a'))"`), ProtectShellState},
		{"make the link", "Bash", bash("ln -s $DOCKET_HOME/keys /tmp/k"), ProtectShellState},
		{"make the link by glob", "Bash", bash("ln -s ~/.local/state/dock?t/keys /tmp/k"), ProtectKeys},
		{"Read through link", "Read", map[string]any{"file_path": filepath.Join(link, "hmac.key")}, ProtectKeys},
		{"dotdot after link", "Bash", bash("cat " + subLink + "/../hmac.key"), ProtectKeys},
		{"Read dotdot after link", "Read", map[string]any{"file_path": subLink + "/../hmac.key"}, ProtectKeys},
		{"cat through link", "Bash", bash("cat " + filepath.Join(link, "hmac.key")), ProtectKeys},
		{"Grep through link", "Grep", map[string]any{"pattern": "x", "path": link}, ProtectKeys},
		{"Read ledger via root link", "Read", map[string]any{"file_path": "st/ledger/s.jsonl"}, ProtectStateRead},
		{"Write via root link", "Write", map[string]any{"file_path": filepath.Join(rootLink, "policies", "judges.md"), "content": "mode: read_audit"}, ProtectStateWrite},
		{"Edit via root link", "Edit", map[string]any{"file_path": "st/policies/tools.yaml", "old_string": "a", "new_string": "b"}, ProtectStateWrite},
		{"Glob into keys", "Glob", map[string]any{"pattern": filepath.Join(fs.user, ".local/state/*/keys/*")}, ProtectKeys},
		{"read_many_files through link", "read_many_files", map[string]any{"paths": []any{"README.md", filepath.Join(link, "*")}}, ProtectKeys},
		{"token file", "Read", map[string]any{"file_path": filepath.Join(state, "tokens", "t1")}, ProtectStateRead},
		{"fake docket approves", "Bash", bash("./docket approvals approve apr_1"), ProtectFakeDocket},
		{"fake docket abs", "Bash", bash("/tmp/bin/docket review confirm rev_1 --as instruction"), ProtectFakeDocket},
		{"PATH-shadowed docket", "Bash", bash("PATH=.:$PATH docket approvals approve apr_1"), ProtectFakeDocket},
		{"fake docket reads key", "Bash", bash("./docket x $DOCKET_HOME/keys/hmac.key"), ProtectShellState},
		{"self policy approve", "Bash", bash("docket policy approve --yes"), ProtectSelfApproval},
		{"self policy approve installed", "Bash", bash("/opt/docket/bin/docket policy approve"), ProtectSelfApproval},
		{"patch add into keys", "apply_patch", patch("*** Add File: " + filepath.Join(state, "keys", "x") + "\n+x"), ProtectKeys},
		{"patch relative into ledger", "apply_patch", patch("*** Update File: ../.local/state/docket/ledger/s.jsonl\n@@\n-{}\n+{\"x\":1}"), ProtectStateWrite},
		{"patch move into state", "apply_patch", patch("*** Update File: p.go\n*** Move to: st/policies/judges.md\n@@\n-a\n+b"), ProtectStateWrite},
		{"patch delete via ~", "apply_patch", patch("*** Delete File: ~/.local/state/docket/store.db"), ProtectStateWrite},
		{"curl approvals", "Bash", bash("curl -s -X POST -H 'Authorization: Bearer x' http://127.0.0.1:7420/v1/approvals/apr_1/actions -d '{\"action\":\"approve\"}'"), ProtectSelfApproval},
		{"curl tokens", "Bash", bash("curl -s -X POST -H 'Authorization: Bearer x' http://127.0.0.1:7420/v1/tokens -d '{\"role\":\"admin\",\"name\":\"me\"}'"), ProtectSelfApproval},
		{"wget review", "Bash", bash("wget -qO- http://localhost:7420/v1/review-queue"), ProtectSelfApproval},
		{"python split route", "Bash", bash(`python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:7420/v1/appro'+'vals')"`), ProtectSelfApproval},
		{"cp -r state", "Bash", bash("cp -r ~/.local/state /tmp/x"), ProtectShellState},
		{"tar c state", "Bash", bash("tar c ~/.local/state"), ProtectShellState},
		{"tar -C above root", "Bash", bash("tar -C ~/.local -cf /tmp/x.tar state"), ProtectShellState},
		{"find / exec cat", "Bash", bash("find / -name hmac.key -exec cat {} +"), ProtectDestructive},
		{"rsync state", "Bash", bash("rsync -a ~/.local/state/ /tmp/x"), ProtectShellState},
		{"link above root", "Bash", bash("ln -s ~/.local /tmp/l; cat /tmp/l/state/docket/keys/hmac.key"), ProtectShellState},
		{"codex cmd inline code", "exec_command", map[string]any{"cmd": `python3 -c "open('/x/doc'+'ket/ke'+'ys/a')"`}, ProtectShellState},
		{"codex cmd relative key", "exec_command", map[string]any{"cmd": "cat ../.local/state/docket/keys/hmac.key"}, ProtectKeys},
		{"codex cmd route", "exec_command", map[string]any{"cmd": "curl -X POST http://127.0.0.1:7420/v1/approvals/apr_1/actions"}, ProtectSelfApproval},
		{"codex argv inline code", "shell", map[string]any{"command": []any{"bash", "-lc", `python3 -c "open('/x/doc'+'ket/ke'+'ys/a')"`}}, ProtectShellState},
		{"codex cmd in workdir", "exec_command", map[string]any{"cmd": "cat docket/keys/hmac.key", "workdir": "../.local/state"}, ProtectKeys},
		{"codex argv in workdir", "shell", map[string]any{"command": []any{"cat", "docket/ledger/s.jsonl"}, "workdir": "~/.local/state"}, ProtectShellState},
		{"read_many_files globstar", "read_many_files", map[string]any{"paths": []any{"../**/hmac.key"}}, ProtectKeys},
		{"read_many_files include", "read_many_files", map[string]any{"paths": []any{"."}, "include": []any{"~/.local/state/docket/keys/*"}}, ProtectKeys},
		{"read_many_files dir above root", "read_many_files", map[string]any{"paths": []any{"../.local"}}, ProtectKeys},
		{"WebFetch route", "WebFetch", map[string]any{"url": "http://[::1]:7420/v1/review-queue?status=pending", "prompt": "x"}, ProtectSelfApproval},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, d := e.Decide(context.Background(), fs.ev(tc.tool, tc.input))
			if got := builtinRule(d); got != tc.rule || a.Decision != hooks.Deny {
				t.Errorf("decision %q rule %q, want deny by %s (reason %q)", a.Decision, got, tc.rule, d.Reason)
			}
		})
	}
}

// A search given no directory searches the working directory: in a
// session started in the user's home it would read the keys.
func TestSearchInHomeCwd(t *testing.T) {
	fs := newRealFS(t)
	e := fs.engine(t, "")
	for _, tc := range []struct {
		name, tool string
		input      any
		deny       bool
	}{
		{"Grep no path", "Grep", map[string]any{"pattern": "x"}, true},
		{"Glob relative", "Glob", map[string]any{"pattern": "**/hmac.key"}, true},
		{"search_file_content no dir", "search_file_content", map[string]any{"pattern": "x"}, true},
		{"read_many_files globstar", "read_many_files", map[string]any{"paths": []any{"**/hmac.key"}}, true},
		{"rg no path", "Bash", map[string]any{"command": "rg secret"}, true},
		{"grep -r no path", "Bash", map[string]any{"command": "grep -rn secret"}, true},
		{"find no path", "Bash", map[string]any{"command": "find -name hmac.key -exec cat {} +"}, true},
		{"Grep in project", "Grep", map[string]any{"pattern": "x", "path": "proj"}, false},
		{"grep stdin", "Bash", map[string]any{"command": "grep secret < proj/main.go"}, false},
		{"grep no -r", "Bash", map[string]any{"command": "grep secret"}, false},
		{"rg in project", "Bash", map[string]any{"command": "rg secret proj"}, false},
		{"rg on a pipe", "Bash", map[string]any{"command": "git log --oneline | rg fix"}, false},
		{"ack on a pipe", "Bash", map[string]any{"command": "ps aux | ack docket"}, false},
		{"grep -r on a pipe", "Bash", map[string]any{"command": "echo x | grep -rn secret"}, true},
		{"fd on a pipe", "Bash", map[string]any{"command": "echo x | fd hmac"}, true},
		{"rg after a pipe, then alone", "Bash", map[string]any{"command": "echo x | rg a; rg secret"}, true},
		{"rg on a pipe with a path", "Bash", map[string]any{"command": "echo x | rg secret ."}, true},
		{"rg --files on a pipe lists the directory", "Bash", map[string]any{"command": "echo x | rg --files -uu"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := fs.ev(tc.tool, tc.input)
			ev.Cwd = fs.user
			_, d := e.Decide(context.Background(), ev)
			if got := builtinRule(d) != ""; got != tc.deny {
				t.Errorf("denied by a protection: %v, want %v (%v %q)", got, tc.deny, d.RuleIDs, d.Reason)
			}
		})
	}
}

// The resolution must not deny ordinary work.
func TestResolveAllows(t *testing.T) {
	fs := newRealFS(t)
	e := fs.engine(t, "")
	if err := os.Symlink(filepath.Join(fs.proj, "main.go"), filepath.Join(fs.proj, "link.go")); err != nil {
		t.Fatal(err)
	}
	bash := func(c string) map[string]any { return map[string]any{"command": c} }
	for _, tc := range []struct {
		name, tool string
		input      any
	}{
		{"ls glob", "Bash", bash("ls *.go")},
		{"subst toplevel", "Bash", bash("cat $(git rev-parse --show-toplevel)/go.mod")},
		{"go list", "Bash", bash("go test $(go list ./...)")},
		{"python hmac module", "Bash", bash(`python3 -c "import hmac, hashlib; print(hmac.new(b'k', b'm', hashlib.sha256).hexdigest())"`)},
		{"python json", "Bash", bash(`python3 -c "import json,sys; print(json.load(sys.stdin)['a'])" < data.json`)},
		{"docket validate", "Bash", bash("docket validate --claim done --validator go_test_pass --args '{}'")},
		{"installed docket", "Bash", bash("/opt/docket/bin/docket verify --session s1")},
		{"docket policy status", "Bash", bash("docket policy status")},
		{"echo PATH", "Bash", bash("echo $PATH")},
		{"home readme", "Bash", bash("cat $HOME/proj/main.go")},
		{"grep route names", "Bash", bash(`grep -rn "/v1/approvals" server/`)},
		{"curl elsewhere", "Bash", bash("curl -s https://example.com/v1/items")},
		{"patch in project", "apply_patch", map[string]any{"command": "*** Begin Patch\n*** Update File: p.go\n@@\n-a\n+b\n*** End Patch\n"}},
		{"Read symlink in project", "Read", map[string]any{"file_path": "link.go"}},
		{"Glob project", "Glob", map[string]any{"pattern": "**/*.go"}},
		{"find project", "Bash", bash("find . -name '*.go' -newer main.go")},
		{"braces in project", "Bash", bash("cp main.{go,bak}")},
		{"recursive glob in project", "Bash", bash("grep -rn TODO *.go internal/*")},
		{"read_many_files project glob", "read_many_files", map[string]any{"paths": []any{"**/*.go", "."}, "include": []any{"*.md"}}},
		{"codex cmd in project", "exec_command", map[string]any{"cmd": "cat main.go && ls -R ."}},
		{"codex cmd in project workdir", "exec_command", map[string]any{"cmd": "cat p.go; ls", "workdir": fs.proj}},
		{"link in project", "Bash", bash("ln -s main.go alias.go")},
		{"json body", "Bash", bash(`curl -s -d '{"a":[1,2],"b":{"c":"d"}}' https://example.com/x`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := e.Decide(context.Background(), fs.ev(tc.tool, tc.input))
			if r := builtinRule(d); r != "" {
				t.Errorf("denied by %s: %q", r, d.Reason)
			}
		})
	}
}

// judges.md mode: read_audit (or a monitor registry entry) records
// decisions without enforcing them, but never lifts the protections.
func TestProtectionsHoldInReadAudit(t *testing.T) {
	jsrc := policies.Source{Name: policies.JudgesFile, Origin: "t", Data: []byte("---\nschema: docket.judges.v1\nmode: read_audit\n---\n")}
	j, err := policies.ResolveJudges(jsrc)
	if err != nil {
		t.Fatal(err)
	}
	base := defaultSet(t)
	set := NewPolicySet(base.Tools, base.Sources[0], j)
	e, _ := testEngine(t, set)
	a, d := e.Decide(context.Background(), ev("Bash", map[string]any{"command": "cat $DOCKET_HOME/keys/hmac.key"}))
	if a.Decision != hooks.Deny || d.EnforcementAction != EnforceDeny {
		t.Errorf("read_audit let a key read through: %q %s", a.Decision, d.EnforcementAction)
	}
	a, d = e.Decide(context.Background(), ev("Read", map[string]any{"file_path": "/home/u/.local/state/docket/ledger/s1.jsonl"}))
	if a.Decision != hooks.Deny {
		t.Errorf("read_audit let a ledger read through: %q %s", a.Decision, d.EnforcementAction)
	}
	// a policy rule (not a protection) is audited, not enforced
	a, d = e.Decide(context.Background(), ev("Bash", map[string]any{"command": "git push origin main"}))
	if a.Decision != "" || d.EnforcementAction != EnforceAuditBypass {
		t.Errorf("read_audit enforced a policy rule: %q %s", a.Decision, d.EnforcementAction)
	}
}

// An unapproved policy: side-effecting calls are denied with the fix;
// read-only calls still run.
func TestUnapprovedPolicyDenies(t *testing.T) {
	fs := newRealFS(t)
	e := fs.engine(t, "judges.md changed")
	a, d := e.Decide(context.Background(), fs.ev("Bash", map[string]any{"command": "go test ./..."}))
	if a.Decision != hooks.Deny || builtinRule(d) != ProtectUnapproved || !strings.Contains(a.Reason, "docket policy approve") {
		t.Errorf("unapproved policy: %q %v %q", a.Decision, d.RuleIDs, a.Reason)
	}
	a, d = e.Decide(context.Background(), fs.ev("Write", map[string]any{"file_path": filepath.Join(fs.proj, "x.go"), "content": "x"}))
	if a.Decision != hooks.Deny || builtinRule(d) != ProtectUnapproved {
		t.Errorf("unapproved policy let a write through: %q %v", a.Decision, d.RuleIDs)
	}
	// a read or search by any runtime's name (Cursor's list_dir and
	// codebase_search, Gemini CLI's read_file) still runs; a fetch does not
	for _, tool := range []string{"Read", "read_file", "list_dir", "codebase_search", "Grep"} {
		ev := fs.ev(tool, map[string]any{"file_path": filepath.Join(fs.proj, "main.go")})
		if a, d = e.Decide(context.Background(), ev); a.Decision == hooks.Deny {
			t.Errorf("unapproved policy denied a read by %s: %q", tool, d.Reason)
		}
	}
	a, d = e.Decide(context.Background(), fs.ev("web_fetch", map[string]any{"prompt": "read https://example.org/"}))
	if a.Decision != hooks.Deny || builtinRule(d) != ProtectUnapproved {
		t.Errorf("unapproved policy let a fetch through: %q %v", a.Decision, d.RuleIDs)
	}
}

func TestPatchPaths(t *testing.T) {
	b, err := os.ReadFile("testdata/captured/codex-PreToolUse-apply_patch.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		ToolInput struct{ Command string } `json:"tool_input"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	if got := PatchPaths(p.ToolInput.Command); len(got) != 1 || got[0] != "p.go" {
		t.Errorf("captured patch paths %q, want [p.go]", got)
	}
	got := PatchPaths("*** Begin Patch\r\n*** Add File: a/b.go\r\n+x\r\n*** Update File: c.go\n*** Move to: d.go\n*** Delete File: e.go\n*** End Patch")
	if strings.Join(got, ",") != "a/b.go,c.go,d.go,e.go" {
		t.Errorf("paths %q", got)
	}
}

// Gemini's run_shell_command (captured from the real CLI) read the key
// through a relative path while the tool was unknown to the registry:
// a command line is protected as a shell line whatever the tool's name.
func TestUnknownShellToolProtected(t *testing.T) {
	b, err := os.ReadFile("testdata/captured/gemini-BeforeTool-relative-key-read-allowed.json")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := hooks.Decode(b, "")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := home.At("/home/dev/runs/g4/dh")
	e := &Engine{Home: h, Protector: &Protector{Home: h, UserHome: "/home/dev"}}
	e.SetPolicy(defaultSet(t))
	a, d := e.Decide(context.Background(), ev)
	if a.Decision != hooks.Deny || builtinRule(d) != ProtectKeys {
		t.Errorf("%s %q: %q %v %q", ev.ToolName, ev.ToolInput, a.Decision, d.RuleIDs, d.Reason)
	}
}

// An unapproved tools.yaml that calls everything read-only does not
// open the door: read-only is decided without the registry.
func TestUnapprovedRegistryNotTrusted(t *testing.T) {
	tools, err := policies.ParseTools(policies.Source{Origin: "t", Data: []byte(`schema: docket.tools.v1
tools:
  - {tool: "*", risk: read_only, execution: auto}
`)})
	if err != nil {
		t.Fatal(err)
	}
	fs := newRealFS(t)
	base := defaultSet(t)
	set := NewPolicySet(tools, base.Sources[0], base.Judges)
	set.Unapproved = "policies/tools.yaml changed"
	e := &Engine{Home: fs.h}
	e.SetPolicy(set)
	for _, tc := range []struct {
		tool  string
		input any
		deny  bool
	}{
		{"Write", map[string]any{"file_path": filepath.Join(fs.proj, "x.go"), "content": "x"}, true},
		{"Bash", map[string]any{"command": "git push origin main"}, true},
		{"mcp__slack__post", map[string]any{"text": "hi"}, true},
		{"Bash", map[string]any{"command": "ls -la"}, false},
		{"Read", map[string]any{"file_path": filepath.Join(fs.proj, "main.go")}, false},
	} {
		a, d := e.Decide(context.Background(), fs.ev(tc.tool, tc.input))
		if (a.Decision == hooks.Deny) != tc.deny || tc.deny && builtinRule(d) != ProtectUnapproved {
			t.Errorf("%s %v: %q %v", tc.tool, tc.input, a.Decision, d.RuleIDs)
		}
	}
}

// The resolver never panics and never allows a line that names the key
// file literally.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"cat ~/.local/state/dock?t/keys/*", "cd $(x) && cat a/{b,c}", "python3 -c \"'doc'+'ket'\"", "*** Begin Patch\n*** Add File: a\n", "${A:-$(b)}`c`[!x]", "{{{,}}}"} {
		f.Add(s)
	}
	h, _ := home.At("/home/u/.local/state/docket")
	pr := Protector{Home: h, UserHome: "/home/u", XDGState: "/home/u/.local/state"}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 2000 {
			return
		}
		in, _ := json.Marshal(map[string]string{"command": line})
		cc := ClassifyCommand(line, ShellContext{Cwd: "/home/u/proj"})
		p := &ActionProposal{Input: in, Context: ProposalContext{Cwd: "/home/u/proj", Shell: &cc}}
		pr.Check(p)
		braceExpand(line, 64)
		PatchPaths(line)
		if v := pr.Check(&ActionProposal{Input: mustJSON(map[string]string{"command": "cat " + h.HMACKeyPath() + " " + line}), Context: ProposalContext{Cwd: "/home/u/proj", Shell: ptr(ClassifyCommand("cat "+h.HMACKeyPath()+" "+line, ShellContext{}))}}); v == nil && !strings.ContainsAny(line, "'\"\\`#;&|()<>\n") {
			t.Errorf("key read allowed with suffix %q", line)
		}
	})
}

func mustJSON(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

func ptr[T any](v T) *T { return &v }

func TestRealPath(t *testing.T) {
	tmp := t.TempDir()
	tmp = realPath(tmp)
	os.MkdirAll(filepath.Join(tmp, "state", "keys", "sub"), 0o700)
	os.Symlink(filepath.Join(tmp, "state", "keys", "sub"), filepath.Join(tmp, "l"))
	os.Symlink("state/keys", filepath.Join(tmp, "rel"))
	os.Symlink("loop", filepath.Join(tmp, "loop"))
	for _, tc := range []struct{ in, want string }{
		{filepath.Join(tmp, "l", "x"), filepath.Join(tmp, "state", "keys", "sub", "x")},
		{tmp + "/l/../hmac.key", filepath.Join(tmp, "state", "keys", "hmac.key")},
		{filepath.Join(tmp, "rel", "hmac.key"), filepath.Join(tmp, "state", "keys", "hmac.key")},
		{filepath.Join(tmp, "missing", "a", "b"), filepath.Join(tmp, "missing", "a", "b")},
		{filepath.Join(tmp, "loop", "x"), filepath.Join(tmp, "loop", "x")},
		{"relative/x", "relative/x"},
	} {
		if got := realPath(tc.in); got != tc.want {
			t.Errorf("realPath(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// A long-running engine (RecheckApproval) follows approvals and changes
// made after it loaded its policy.
func TestRecheckApproval(t *testing.T) {
	fs := newRealFS(t)
	if err := os.WriteFile(fs.h.HMACKeyPath(), []byte("k"), 0o400); err != nil {
		t.Fatal(err)
	}
	e := fs.engine(t, "")
	e.RecheckApproval = true
	build := fs.ev("Bash", map[string]any{"command": "go build ./..."})
	if _, d := e.Decide(context.Background(), build); builtinRule(d) != "" {
		t.Fatalf("approved defaults denied: %v", d.RuleIDs)
	}
	judges := filepath.Join(fs.h.PoliciesDir(), policies.JudgesFile)
	if err := os.WriteFile(judges, []byte("---\nschema: docket.judges.v1\nmode: read_audit\n---\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if a, d := e.Decide(context.Background(), build); a.Decision != hooks.Deny || builtinRule(d) != ProtectUnapproved {
		t.Fatalf("changed policy not noticed: %q %v", a.Decision, d.RuleIDs)
	}
	if _, err := policies.Approve(fs.h, "ana", time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, d := e.Decide(context.Background(), build); builtinRule(d) != "" {
		t.Errorf("approval not noticed: %v", d.RuleIDs)
	}
}

// git add -A / git add DIR / git stash -u copy untracked files into the
// repository's objects: over the state root (a home kept in git) they
// would hand the keys to any later `git show`.
func TestGitStagingStateRoot(t *testing.T) {
	fs := newRealFS(t)
	e := fs.engine(t, "")
	mkRepo := func(dir string) {
		if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mkRepo(fs.user) // dotfiles: the home directory is a repository
	other := filepath.Join(fs.user, "other")
	mkRepo(other)
	for _, tc := range []struct {
		name, cwd, command string
		deny               bool
	}{
		{"add -A in home", fs.user, "git add -A", true},
		{"add . in home", fs.user, "git add .", true},
		{"add --all from a subdirectory of the home repo", fs.proj, "git add --all", true},
		{"cd home then add", fs.proj, "cd ~ && git add -A && git commit -m wip", true},
		{"-C home", other, "git -C ~ add -A", true},
		{"add the state dir", fs.proj, "git add ~/.local", true},
		{"stash -u in home", fs.user, "git stash -u", true},
		{"stash --all in home", fs.user, "git stash push --all", true},
		{"pathspec magic for the top", fs.proj, "git add :/", true},
		{"pathspec magic, long form", fs.proj, "git add ':(top)'", true},
		{"add -- then .", fs.user, "git add -- .", true},
		{"add a file", fs.proj, "git add main.go p.go", false},
		{"add . in a subdirectory", fs.proj, "git add .", false},
		{"add -A in its own repository", other, "git add -A", false},
		{"stash in home", fs.user, "git stash", false},
		{"commit -a in home", fs.user, "git commit -am wip", false},
		{"status in home", fs.user, "git status", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := fs.ev("Bash", map[string]any{"command": tc.command})
			ev.Cwd = tc.cwd
			_, d := e.Decide(context.Background(), ev)
			if got := builtinRule(d) != ""; got != tc.deny {
				t.Errorf("denied by a protection: %v, want %v (%v %q)", got, tc.deny, d.RuleIDs, d.Reason)
			}
		})
	}
}
