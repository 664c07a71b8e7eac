package install

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
)

// codexOracleHooks is a hooks.json whose hashes Codex CLI 0.169.0 itself
// reported (`codex app-server`, hooks/list, for the project /tmp/cx/proj2
// holding this file as .codex/hooks.json), in codexOracle. It covers
// shell quotes, backslashes, tabs, non-ASCII and U+2028, HTML
// characters, a control character, async, statusMessage, an unset and a
// zero timeout, and matchers on events that do and do not use them.
const codexOracleHooks = `{
  "hooks": {
    "PreToolUse": [
      {"matcher": "*", "hooks": [{"type": "command", "command": "'/opt/docket bin/docket-judge' --runtime codex", "timeout": 145}]},
      {"matcher": "Bash|apply_patch", "hooks": [{"type": "command", "command": "echo \"q\" \\\\ back\ttab é ☃ \u2028 <&> 😀", "timeout": 7, "async": true, "statusMessage": "checking…"}]}
    ],
    "PostToolUse": [{"hooks": [{"type": "command", "command": "/x/docket-ledger --runtime codex"}]}],
    "SubagentStop": [{"matcher": "x", "hooks": [{"type": "command", "command": "/x/docket-gate --runtime codex --timeout 12s", "timeout": 15}]}],
    "Stop": [{"matcher": "ignored", "hooks": [
      {"type": "command", "command": "/x/docket-gate --runtime codex --timeout 12s", "timeout": 15},
      {"type": "command", "command": "ctl\u0001char", "timeout": 0}
    ]}]
  }
}`

var codexOracle = []struct{ key, hash string }{
	{"/tmp/cx/proj2/.codex/hooks.json:pre_tool_use:0:0", "sha256:5b615152f20c95a6dfb635ca43dbff66a848353251abdb50dc8629969681f538"},
	{"/tmp/cx/proj2/.codex/hooks.json:pre_tool_use:1:0", "sha256:1ae45646e9e0ac5edcc7929547ae57d9f4ec4db4137d648d6dcf5699862d835c"},
	{"/tmp/cx/proj2/.codex/hooks.json:post_tool_use:0:0", "sha256:6c652c186bc7151b9e652bf2c11af091f2b83e218c570c5b5e4785d350a1c6f6"},
	{"/tmp/cx/proj2/.codex/hooks.json:subagent_stop:0:0", "sha256:4c8389dd0f82bf57de095d99fa683e27420e7cce042cc7c55f7f4c463d33fd3f"},
	{"/tmp/cx/proj2/.codex/hooks.json:stop:0:0", "sha256:eb5c49bfb6283c52c448c7734b7f18a861b00a8c8074a3708e026d15d800df5a"},
	{"/tmp/cx/proj2/.codex/hooks.json:stop:0:1", "sha256:fa474fca74ed9ebfd1432b460bb04f988d5d57b3ad9875c206145d93f0911e2f"},
}

func TestCodexHookHash(t *testing.T) {
	hs, err := CodexHandlers([]byte(codexOracleHooks))
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != len(codexOracle) {
		t.Fatalf("%d handlers, want %d", len(hs), len(codexOracle))
	}
	src := "/tmp/cx/proj2/.codex/hooks.json"
	for i, h := range hs {
		key := src + ":" + codexEventLabels[h.Event] + ":" + itoa(h.Group) + ":" + itoa(h.Index)
		if key != codexOracle[i].key {
			t.Errorf("handler %d: key %s, want %s", i, key, codexOracle[i].key)
		}
		if got := CodexHookHash(h); got != codexOracle[i].hash {
			t.Errorf("%s: hash %s, want %s", key, got, codexOracle[i].hash)
		}
	}
	// docket's own entries only, keyed by the file's path
	es, err := CodexTrustEntries(src, []byte(codexOracleHooks))
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 2, 3, 4} // judge, ledger, gate (SubagentStop), gate (Stop)
	if len(es) != len(want) {
		t.Fatalf("entries %+v", es)
	}
	for i, w := range want {
		if es[i].Key != codexOracle[w].key || es[i].Hash != codexOracle[w].hash {
			t.Errorf("entry %d = %+v, want %+v", i, es[i], codexOracle[w])
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func codexSetup(t *testing.T, scope Scope) (Options, string, string) {
	t.Helper()
	o := opts(t, hooks.Codex, scope)
	o.BinDir = filepath.Join(filepath.Dir(o.HomeDir), "bin")
	codexHome := filepath.Join(o.HomeDir, ".codex")
	t.Setenv("CODEX_HOME", codexHome)
	state := filepath.Join(filepath.Dir(o.HomeDir), "state")
	return o, filepath.Join(codexHome, "config.toml"), state
}

func codexPlan(t *testing.T, o Options, cfg, state string, trustProject bool) *CodexPlan {
	t.Helper()
	c := install(t, o)
	b, err := os.ReadFile(c.Path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanCodexConfig(CodexOptions{ConfigPath: cfg, Hooks: []CodexHooksFile{{c.Path, b}}, ProjectDir: o.ProjectDir, TrustProject: trustProject, StateRoot: state})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCodexConfigInstallUninstall(t *testing.T) {
	const userCfg = "model = \"gpt-5.5\"\n\n[projects.\"/elsewhere\"]\ntrust_level = \"trusted\"\n\n[hooks.state.\"/other/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:abc\"\n"
	for _, tc := range []struct {
		name  string
		old   string // "" for no file
		scope Scope
		trust bool
	}{
		{"new file, project", "", Project, true},
		{"user file, project", userCfg, Project, false},
		{"user file without final newline", strings.TrimSuffix(userCfg, "\n"), User, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, cfg, state := codexSetup(t, tc.scope)
			if tc.old != "" {
				os.MkdirAll(filepath.Dir(cfg), 0o700)
				os.WriteFile(cfg, []byte(tc.old), 0o600)
			}
			hooksPath, _ := SettingsPath(hooks.Codex, tc.scope, o.HomeDir, o.ProjectDir)
			project := o.ProjectDir
			if tc.scope == User {
				project = ""
			}
			// before: doctor reports Codex would run none of docket's hooks
			fakeBinaries(t, o.BinDir)
			p := codexPlan(t, o, cfg, state, tc.trust)
			hb, _ := os.ReadFile(hooksPath)
			if probs, _, _ := CodexProblems(cfg, hooksPath, hb, project, state); len(probs) == 0 {
				t.Fatal("no problem reported before the trust is written")
			}
			if !p.Change.Changed() {
				t.Fatal("nothing to write")
			}
			if _, err := Apply(p.Change, time.Now()); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(cfg)
			if !strings.HasPrefix(string(b), tc.old) {
				t.Errorf("the user's config changed:\n%s", b)
			}
			probs, warns, _ := CodexProblems(cfg, hooksPath, hb, project, state)
			wantProbs := 0
			if tc.scope == Project && !tc.trust {
				wantProbs = 1 // the project's trust is the user's to give
				if len(p.Notes) != 0 {
					t.Errorf("notes %q", p.Notes)
				}
			}
			if len(probs) != wantProbs || len(warns) != 0 {
				t.Errorf("after install: problems %q warnings %q\n%s", probs, warns, b)
			}
			if wantProbs == 1 && !strings.Contains(probs[0], "not trusted") {
				t.Errorf("problem %q", probs[0])
			}
			for _, e := range mustEntries(t, hooksPath, hb) {
				if !strings.Contains(string(b), e.Hash) {
					t.Errorf("no trust for %s in\n%s", e.Key, b)
				}
			}
			// idempotent
			p2, err := PlanCodexConfig(CodexOptions{ConfigPath: cfg, Hooks: []CodexHooksFile{{hooksPath, hb}}, ProjectDir: o.ProjectDir, StateRoot: state})
			if err != nil || p2.Change.Changed() {
				t.Errorf("second install changes config:\n%s", p2.Change.Diff())
			}
			// uninstall takes out exactly the block
			u, err := PlanCodexUninstall(cfg)
			if err != nil {
				t.Fatal(err)
			}
			Apply(u, time.Now())
			b, _ = os.ReadFile(cfg)
			want := tc.old
			if want != "" && !strings.HasSuffix(want, "\n") {
				want += "\n"
			}
			if string(b) != want {
				t.Errorf("after uninstall %q, want %q", b, want)
			}
			if u2, _ := PlanCodexUninstall(cfg); u2.Changed() {
				t.Error("second uninstall changes config")
			}
		})
	}
}

func mustEntries(t *testing.T, path string, b []byte) []CodexTrust {
	t.Helper()
	es, err := CodexTrustEntries(path, b)
	if err != nil || len(es) != len(Wiring(hooks.Codex)) {
		t.Fatalf("entries %v %v", es, err)
	}
	return es
}

// What docket cannot write without redefining the user's tables, it
// leaves alone and tells the user exactly; a config it cannot read it
// refuses to touch.
func TestCodexConfigConflicts(t *testing.T) {
	for _, tc := range []struct {
		name, old string
		note      string // a note must contain this; "" for an error
		writes    bool
	}{
		{"stale trust", "[hooks.state.\"KEY\"]\ntrusted_hash = \"sha256:old\"\n", "with another trusted_hash", true},
		{"switched off", "[hooks.state.\"KEY\"]\ntrusted_hash = \"HASH\"\nenabled = false\n", "enabled = false", true},
		{"sandbox table without the root", "[sandbox_workspace_write]\nnetwork_access = true\n", "add \"", true},
		{"sandbox root already there", "[sandbox_workspace_write]\nwritable_roots = [\"STATEPARENT\"]\n", "", true},
		{"inline hooks table", "hooks = { state = {} }\n", "without breaking it", false},
		{"project marked untrusted", "[projects.\"PROJ\"]\ntrust_level = \"untrusted\"\n", "trust_level", true},
		{"not TOML", "[[[", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, cfg, state := codexSetup(t, Project)
			c := install(t, o)
			hb, _ := os.ReadFile(c.Path)
			es := mustEntries(t, c.Path, hb)
			old := strings.NewReplacer("KEY", es[0].Key, "HASH", es[0].Hash, "STATEPARENT", filepath.Dir(state), "PROJ", CodexProjectDir(o.ProjectDir)).Replace(tc.old)
			os.MkdirAll(filepath.Dir(cfg), 0o700)
			os.WriteFile(cfg, []byte(old), 0o600)
			p, err := PlanCodexConfig(CodexOptions{ConfigPath: cfg, Hooks: []CodexHooksFile{{c.Path, hb}}, ProjectDir: o.ProjectDir, TrustProject: true, StateRoot: state})
			if tc.name == "not TOML" {
				if err == nil {
					t.Fatal("no error for a broken config")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(p.Notes, "\n")
			if (tc.note == "") != (notes == "") || !strings.Contains(notes, tc.note) {
				t.Errorf("notes %q, want %q", notes, tc.note)
			}
			if p.Change.Changed() != tc.writes {
				t.Errorf("changed %v\n%s", p.Change.Changed(), p.Change.Diff())
			}
			if p.Change.Changed() {
				if _, err := parseCodexConfig(p.Change.New); err != nil {
					t.Errorf("planned config does not parse: %v\n%s", err, p.Change.New)
				}
				if !strings.HasPrefix(string(p.Change.New), old) {
					t.Errorf("the user's lines changed:\n%s", p.Change.New)
				}
			}
		})
	}
}

// A hook entry edited after it was trusted is reported, and a new
// install trusts the new entry.
func TestCodexTrustFollowsEdits(t *testing.T) {
	o, cfg, state := codexSetup(t, User)
	fakeBinaries(t, o.BinDir)
	p := codexPlan(t, o, cfg, state, false)
	Apply(p.Change, time.Now())
	hooksPath, _ := SettingsPath(hooks.Codex, User, o.HomeDir, o.ProjectDir)
	hb, _ := os.ReadFile(hooksPath)
	if probs, _, _ := CodexProblems(cfg, hooksPath, hb, "", state); len(probs) != 0 {
		t.Fatalf("problems after install: %q", probs)
	}
	edited := []byte(strings.Replace(string(hb), `"timeout": 5`, `"timeout": 6`, 1))
	os.WriteFile(hooksPath, edited, 0o600)
	probs, _, fix := CodexProblems(cfg, hooksPath, edited, "", state)
	if len(probs) != 1 || !strings.Contains(probs[0], "docket-ledger") || !strings.Contains(probs[0], "changed since it was trusted") || !strings.Contains(fix, "--scope user") {
		t.Fatalf("edited entry: %q %q", probs, fix)
	}
	p2, err := PlanCodexConfig(CodexOptions{ConfigPath: cfg, Hooks: []CodexHooksFile{{hooksPath, edited}}, StateRoot: state})
	if err != nil || !p2.Change.Changed() {
		t.Fatalf("reinstall plans no change: %v", err)
	}
	Apply(p2.Change, time.Now())
	if probs, _, _ := CodexProblems(cfg, hooksPath, edited, "", state); len(probs) != 0 {
		t.Fatalf("problems after reinstall: %q", probs)
	}
	b, _ := os.ReadFile(cfg)
	if strings.Count(string(b), codexBlockBegin) != 1 {
		t.Errorf("blocks:\n%s", b)
	}
}

// Install turns Codex's terminal sessions off (features.unified_exec_tty
// = false): Codex runs no hook for what it types into a running command.
// In the user's own [features] table it is one marked line under the
// header, which uninstall takes out exactly; a value the user set is the
// user's, and doctor warns while the sessions are on.
func TestCodexConfigTTY(t *testing.T) {
	ttyOff := func(t *testing.T, cfg string) bool {
		t.Helper()
		b, _ := os.ReadFile(cfg)
		c, err := parseCodexConfig(b)
		if err != nil {
			t.Fatalf("config does not parse: %v\n%s", err, b)
		}
		v, set := c.Features["unified_exec_tty"]
		return set && v == false
	}
	ttyWarned := func(warns []string) bool {
		for _, w := range warns {
			if strings.Contains(w, "unified_exec_tty") {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		name, old string
		off       bool // after install
	}{
		{"a [features] table", "model = \"gpt-5.5\"\n\n[features]\nplugins = false\n\n[analytics]\nenabled = false\n", true},
		{"a [features] table with a comment", "[features] # mine\nplugins = false\n", true},
		{"the user's own value", "[features]\nunified_exec_tty = true\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, cfg, state := codexSetup(t, User)
			os.MkdirAll(filepath.Dir(cfg), 0o700)
			os.WriteFile(cfg, []byte(tc.old), 0o600)
			hooksPath, _ := SettingsPath(hooks.Codex, User, o.HomeDir, o.ProjectDir)
			fakeBinaries(t, o.BinDir)
			p := codexPlan(t, o, cfg, state, false)
			if _, err := Apply(p.Change, time.Now()); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(cfg)
			if got := ttyOff(t, cfg); got != tc.off {
				t.Fatalf("unified_exec_tty off: %v, want %v\n%s", got, tc.off, b)
			}
			noted := strings.Contains(strings.Join(p.Notes, "\n"), "unified_exec_tty = true")
			if noted == tc.off {
				t.Errorf("notes %q", p.Notes)
			}
			hb, _ := os.ReadFile(hooksPath)
			if _, warns, _ := CodexProblems(cfg, hooksPath, hb, "", state); ttyWarned(warns) == tc.off {
				t.Errorf("doctor warnings %q with unified_exec_tty off %v", warns, tc.off)
			}
			if p2 := codexPlan(t, o, cfg, state, false); p2.Change.Changed() {
				t.Errorf("second install changes config:\n%s", p2.Change.Diff())
			}
			u, err := PlanCodexUninstall(cfg)
			if err != nil {
				t.Fatal(err)
			}
			Apply(u, time.Now())
			if b, _ := os.ReadFile(cfg); string(b) != tc.old {
				t.Errorf("after uninstall %q, want %q", b, tc.old)
			}
		})
	}
}
