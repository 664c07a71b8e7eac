package judge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

func defaultSet(t testing.TB) *PolicySet {
	t.Helper()
	h, _ := home.At(t.TempDir())
	set, err := LoadPolicySet(h)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func testEngine(t testing.TB, set *PolicySet) (*Engine, home.Home) {
	h, _ := home.At("/home/u/.local/state/docket")
	e := &Engine{Home: h, Protector: &Protector{Home: h, UserHome: "/home/u", XDGState: "/home/u/.local/state"}}
	e.SetPolicy(set)
	return e, h
}

func ev(tool string, input any) *hooks.Event {
	b, _ := json.Marshal(input)
	return &hooks.Event{Runtime: hooks.Claude, Name: hooks.PreToolUse, SessionID: "s1", Cwd: "/home/u/proj", ToolName: tool, ToolInput: b, ToolUseID: "toolu_1"}
}

func TestBuiltinProtections(t *testing.T) {
	e, _ := testEngine(t, defaultSet(t))
	tests := []struct {
		name  string
		tool  string
		input any
		rule  string // "" means not blocked by a protection
	}{
		{"read hmac key", "Read", map[string]any{"file_path": "/home/u/.local/state/docket/keys/hmac.key"}, ProtectKeys},
		{"read key via dotdot", "Read", map[string]any{"file_path": "/home/u/proj/../.local/state/docket/keys/../keys/hmac.key"}, ProtectKeys},
		{"read ledger", "Read", map[string]any{"file_path": "/home/u/.local/state/docket/ledger/s1.jsonl"}, ProtectStateRead},
		{"read policies ok", "Read", map[string]any{"file_path": "/home/u/.local/state/docket/policies/tools.yaml"}, ""},
		{"write policies", "Write", map[string]any{"file_path": "/home/u/.local/state/docket/policies/tools.yaml", "content": "x"}, ProtectStateWrite},
		{"edit ledger", "Edit", map[string]any{"file_path": "/home/u/.local/state/docket/ledger/s1.jsonl", "old_string": "a", "new_string": "b"}, ProtectStateWrite},
		{"relative write", "Write", map[string]any{"file_path": "../.local/state/docket/store.db", "content": "x"}, ProtectStateWrite},
		{"grep home", "Grep", map[string]any{"pattern": "key", "path": "/home/u"}, ProtectKeys},
		{"grep project ok", "Grep", map[string]any{"pattern": "key", "path": "/home/u/proj"}, ""},
		{"cat key", "Bash", map[string]any{"command": "cat ~/.local/state/docket/keys/hmac.key"}, ProtectShellState},
		{"cat key via $HOME", "Bash", map[string]any{"command": "cat $HOME/.local/state/docket/keys/hmac.key"}, ProtectShellState},
		{"DOCKET_HOME var", "Bash", map[string]any{"command": "echo x >> \"$DOCKET_HOME/ledger/s1.jsonl\""}, ProtectShellState},
		{"XDG var", "Bash", map[string]any{"command": "rm ${XDG_STATE_HOME}/docket/store.db"}, ProtectShellState},
		{"cd then relative", "Bash", map[string]any{"command": "cd ~/.local/state && rm -rf docket"}, ProtectShellState},
		{"relative dotdot", "Bash", map[string]any{"command": "cp x ../.local/state/docket/ledger/s1.jsonl"}, ProtectShellState},
		{"glob over state", "Bash", map[string]any{"command": "rm -rf ~/.local/*/docket"}, ProtectShellState},
		{"python reads key", "Bash", map[string]any{"command": "python3 -c \"print(open('/home/u/.local/state/docket/keys/hmac.key').read())\""}, ProtectShellState},
		// a pattern in the code that names the key without a protected word
		{"python globs key", "Bash", map[string]any{"command": `python3 -c "import glob; print(open(glob.glob(\"/home/*/.*/st*/d*/k*/h*\")[0]).read())"`}, ProtectShellState},
		{"node globs key", "Bash", map[string]any{"command": "node -e \"require('fs').readFileSync(require('glob').sync('/home/u/.l*/s*/d*/k*/h*')[0])\""}, ProtectShellState},
		// a container reads all it is given: a home mounted in reaches the keys
		{"docker mounts home", "Bash", map[string]any{"command": `docker run --rm -v $HOME:/h alpine sh -c 'cat /h/.*/*/d*/k*/h*'`}, ProtectShellState},
		{"docker mounts ~", "Bash", map[string]any{"command": `docker run --rm -v ~:/h:ro alpine ls /h`}, ProtectShellState},
		{"podman --mount /home", "Bash", map[string]any{"command": `podman run --rm --mount type=bind,source=/home,target=/x alpine ls /x`}, ProtectShellState},
		{"docker mounts the project", "Bash", map[string]any{"command": `docker run --rm -v "$PWD":/src -v ./out:/out -v gocache:/root/.cache golang:1.22 go test ./...`}, ""},
		{"python reads a project file", "Bash", map[string]any{"command": "python3 -c \"print(open('docs/a.md').read(), open('/etc/hosts').read())\""}, ""},
		{"redirect into state", "Bash", map[string]any{"command": "echo '{}' > /home/u/.local/state/docket/run/x"}, ProtectShellState},
		{"input from key", "Bash", map[string]any{"command": "base64 < /home/u/.local/state/docket/keys/hmac.key"}, ProtectShellState},
		{"docket cli ok", "Bash", map[string]any{"command": "docket verify --session s1"}, ""},
		{"forge ledger entry", "Bash", map[string]any{"command": "docket-ledger < fake.json"}, ProtectHookBinary},
		{"run the gate", "Bash", map[string]any{"command": "echo {} | /usr/local/bin/docket-gate"}, ProtectHookBinary},
		{"rm -rf /", "Bash", map[string]any{"command": "rm -rf /"}, ProtectDestructive},
		{"rm -rf ~", "Bash", map[string]any{"command": "rm -rf ~"}, ProtectDestructive},
		{"rm -rf $HOME/*", "Bash", map[string]any{"command": "rm -rf $HOME/*"}, ProtectDestructive},
		{"sudo rm -rf /usr", "Bash", map[string]any{"command": "sudo rm -rf /usr"}, ProtectDestructive},
		{"chmod -R /etc", "Bash", map[string]any{"command": "chmod -R 777 /etc"}, ProtectDestructive},
		{"recursive glob above root", "Bash", map[string]any{"command": "cp -r ~/.local/st* /tmp/x"}, ProtectShellState},
		{"grep -r home", "Bash", map[string]any{"command": "grep -r secret ~"}, ProtectShellState},
		{"rm -rf build ok", "Bash", map[string]any{"command": "rm -rf ./build"}, ""},
		{"ls home ok", "Bash", map[string]any{"command": "ls ~"}, ""},
		{"mcp names state", "mcp__files__read", map[string]any{"path": "/home/u/.local/state/docket/keys/hmac.key"}, ProtectKeys},
		{"mcp names state root", "mcp__files__read", map[string]any{"query": "see /home/u/.local/state/docket/ledger"}, ProtectStateWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, d := e.Decide(context.Background(), ev(tc.tool, tc.input))
			protected := false
			for _, id := range d.RuleIDs {
				if strings.HasPrefix(id, "builtin:") {
					protected = true
					if id != tc.rule {
						t.Errorf("rule %s, want %s", id, tc.rule)
					}
				}
			}
			if tc.rule == "" && protected {
				t.Errorf("blocked by a protection: %v %q", d.RuleIDs, d.Reason)
			}
			if tc.rule != "" && (!protected || a.Decision != hooks.Deny) {
				t.Errorf("not denied by a protection: %q %v %q", a.Decision, d.RuleIDs, d.Reason)
			}
		})
	}
}

// A policy cannot remove the protections: even an allow-everything
// registry in read-audit-free enforce mode denies.
func TestProtectionsSurvivePolicy(t *testing.T) {
	tools, err := policies.ParseTools(policies.Source{Origin: "t", Data: []byte(`schema: docket.tools.v1
tools:
  - {tool: "*", risk: read_only, execution: auto}
rules:
  - {id: allow-all, effect: allow, tool: "*"}
`)})
	if err != nil {
		t.Fatal(err)
	}
	set := defaultSet(t)
	set = NewPolicySet(tools, set.Sources[0], set.Judges)
	e, _ := testEngine(t, set)
	a, d := e.Decide(context.Background(), ev("Read", map[string]any{"file_path": "/home/u/.local/state/docket/keys/checkpoint.key"}))
	if a.Decision != hooks.Deny || d.RuleIDs[0] != ProtectKeys {
		t.Errorf("allow-all policy let a key read through: %q %v", a.Decision, d.RuleIDs)
	}
	a, _ = e.Decide(context.Background(), ev("Read", map[string]any{"file_path": "/home/u/proj/main.go"}))
	if a.Decision != hooks.Allow {
		t.Errorf("allow rule did not auto-approve: %q", a.Decision)
	}
}

func TestPolicyJudgeRules(t *testing.T) {
	e, _ := testEngine(t, defaultSet(t))
	tests := []struct {
		name     string
		tool     string
		input    any
		decision string
		action   string
	}{
		{"safe edit", "Edit", map[string]any{"file_path": "/home/u/proj/main.go", "old_string": "a", "new_string": "b"}, "", EnforceNone},
		{"write outside", "Write", map[string]any{"file_path": "/etc/passwd", "content": "x"}, hooks.Deny, EnforceDeny},
		{"write tmp", "Write", map[string]any{"file_path": "/tmp/x.txt", "content": "x"}, "", EnforceNone},
		{"ssh key", "Read", map[string]any{"file_path": "/home/u/.ssh/id_ed25519"}, hooks.Deny, EnforceDeny},
		{"env file", "Read", map[string]any{"file_path": "/home/u/proj/.env"}, hooks.Ask, EnforceAsk},
		{"push main", "Bash", map[string]any{"command": "git push origin main"}, hooks.Ask, EnforceAsk},
		{"force push revised", "Bash", map[string]any{"command": "git push --force origin feat"}, hooks.Ask, EnforceAsk},
		{"no-verify", "Bash", map[string]any{"command": "git commit --no-verify -m x"}, hooks.Ask, EnforceAsk},
		{"go test", "Bash", map[string]any{"command": "go test ./..."}, "", EnforceNone},
		{"unknown mcp", "mcp__weather__forecast", map[string]any{"city": "Oslo"}, "", EnforceNone},
		{"mcp message", "mcp__slack__post_message", map[string]any{"text": "hi"}, hooks.Ask, EnforceAsk},
		{"mcp approval", "mcp__github__create_pull_request_review", map[string]any{"pullNumber": 7, "event": "APPROVE"}, hooks.Deny, EnforceDeny},
		{"mcp delete", "mcp__attio__delete-record", map[string]any{"id": "1"}, hooks.Ask, EnforceAsk},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, d := e.Decide(context.Background(), ev(tc.tool, tc.input))
			if a.Decision != tc.decision || d.EnforcementAction != tc.action {
				t.Errorf("%q / %s, want %q / %s (reason %q)", a.Decision, d.EnforcementAction, tc.decision, tc.action, d.Reason)
			}
			if a.Decision == hooks.Deny && a.Reason == "" {
				t.Error("deny without a reason")
			}
		})
	}
	// the force push comes back with the mechanical amendment
	a, d := e.Decide(context.Background(), ev("Bash", map[string]any{"command": "git push --force origin feat"}))
	if !strings.Contains(string(a.UpdatedInput), "--force-with-lease") || d.AmendedRiskClass != policies.HighRisk {
		t.Errorf("force push: input %s class %s", a.UpdatedInput, d.AmendedRiskClass)
	}
}

func TestRegistryModes(t *testing.T) {
	tools, err := policies.ParseTools(policies.Source{Origin: "t", Data: []byte(`schema: docket.tools.v1
tools:
  - {tool: Nope, risk: read_only, execution: disabled}
  - {tool: Review, risk: read_only, execution: review}
  - {tool: Watch, risk: high_risk, validation: monitor}
  - {tool: Builder, risk: read_only, agents: [builder]}
`)})
	if err != nil {
		t.Fatal(err)
	}
	base := defaultSet(t)
	e, _ := testEngine(t, NewPolicySet(tools, base.Sources[0], base.Judges))
	for _, tc := range []struct {
		tool, agent, decision, action string
	}{
		{"Nope", "", hooks.Deny, EnforceDeny},
		{"Review", "", hooks.Ask, EnforceAsk},
		{"Watch", "", "", EnforceAuditBypass},
		{"Builder", "", hooks.Deny, EnforceDeny},
		{"Builder", "builder", "", EnforceNone},
	} {
		x := ev(tc.tool, map[string]any{})
		x.AgentType = tc.agent
		a, d := e.Decide(context.Background(), x)
		if a.Decision != tc.decision || d.EnforcementAction != tc.action {
			t.Errorf("%s/%s: %q %s, want %q %s", tc.tool, tc.agent, a.Decision, d.EnforcementAction, tc.decision, tc.action)
		}
	}
}
