package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

// doctorEnv makes a user home, a project and a state root in temp dirs.
func doctorEnv(t *testing.T) *Env {
	t.Helper()
	root := t.TempDir()
	h, _ := home.At(filepath.Join(root, "state"))
	os.MkdirAll(h.Root, 0o700)
	t.Setenv("HOME", filepath.Join(root, "home")) // never the real ~/.claude
	t.Setenv("CODEX_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	return &Env{Home: h, UserHome: filepath.Join(root, "home"), ProjectDir: filepath.Join(root, "proj"), Now: time.Now()}
}

// fresh copies env's settings without its cached ledger reads.
func fresh(env *Env) *Env {
	return &Env{Home: env.Home, UserHome: env.UserHome, ProjectDir: env.ProjectDir, Now: env.Now}
}

// fakeBinaries writes executable stand-ins for the hook binaries.
func fakeBinaries(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func results(rs []Result, check string) []Result {
	var out []Result
	for _, r := range rs {
		if r.Check == check {
			out = append(out, r)
		}
	}
	return out
}

func worst(rs []Result) Status {
	w := OK
	rank := map[Status]int{OK: 0, Skip: 1, Warn: 2, Fail: 3}
	for _, r := range rs {
		if rank[r.Status] > rank[w] {
			w = r.Status
		}
	}
	return w
}

func TestCheckKeys(t *testing.T) {
	env := doctorEnv(t)
	if got := worst(checkKeys(env)); got != Fail {
		t.Errorf("no keys: %v, want fail", got)
	}
	if _, err := ledger.Init(env.Home); err != nil {
		t.Fatal(err)
	}
	rs := checkKeys(env)
	if got := worst(rs); got != OK {
		t.Errorf("fresh keys: %v %+v", got, rs)
	}
	os.Chmod(env.Home.HMACKeyPath(), 0o644)
	rs = checkKeys(env)
	if worst(rs) != Fail || !strings.Contains(rs[0].Fix, "chmod 600") {
		t.Errorf("readable key: %+v", rs)
	}
}

func TestSyncedFolder(t *testing.T) {
	root := t.TempDir()
	st := filepath.Join(root, "sync", "sub")
	os.MkdirAll(st, 0o755)
	os.WriteFile(filepath.Join(root, "sync", ".stfolder"), nil, 0o644)
	tests := []struct{ dir, service string }{
		{"/Users/a/Library/Mobile Documents/com~apple~CloudDocs/docket", "Mobile Documents"},
		{"/home/a/Dropbox/state/docket", "Dropbox"},
		{"/Users/a/OneDrive - Acme/docket", "OneDrive"},
		{"/Users/a/Library/CloudStorage/GoogleDrive-a@b.c/docket", "CloudStorage (GoogleDrive-a@b.c)"},
		{filepath.Join(st, "docket"), ".stfolder marker"},
		{filepath.Join(root, "plain", "docket"), ""},
	}
	for _, tt := range tests {
		_, svc := SyncedFolder(tt.dir)
		if svc != tt.service {
			t.Errorf("SyncedFolder(%q) service %q, want %q", tt.dir, svc, tt.service)
		}
	}
	env := doctorEnv(t)
	env.Home.Root = filepath.Join(st, "docket")
	if r := checkSyncedFolder(env); r[0].Status != Fail || r[0].Fix == "" {
		t.Errorf("state root in syncthing folder: %+v", r)
	}
}

func TestCheckHooks(t *testing.T) {
	env := doctorEnv(t)
	if rs := checkHooks(env); worst(rs) != Fail || !strings.Contains(rs[len(rs)-1].Detail, "not wired") {
		t.Errorf("nothing wired: %+v", rs)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	fakeBinaries(t, bin)
	for _, o := range []Options{
		{Runtime: hooks.Claude, Scope: User, BinDir: bin, HomeDir: env.UserHome, ProjectDir: env.ProjectDir},
		{Runtime: hooks.Codex, Scope: Project, BinDir: bin, HomeDir: env.UserHome, ProjectDir: env.ProjectDir},
	} {
		c, err := PlanInstall(o)
		if err != nil {
			t.Fatal(err)
		}
		Apply(c, time.Now())
	}
	rs := checkHooks(env)
	if worst(rs) != OK || len(rs) != 2 {
		t.Fatalf("wired twice: %+v", rs)
	}
	// A binary gone, a timeout too short, a matcher that skips tools.
	os.Remove(filepath.Join(bin, GateBin))
	rs = checkHooks(env)
	if worst(rs) != Fail || !strings.Contains(rs[0].Detail, "docket-gate: not found") {
		t.Errorf("missing binary: %+v", rs)
	}
	fakeBinaries(t, bin)
	p, _ := SettingsPath(hooks.Codex, Project, env.UserHome, env.ProjectDir)
	b, _ := os.ReadFile(p)
	b = []byte(strings.Replace(string(b), `"timeout": 145`, `"timeout": 1`, 1))
	b = []byte(strings.Replace(string(b), `"matcher": "*"`, `"matcher": "Bash"`, 1))
	b = []byte(strings.Replace(string(b), ` --timeout 12s"`, `"`, 1))
	os.WriteFile(p, b, 0o600)
	rs = checkHooks(env)
	if worst(rs) != Fail || !strings.Contains(rs[1].Detail, "timeout 1s outside") || !strings.Contains(rs[1].Detail, `matcher "Bash"`) ||
		!strings.Contains(rs[1].Detail, "the gate decides within 30s but the runtime kills it at 15s") ||
		!strings.Contains(rs[1].Detail, "shorter than the judge's own deadline") {
		t.Errorf("bad timeouts and matcher: %+v", rs)
	}
	// disableAllHooks turns every hook off.
	p, _ = SettingsPath(hooks.Claude, User, env.UserHome, env.ProjectDir)
	b, _ = os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "{", `{"disableAllHooks": true,`, 1)), 0o600)
	if rs := checkHooks(env); worst(rs) != Fail || !strings.Contains(rs[0].Detail, "disableAllHooks") {
		t.Errorf("disableAllHooks: %+v", rs)
	}
}

func TestHooksSwitchedOff(t *testing.T) {
	env := doctorEnv(t)
	bin := filepath.Join(t.TempDir(), "bin")
	fakeBinaries(t, bin)
	c, _ := PlanInstall(Options{Runtime: hooks.Claude, Scope: User, BinDir: bin, HomeDir: env.UserHome, ProjectDir: env.ProjectDir})
	Apply(c, time.Now())
	// A local file without docket's hooks still switches them all off.
	p, _ := SettingsPath(hooks.Claude, Local, env.UserHome, env.ProjectDir)
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"disableAllHooks": true}`), 0o600)
	if rs := checkHooks(env); worst(rs) != Fail || !strings.Contains(rs[1].Detail, "settings.local.json") {
		t.Errorf("disableAllHooks in the local file: %+v", rs)
	}
	os.Remove(p)
	g, _ := SettingsPath(hooks.Gemini, Project, env.UserHome, env.ProjectDir)
	os.MkdirAll(filepath.Dir(g), 0o755)
	// Gemini CLI's switch is hooksConfig.enabled; "hooks.enabled" is read
	// as an event name and switches nothing.
	os.WriteFile(g, []byte(`{"hooks": {"enabled": false}}`), 0o600)
	if rs := checkHooks(env); worst(rs) != OK {
		t.Errorf("gemini hooks.enabled is not a switch: %+v", rs)
	}
	for _, tc := range []struct{ settings, want string }{
		{`{"hooksConfig": {"enabled": false}}`, "hooksConfig.enabled is false"},
		{`{"hooksConfig": {"disabled": ["docket-gate"]}}`, `hooksConfig.disabled lists "docket-gate"`},
		{`{"hooksConfig": {"disabled": ["/opt/bin/docket-judge --runtime gemini"]}}`, `lists "/opt/bin/docket-judge`},
	} {
		os.WriteFile(g, []byte(tc.settings), 0o600)
		if rs := checkHooks(env); worst(rs) != Fail || !strings.Contains(rs[1].Detail, tc.want) {
			t.Errorf("%s: %+v", tc.settings, rs)
		}
	}
	for _, s := range []string{`{"hooksConfig": {"enabled": true, "disabled": ["my-linter"]}}`, `{"hooksConfig": {}}`} {
		os.WriteFile(g, []byte(s), 0o600)
		if rs := checkHooks(env); worst(rs) != OK {
			t.Errorf("%s: %+v", s, rs)
		}
	}
}

// doctor checks Codex's trust instead of reporting OK for hooks Codex
// would never run.
func TestCheckCodexTrust(t *testing.T) {
	env := doctorEnv(t)
	if rs := checkCodexTrust(env); worst(rs) != Skip {
		t.Errorf("nothing wired: %+v", rs)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	fakeBinaries(t, bin)
	o := Options{Runtime: hooks.Codex, Scope: Project, BinDir: bin, HomeDir: env.UserHome, ProjectDir: env.ProjectDir}
	c, _ := PlanInstall(o)
	Apply(c, time.Now())
	if rs := checkHooks(env); worst(rs) != OK {
		t.Fatalf("hooks: %+v", rs)
	}
	rs := checkCodexTrust(env)
	if worst(rs) != Fail || !strings.Contains(rs[0].Detail, "is not trusted") || !strings.Contains(rs[0].Detail, "Codex runs no untrusted hook") ||
		!strings.Contains(rs[0].Fix, "docket install --runtime codex") {
		t.Fatalf("untrusted: %+v", rs)
	}
	cfg := CodexConfigPath(env.UserHome)
	p, err := PlanCodexConfig(CodexOptions{ConfigPath: cfg, Hooks: CodexFiles(env.UserHome, env.ProjectDir, nil), ProjectDir: env.ProjectDir, TrustProject: true, StateRoot: env.Home.Root})
	if err != nil {
		t.Fatal(err)
	}
	Apply(p.Change, time.Now())
	if rs := checkCodexTrust(env); worst(rs) != OK {
		t.Fatalf("trusted: %+v", rs)
	}
	// the sandbox root taken out: validate could not record, a warning
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(b), "writable_roots = [", "writable_roots = [\"/elsewhere\"] #", 1)), 0o600)
	if rs := checkCodexTrust(env); worst(rs) != Warn || !strings.Contains(rs[0].Detail, "writable_roots") {
		t.Errorf("no writable root: %+v", rs)
	}
	os.WriteFile(cfg, b, 0o600)
	// the hook switched off in config.toml
	os.WriteFile(cfg, []byte(strings.Replace(string(b), "trusted_hash =", "enabled = false\ntrusted_hash =", 1)), 0o600)
	if rs := checkCodexTrust(env); worst(rs) != Fail || !strings.Contains(rs[0].Detail, "switched off") {
		t.Errorf("switched off: %+v", rs)
	}
}

func TestCheckPolicies(t *testing.T) {
	env := doctorEnv(t)
	if rs := checkPolicies(env); worst(rs) != OK || !strings.Contains(rs[0].Detail, "policy_version pv1:") {
		t.Fatalf("embedded defaults: %+v", rs)
	}
	names := policies.Names()
	os.MkdirAll(env.Home.PoliciesDir(), 0o700)
	def, _ := policies.Default(names[0])
	// A read-only copy that differs from the default: an older docket's.
	stale := filepath.Join(env.Home.PoliciesDir(), names[0])
	os.WriteFile(stale, append([]byte("# older\n"), def...), 0o444)
	// not approved yet: a failure with the fix
	if rs := checkPolicies(env); worst(rs) != Fail || !strings.Contains(rs[0].Detail, "older docket's default") ||
		!strings.Contains(rs[1].Detail, "policy not approved") || !strings.Contains(rs[1].Fix, "docket policy approve") {
		t.Errorf("unapproved stale default: %+v", rs)
	}
	os.MkdirAll(env.Home.KeysDir(), 0o700)
	os.WriteFile(env.Home.HMACKeyPath(), []byte("k"), 0o400)
	if _, err := policies.Approve(env.Home, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
	if rs := checkPolicies(env); worst(rs) != Warn || !strings.Contains(rs[0].Detail, "older docket's default") {
		t.Errorf("stale default: %+v", rs)
	}
	// Writable and different: the user's own, fine.
	os.Chmod(stale, 0o644)
	if rs := checkPolicies(env); worst(rs) != OK || !strings.Contains(rs[0].Detail, "1 customised") {
		t.Errorf("customised: %+v", rs)
	}
	// Broken: fails with a fix.
	os.WriteFile(stale, []byte("\xff\xfe"), 0o644)
	if rs := checkPolicies(env); worst(rs) != Fail || rs[0].Fix == "" {
		t.Errorf("broken policy: %+v", rs)
	}
	os.WriteFile(filepath.Join(env.Home.PoliciesDir(), "claim.yaml"), []byte("x: 1\n"), 0o644)
	os.Remove(stale)
	if _, err := policies.Approve(env.Home, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
	if rs := checkPolicies(env); worst(rs) != Warn || !strings.Contains(rs[0].Detail, "claim.yaml is not a policy") {
		t.Errorf("unknown file: %+v", rs)
	}
}

func TestCheckStore(t *testing.T) {
	env := doctorEnv(t)
	t.Setenv("DOCKET_STORE_DSN", "")
	if rs := checkStore(env); rs[0].Status != OK || !strings.Contains(rs[0].Detail, "no store yet") {
		t.Errorf("no store: %+v", rs)
	}
	if _, err := os.Stat(env.Home.StorePath()); err == nil {
		t.Error("doctor created the store")
	}
	os.WriteFile(env.Home.StorePath(), []byte("this is not a database, just text long enough to be read as a header"), 0o600)
	if rs := checkStore(env); rs[0].Status != Fail || rs[0].Fix == "" {
		t.Errorf("damaged store: %+v", rs)
	}
	os.Remove(env.Home.StorePath())
	t.Setenv("DOCKET_STORE_DSN", "mysql://u:secret@h/db")
	if rs := checkStore(env); rs[0].Status != Fail || strings.Contains(rs[0].Detail, "secret") {
		t.Errorf("bad DSN: %+v", rs)
	}
}

func TestCheckLedgers(t *testing.T) {
	env := doctorEnv(t)
	if rs := checkLedgers(env); worst(rs) != OK {
		t.Errorf("no ledgers: %+v", rs)
	}
	if _, err := ledger.Init(env.Home); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(env.Home)
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []any{
		map[string]any{"outcome": "allow"},
		map[string]any{"outcome": "block", "failure_kind": "unavailable", "recall": "unavailable: store locked"},
	} {
		if _, err := l.Append("s1", ledger.Record{Kind: ledger.KindJudgeDecision, Event: "PreToolUse", Tool: "Bash", Body: body}); err != nil {
			t.Skipf("ledger append not available yet: %v (entry %d)", err, i)
		}
	}
	env2 := fresh(env)
	if rs := checkLedgers(env2); worst(rs) != OK || !strings.Contains(rs[0].Detail, "1 ledger verified (2 entries)") {
		t.Errorf("one good ledger: %+v", rs)
	}
	if rs := checkJudgeAvailability(env2); rs[0].Status != Fail || !strings.Contains(rs[0].Detail, "1 of 2") || !strings.Contains(rs[0].Detail, "recall unavailable for 1") {
		t.Errorf("availability: %+v", rs)
	}
	// Tamper with the ledger: doctor fails and names the session.
	p := env.Home.LedgerPath("s1")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), `"allow"`, `"block"`, 1)), 0o600)
	if rs := checkLedgers(fresh(env)); worst(rs) != Fail || !strings.Contains(rs[0].Detail, "s1") || !strings.Contains(rs[0].Fix, "docket verify --session s1") {
		t.Errorf("tampered ledger: %+v", rs)
	}
}

func TestModelFamilyAndUnavailable(t *testing.T) {
	fam := map[string]string{"claude-sonnet-4-5": "anthropic", "gpt-5.5": "openai", "o3-mini": "openai",
		"gemini-2.5-pro": "google", "anthropic": "anthropic", "llama-3": ""}
	for in, want := range fam {
		if got := ModelFamily(in); got != want {
			t.Errorf("ModelFamily(%q) = %q, want %q", in, got, want)
		}
	}
	bodies := map[string]bool{
		`{"outcome":"allow"}`:                    false,
		`{"outcome":"block","error":"timeout"}`:  true,
		`{"failure_kind":"unavailable"}`:         true,
		`{"recall":"unavailable: store locked"}`: false, // recall, not the judge
		`{"outcome":"unavailable"}`:              true,
		`{"recall":"ok"}`:                        false,
		`not json`:                               false,
	}
	for b, want := range bodies {
		if got := JudgeUnavailable(json.RawMessage(b)); got != want {
			t.Errorf("JudgeUnavailable(%s) = %v", b, got)
		}
	}
}

func TestDoctorTable(t *testing.T) {
	env := doctorEnv(t)
	rs := Doctor(env)
	if Healthy(rs) {
		t.Error("a machine without keys or hooks is healthy")
	}
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.Check] = true
		if r.Status == "" || r.Detail == "" {
			t.Errorf("incomplete result %+v", r)
		}
		if (r.Status == Fail || r.Status == Warn) && r.Fix == "" {
			t.Errorf("%s %s without a fix: %s", r.Check, r.Status, r.Detail)
		}
	}
	for _, c := range Checks {
		if !seen[c.Name] {
			t.Errorf("check %s gave no result", c.Name)
		}
	}

	// Set up properly: keys, hooks. Policies and ledgers are fine when
	// empty; the store and the judge are skipped, not failed.
	if _, err := ledger.Init(env.Home); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bin")
	fakeBinaries(t, bin)
	c, _ := PlanInstall(Options{Runtime: hooks.Claude, Scope: Project, BinDir: bin, HomeDir: env.UserHome, ProjectDir: env.ProjectDir})
	Apply(c, time.Now())
	rs = Doctor(fresh(env))
	for _, r := range rs {
		if r.Status == Fail {
			t.Errorf("set-up machine fails %s: %s", r.Check, r.Detail)
		}
	}
}
