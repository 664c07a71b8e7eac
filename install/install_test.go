package install

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
)

// userSettings is a Claude Code settings file with the user's own hooks,
// keys docket knows nothing about, and number literals encoding/json
// would respell.
const userSettings = `{
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "model": "opus",
    "permissions": {"allow": ["Bash(go test:*)"], "deny": ["Read(./.env)"]},
    "env": {"FOO": "<bar> & baz"},
    "cleanupPeriodDays": 30,
    "ratio": 1.50,
    "big": 1e3,
    "hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/my-guard --strict", "timeout": 7}]}
        ],
        "Notification": [
            {"hooks": [{"type": "command", "command": "notify-send claude"}]}
        ],
        "PostToolUse": [
            {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "gofmt -w \"$FILE\""}]}
        ]
    },
    "statusLine": {"type": "command", "command": "starship prompt"},
    "unknownFutureKey": [1, {"nested": null}, true]
}
`

func opts(t *testing.T, rt hooks.Runtime, scope Scope) Options {
	t.Helper()
	root := t.TempDir()
	o := Options{
		Runtime:    rt,
		Scope:      scope,
		BinDir:     filepath.Join(root, "opt", "docket bin"), // a space, to exercise quoting
		HomeDir:    filepath.Join(root, "home"),
		ProjectDir: filepath.Join(root, "proj"),
	}
	t.Setenv("HOME", o.HomeDir) // never the real ~/.claude
	t.Setenv("CODEX_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	return o
}

func install(t *testing.T, o Options) *Change {
	t.Helper()
	c, err := PlanInstall(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(c, time.Now()); err != nil {
		t.Fatal(err)
	}
	return c
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("settings are not JSON: %v\n%s", err, b)
	}
	return m
}

func TestInstallPreservesUserSettings(t *testing.T) {
	o := opts(t, hooks.Claude, Project)
	path, _ := SettingsPath(o.Runtime, o.Scope, o.HomeDir, o.ProjectDir)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(userSettings), 0o640); err != nil {
		t.Fatal(err)
	}
	c := install(t, o)
	if !c.Existed || c.Added != 6 || c.Removed != 0 { // five tool and stop hooks and the prompt
		t.Fatalf("change: existed %v added %d removed %d", c.Existed, c.Added, c.Removed)
	}
	after, _ := os.ReadFile(path)

	// Every key of the user's is still there, with the same value.
	before, got := decode(t, []byte(userSettings)), decode(t, after)
	for k, v := range before {
		if k == "hooks" {
			continue
		}
		bv, _ := json.Marshal(v)
		gv, _ := json.Marshal(got[k])
		if string(bv) != string(gv) {
			t.Errorf("key %q changed: %s -> %s", k, bv, gv)
		}
	}
	// Number literals and key order survive byte for byte.
	for _, lit := range []string{`"ratio": 1.50`, `"big": 1e3`, `"FOO": "<bar> & baz"`} {
		if !strings.Contains(string(after), lit) {
			t.Errorf("lost literal %s in:\n%s", lit, after)
		}
	}
	if strings.Index(string(after), `"model"`) > strings.Index(string(after), `"statusLine"`) {
		t.Error("key order changed")
	}
	// The user's own hooks are all still there, before docket's.
	for _, cmd := range []string{"~/bin/my-guard --strict", "notify-send claude", `gofmt -w \"$FILE\"`} {
		if !strings.Contains(string(after), cmd) {
			t.Errorf("user hook %q lost", cmd)
		}
	}
	h := got["hooks"].(map[string]any)
	pre := h["PreToolUse"].([]any)
	if len(pre) != 2 || pre[0].(map[string]any)["matcher"] != "Bash" {
		t.Errorf("PreToolUse = %v", pre)
	}
	checkWired(t, o, after)

	// The mode and a backup of the original are kept.
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640", st.Mode().Perm())
	}
	if bak, err := os.ReadFile(path + ".docket-bak"); err != nil || string(bak) != userSettings {
		t.Errorf("backup: %v\n%s", err, bak)
	}

	// A second install changes nothing.
	c2, err := PlanInstall(o)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Changed() || c2.Diff() != "" {
		t.Errorf("second install would change:\n%s", c2.Diff())
	}

	// Uninstall gives back the user's settings, in meaning.
	u, err := PlanUninstall(o)
	if err != nil {
		t.Fatal(err)
	}
	if u.Removed != 6 {
		t.Errorf("uninstall removes %d handlers, want 6", u.Removed)
	}
	if _, err := Apply(u, time.Now()); err != nil {
		t.Fatal(err)
	}
	final, _ := os.ReadFile(path)
	if !sameJSON(final, []byte(userSettings)) {
		t.Errorf("after uninstall:\n%s\nwant the original:\n%s", final, userSettings)
	}
	if matches, _ := filepath.Glob(path + ".docket-bak.*"); len(matches) != 1 {
		t.Errorf("timestamped backups = %v, want one", matches)
	}
}

// checkWired checks that settings hold exactly docket's wiring for o.
func checkWired(t *testing.T, o Options, settings []byte) {
	t.Helper()
	got, err := Wired(o.Runtime, settings)
	if err != nil {
		t.Fatal(err)
	}
	want := Wiring(o.Runtime)
	if len(got) != len(want) {
		t.Fatalf("wired %d entries, want %d: %+v", len(got), len(want), got)
	}
	byEvent := map[string]Entry{}
	for _, g := range got {
		byEvent[g.Event] = g
	}
	for _, w := range want {
		g := byEvent[w.Event]
		if g.Binary != w.Binary || g.Timeout != w.Timeout || g.Matcher != w.Matcher {
			t.Errorf("%s = %+v, want %+v", w.Event, g, w)
		}
		if g.Program != filepath.Join(o.BinDir, w.Binary) {
			t.Errorf("%s runs %q, want %q", w.Event, g.Program, filepath.Join(o.BinDir, w.Binary))
		}
	}
	if p := CheckWiring(o.Runtime, settings, o.BinDir, DefaultJudgeTimeout()); len(p) > 0 {
		t.Errorf("CheckWiring: %v", p)
	}
}

func TestInstallEveryRuntimeAndScope(t *testing.T) {
	tests := []struct {
		rt      hooks.Runtime
		scope   Scope
		rel     string // settings path relative to home or project
		inHome  bool
		timeout string // how the gate's timeout is written
	}{
		{hooks.Claude, User, ".claude/settings.json", true, `"timeout": 15`},
		{hooks.Claude, Project, ".claude/settings.json", false, `"timeout": 15`},
		{hooks.Claude, Local, ".claude/settings.local.json", false, `"timeout": 15`},
		{hooks.Codex, User, ".codex/hooks.json", true, `"timeout": 15`},
		{hooks.Codex, Project, ".codex/hooks.json", false, `"timeout": 15`},
		{hooks.Gemini, User, ".gemini/settings.json", true, `"timeout": 15000`},
		{hooks.Gemini, Project, ".gemini/settings.json", false, `"timeout": 15000`},
		{hooks.Cursor, User, ".cursor/hooks.json", true, `"timeout": 15`},
		{hooks.Cursor, Project, ".cursor/hooks.json", false, `"timeout": 15`},
	}
	for _, tt := range tests {
		t.Run(string(tt.rt)+"-"+string(tt.scope), func(t *testing.T) {
			o := opts(t, tt.rt, tt.scope)
			base := o.ProjectDir
			if tt.inHome {
				base = o.HomeDir
			}
			c := install(t, o)
			if want := filepath.Join(base, tt.rel); c.Path != want {
				t.Fatalf("path %s, want %s", c.Path, want)
			}
			b, err := os.ReadFile(c.Path)
			if err != nil {
				t.Fatal(err)
			}
			judge := `"timeout": 145`
			if tt.rt == hooks.Gemini {
				judge = `"timeout": 145000`
			}
			for _, want := range []string{tt.timeout, judge, "gate' --runtime " + string(tt.rt) + " --timeout 12s"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("no %s in\n%s", want, b)
				}
			}
			if st, _ := os.Stat(c.Path); st.Mode().Perm() != 0o600 {
				t.Errorf("new file mode %v", st.Mode().Perm())
			}
			checkWired(t, o, b)
			m := decode(t, b)
			if tt.rt == hooks.Cursor && m["version"] != float64(1) {
				t.Errorf("cursor version = %v", m["version"])
			}
			if c2, _ := PlanInstall(o); c2.Changed() {
				t.Errorf("not idempotent:\n%s", c2.Diff())
			}
			u, _ := PlanUninstall(o)
			Apply(u, time.Now())
			b, _ = os.ReadFile(c.Path)
			want := "{}"
			if tt.rt == hooks.Cursor {
				want = `{"version":1}`
			}
			if !sameJSON(b, []byte(want)) {
				t.Errorf("after uninstall %s, want %s", b, want)
			}
		})
	}
}

func TestJudgeTimeout(t *testing.T) {
	if got := DefaultJudgeTimeout(); got != 145*time.Second {
		t.Errorf("DefaultJudgeTimeout = %v, want 145s (120s escalation + 8s model + 10s + 5s margin) with the embedded judges.md", got)
	}
	// An explicit judge timeout (from the judges.md in force) is written.
	o := opts(t, hooks.Claude, Project)
	o.JudgeTimeout = 40 * time.Second
	c, err := PlanInstall(o)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := Wired(o.Runtime, c.New)
	if w[0].Binary != JudgeBin || w[0].Timeout != 40*time.Second {
		t.Errorf("judge entry %+v, want a 40s timeout", w[0])
	}
	if p := CheckWiring(o.Runtime, c.New, "", 145*time.Second); len(p) != 1 || !strings.Contains(p[0], "fails open") {
		t.Errorf("CheckWiring with a longer judge deadline: %v", p)
	}
}

func TestInstallReplacesOldDocketEntriesInPlace(t *testing.T) {
	o := opts(t, hooks.Claude, User)
	path, _ := SettingsPath(o.Runtime, o.Scope, o.HomeDir, o.ProjectDir)
	os.MkdirAll(filepath.Dir(path), 0o755)
	old := `{"hooks":{"Stop":[
		{"hooks":[{"type":"command","command":"/old/bin/docket-gate","timeout":60}]},
		{"hooks":[{"type":"command","command":"say done"}]}],
	  "PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"/usr/local/bin/audit"},{"type":"command","command":"'/old place/docket-judge'"}]}],
	  "SessionStart":[{"hooks":[{"type":"command","command":"/old/bin/docket-ledger"}]}]}}`
	os.WriteFile(path, []byte(old), 0o600)
	c := install(t, o)
	if c.Removed != 3 {
		t.Errorf("removed %d old docket handlers, want 3", c.Removed)
	}
	b, _ := os.ReadFile(path)
	checkWired(t, o, b)
	m := decode(t, b)["hooks"].(map[string]any)
	stop := m["Stop"].([]any)
	if len(stop) != 2 || !strings.Contains(mustJSON(stop[0]), "docket-gate") || !strings.Contains(mustJSON(stop[1]), "say done") {
		t.Errorf("Stop order not kept: %s", mustJSON(stop))
	}
	pre := m["PreToolUse"].([]any)
	if len(pre) != 2 || !strings.Contains(mustJSON(pre[1]), "/usr/local/bin/audit") || strings.Contains(mustJSON(pre[1]), "old place") {
		t.Errorf("PreToolUse: %s", mustJSON(pre))
	}
	if _, ok := m["SessionStart"]; ok {
		t.Error("a docket entry under an event docket does not wire was kept")
	}
	if strings.Contains(string(b), "/old/") {
		t.Errorf("old paths remain:\n%s", b)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestInstallRefusesBadSettings(t *testing.T) {
	tests := []struct{ name, content string }{
		{"not json", `{"hooks": `},
		{"array", `[]`},
		{"trailing", `{} {}`},
		{"hooks not object", `{"hooks": []}`},
		{"event not list", `{"hooks": {"Stop": {"command": "x"}}}`},
	}
	for _, tt := range tests {
		o := opts(t, hooks.Claude, Project)
		path, _ := SettingsPath(o.Runtime, o.Scope, o.HomeDir, o.ProjectDir)
		os.MkdirAll(filepath.Dir(path), 0o755)
		os.WriteFile(path, []byte(tt.content), 0o600)
		_, err := PlanInstall(o)
		var se *SettingsError
		if !errors.As(err, &se) || se.Path != path {
			t.Errorf("%s: err = %v, want a SettingsError", tt.name, err)
		}
		if b, _ := os.ReadFile(path); string(b) != tt.content {
			t.Errorf("%s: file touched", tt.name)
		}
	}
	o := opts(t, hooks.Codex, Local)
	var scopeErr *ScopeError
	if _, err := PlanInstall(o); !errors.As(err, &scopeErr) {
		t.Errorf("codex local scope: err = %v", err)
	}
	o = opts(t, hooks.Claude, Project)
	o.BinDir = "relative/bin"
	if _, err := PlanInstall(o); err == nil {
		t.Error("relative bin dir accepted")
	}
}

func TestUninstallMissingFileIsNoChange(t *testing.T) {
	o := opts(t, hooks.Gemini, User)
	c, err := PlanUninstall(o)
	if err != nil || c.Changed() {
		t.Fatalf("uninstall without a file: %v changed=%v", err, c.Changed())
	}
	if _, err := Apply(c, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Path); !errors.Is(err, os.ErrNotExist) {
		t.Error("uninstall created a file")
	}
}

func TestGeminiKeepsNonListHookKeys(t *testing.T) {
	o := opts(t, hooks.Gemini, Project)
	path, _ := SettingsPath(o.Runtime, o.Scope, o.HomeDir, o.ProjectDir)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(`{"tools":{"enableHooks":true},"hooks":{"enabled":true,"disabled":["x"]}}`), 0o600)
	install(t, o)
	b, _ := os.ReadFile(path)
	h := decode(t, b)["hooks"].(map[string]any)
	if h["enabled"] != true || mustJSON(h["disabled"]) != `["x"]` {
		t.Errorf("hooks keys lost: %s", b)
	}
	checkWired(t, o, b)
}

func TestApplyThroughSymlinkAndConcurrentEdit(t *testing.T) {
	o := opts(t, hooks.Claude, User)
	path, _ := SettingsPath(o.Runtime, o.Scope, o.HomeDir, o.ProjectDir)
	real := filepath.Join(t.TempDir(), "dotfiles-settings.json")
	os.WriteFile(real, []byte(`{"model":"x"}`), 0o600)
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.Symlink(real, path); err != nil {
		t.Skip("no symlinks:", err)
	}
	install(t, o)
	if fi, _ := os.Lstat(path); fi.Mode()&os.ModeSymlink == 0 {
		t.Error("symlink replaced by a file")
	}
	b, _ := os.ReadFile(real)
	checkWired(t, o, b)

	// An edit between plan and apply is not overwritten.
	c, _ := PlanUninstall(o)
	os.WriteFile(real, []byte(`{"model":"y"}`), 0o600)
	if _, err := Apply(c, time.Now()); err == nil || !strings.Contains(err.Error(), "changed while") {
		t.Errorf("apply over a concurrent edit: %v", err)
	}
}

func TestCommandQuotingRoundTrip(t *testing.T) {
	dirs := []string{"/usr/local/bin", "/Users/a b/Application Support/docket", "/tmp/it's", "/x/$HOME/`y`"}
	for _, d := range dirs {
		for _, b := range Binaries {
			cmd := Command(d, b, hooks.Codex)
			if CommandRuntime(cmd) != "codex" {
				t.Errorf("CommandRuntime(%q) = %q", cmd, CommandRuntime(cmd))
			}
			prog, ok := CommandProgram(cmd)
			if !ok || prog != filepath.Join(d, b) {
				t.Errorf("CommandProgram(Command(%q)) = %q", d, prog)
			}
			if DocketBinary(cmd) != b {
				t.Errorf("DocketBinary(%q) = %q", cmd, DocketBinary(cmd))
			}
		}
	}
	tests := []struct{ cmd, want string }{
		{"/x/docket-gate --flag", GateBin},
		{`"/a b/docket-judge"`, JudgeBin},
		{`/opt/d/docket-ledger.exe`, LedgerBin},
		{"docket-gate-wrapper", ""},
		{"echo docket-gate", ""},
		{"", ""},
		{"${CLAUDE_PLUGIN_ROOT}/bin/docket-gate", GateBin},
	}
	for _, tt := range tests {
		if got := DocketBinary(tt.cmd); got != tt.want {
			t.Errorf("DocketBinary(%q) = %q, want %q", tt.cmd, got, tt.want)
		}
	}
}

func TestDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\nthree\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	want := `--- a
+++ b
@@ -1,6 +1,6 @@
 1
 2
-3
+three
 4
 5
 6
@@ -10,3 +10,4 @@
 10
 11
 12
+13
`
	if got := unifiedDiff("a", "b", a, b); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if unifiedDiff("a", "b", a, a) != "" {
		t.Error("diff of equal texts not empty")
	}
	if got := unifiedDiff("/dev/null", "b", "", "x\n"); got != "--- /dev/null\n+++ b\n@@ -0,0 +1,1 @@\n+x\n" {
		t.Errorf("diff from nothing:\n%s", got)
	}
}
