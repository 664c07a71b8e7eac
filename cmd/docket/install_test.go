package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/install"
)

// wiringSandbox gives a test its own HOME, project directory (the
// working directory), state root and fake hook binaries, so nothing
// touches this machine's real settings.
func wiringSandbox(t *testing.T) (homeDir, project, bin string) {
	t.Helper()
	root := t.TempDir()
	homeDir, project, bin = filepath.Join(root, "home"), filepath.Join(root, "proj"), filepath.Join(root, "bin")
	for _, d := range []string{homeDir, project, bin} {
		os.MkdirAll(d, 0o755)
	}
	for _, b := range []string{"docket-judge", "docket-ledger", "docket-gate"} {
		os.WriteFile(filepath.Join(bin, b), []byte("#!/bin/sh\n"), 0o755)
	}
	t.Setenv("HOME", homeDir)
	// the go command that `docket init` asks for its version writes
	// telemetry under $HOME from a child that outlives it, racing with
	// the temp directory's removal
	tdir := filepath.Join(homeDir, ".config", "go", "telemetry")
	os.MkdirAll(tdir, 0o755)
	os.WriteFile(filepath.Join(tdir, "mode"), []byte("off\n"), 0o644)
	t.Setenv("CODEX_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("DOCKET_HOME", filepath.Join(root, "state"))
	t.Chdir(project)
	return homeDir, project, bin
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	code = report(err, &errb)
	return code, out.String(), errb.String()
}

func TestInstallCommand(t *testing.T) {
	homeDir, project, bin := wiringSandbox(t)
	settings := filepath.Join(project, ".claude", "settings.json")

	code, out, errs := runCLI("install", "--bin", bin, "--dry-run")
	if code != 0 || !strings.Contains(out, "+++ "+settings) || !strings.Contains(out, filepath.Join(bin, "docket-judge")) {
		t.Fatalf("dry run: %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(settings); err == nil {
		t.Fatal("--dry-run wrote the settings file")
	}

	code, out, errs = runCLI("install", "--bin", bin)
	if code != 0 || !strings.Contains(out, "wired docket into "+settings) {
		t.Fatalf("install: %d\n%s%s", code, out, errs)
	}
	code, out, _ = runCLI("install", "--bin", bin)
	if code != 0 || !strings.Contains(out, "already wired") {
		t.Errorf("second install: %d %s", code, out)
	}
	code, out, _ = runCLI("install", "--bin", bin, "--dry-run")
	if code != 0 || !strings.Contains(out, "no change") {
		t.Errorf("dry run after install: %d %s", code, out)
	}

	// Codex, user scope, lands in ~/.codex/hooks.json.
	if code, out, errs := runCLI("install", "--runtime", "codex", "--scope", "user", "--bin", bin); code != 0 {
		t.Fatalf("codex install: %d %s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(homeDir, ".codex", "hooks.json")); err != nil {
		t.Errorf("codex settings: %v", err)
	}

	code, out, errs = runCLI("uninstall")
	if code != 0 || !strings.Contains(out, "removed 6 docket hook(s)") {
		t.Errorf("uninstall: %d %s%s", code, out, errs)
	}
	b, _ := os.ReadFile(settings)
	if strings.Contains(string(b), "docket-") {
		t.Errorf("uninstall left docket entries:\n%s", b)
	}
	if _, err := os.Stat(settings + ".docket-bak"); err != nil {
		t.Errorf("no backup: %v", err)
	}
}

func TestInstallCommandErrors(t *testing.T) {
	_, _, bin := wiringSandbox(t)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"install", "--runtime", "codex", "--scope", "local", "--bin", bin}, 2, "hint: use --scope project"},
		{[]string{"install", "--runtime", "vim", "--bin", bin}, 2, `unknown runtime "vim"`},
		{[]string{"install", "--scope", "global", "--bin", bin}, 2, `unknown scope "global"`},
		{[]string{"install", "codex"}, 2, "hint: name the runtime with a flag: docket install --runtime codex"},
		{[]string{"install", "--bin", t.TempDir()}, 1, "hint: build them with 'make build'"},
		{[]string{"uninstall", "--runtime", "gemini", "--scope", "local"}, 2, "--scope local"},
		{[]string{"install", "--nope"}, 2, ""},
		{[]string{"doctor", "extra"}, 2, "doctor takes no arguments"},
	}
	for _, tt := range tests {
		code, _, errs := runCLI(tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tt.args, code, errs, tt.code, tt.want)
		}
		if code != 0 && tt.want != "" && !strings.HasPrefix(errs, "docket: error: ") {
			t.Errorf("%v: stderr %q does not start with docket: error:", tt.args, errs)
		}
	}
	// A malformed settings file is reported and left alone.
	os.MkdirAll(".claude", 0o755)
	os.WriteFile(".claude/settings.json", []byte("{oops"), 0o600)
	code, _, errs := runCLI("install", "--bin", bin)
	if b, _ := os.ReadFile(".claude/settings.json"); code != 1 || string(b) != "{oops" || !strings.Contains(errs, "docket will not overwrite it") {
		t.Errorf("malformed settings: exit %d %q, file %q", code, errs, b)
	}
}

func TestDoctorCommand(t *testing.T) {
	_, _, bin := wiringSandbox(t)
	code, out, errs := runCLI("doctor", "--json")
	if code != 1 {
		t.Errorf("doctor on a bare machine: exit %d, want 1\n%s%s", code, out, errs)
	}
	var rep struct {
		Healthy bool `json:"healthy"`
		Results []struct {
			Check, Status, Detail, Fix string
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	if rep.Healthy || len(rep.Results) == 0 {
		t.Errorf("report: %+v", rep)
	}
	if code, out, errs := runCLI("init"); code != 0 {
		t.Fatalf("init: %d %s%s", code, out, errs)
	}
	runCLI("install", "--bin", bin)
	code, out, _ = runCLI("doctor")
	if code != 0 || !strings.Contains(out, "OK    hooks") || !strings.Contains(out, "OK    keys") {
		t.Errorf("doctor after init and install: exit %d\n%s", code, out)
	}
}

// docket install --runtime codex trusts docket's hooks in Codex's
// config.toml (and the state root as a sandbox writable root), doctor
// then passes the Codex check, and uninstall takes out exactly what
// install wrote, scope by scope.
func TestInstallCodexTrust(t *testing.T) {
	homeDir, project, bin := wiringSandbox(t)
	cfg := filepath.Join(homeDir, ".codex", "config.toml")
	userCfg := "model = \"gpt-5.5\"\n"
	os.MkdirAll(filepath.Dir(cfg), 0o700)
	os.WriteFile(cfg, []byte(userCfg), 0o600)
	if code, out, errs := runCLI("init"); code != 0 {
		t.Fatalf("init: %d %s%s", code, out, errs)
	}

	code, out, errs := runCLI("install", "--runtime", "codex", "--bin", bin)
	if code != 0 || !strings.Contains(out, "updated Codex's hook trust in "+cfg) {
		t.Fatalf("install: %d\n%s%s", code, out, errs)
	}
	// the project's own trust is the user's: said, not written
	if !strings.Contains(errs, "is not trusted") || !strings.Contains(errs, "--trust-project") {
		t.Errorf("no note about the project's trust: %s", errs)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.HasPrefix(string(b), userCfg) || strings.Count(string(b), "trusted_hash = ") != len(install.Wiring(hooks.Codex)) ||
		!strings.Contains(string(b), "writable_roots = [") || strings.Contains(string(b), "[projects.") {
		t.Fatalf("config.toml:\n%s", b)
	}
	code, out, _ = runCLI("doctor")
	if code != 1 || !strings.Contains(out, "FAIL  codex-trust") || !strings.Contains(out, "is not trusted") {
		t.Errorf("doctor before the project is trusted: %d\n%s", code, out)
	}
	code, out, errs = runCLI("install", "--runtime", "codex", "--bin", bin, "--trust-project")
	if code != 0 || !strings.Contains(out, "already wired") || strings.Contains(errs, "is not trusted") {
		t.Fatalf("install --trust-project: %d\n%s%s", code, out, errs)
	}
	code, out, _ = runCLI("doctor")
	if code != 0 || !strings.Contains(out, "OK    codex-trust") {
		t.Errorf("doctor after install: %d\n%s", code, out)
	}
	b1, _ := os.ReadFile(cfg)
	code, out, _ = runCLI("install", "--runtime", "codex", "--bin", bin)
	if b2, _ := os.ReadFile(cfg); code != 0 || string(b2) != string(b1) || !strings.Contains(out, "Codex already trusts") {
		t.Errorf("second install changed config.toml: %d %s", code, out)
	}

	// the user scope too; uninstalling the project keeps the user's trust
	if code, out, errs := runCLI("install", "--runtime", "codex", "--scope", "user", "--bin", bin); code != 0 {
		t.Fatalf("user install: %d %s%s", code, out, errs)
	}
	b, _ = os.ReadFile(cfg)
	if strings.Count(string(b), "trusted_hash = ") != 2*len(install.Wiring(hooks.Codex)) || strings.Count(string(b), "# >>> docket") != 1 || !strings.Contains(string(b), "[projects.") {
		t.Fatalf("both scopes:\n%s", b)
	}
	if code, out, errs := runCLI("uninstall", "--runtime", "codex"); code != 0 {
		t.Fatalf("uninstall: %d %s%s", code, out, errs)
	}
	b, _ = os.ReadFile(cfg)
	if strings.Count(string(b), "trusted_hash = ") != len(install.Wiring(hooks.Codex)) || strings.Contains(string(b), project) {
		t.Fatalf("after project uninstall:\n%s", b)
	}
	if code, out, errs := runCLI("uninstall", "--runtime", "codex", "--scope", "user"); code != 0 {
		t.Fatalf("uninstall: %d %s%s", code, out, errs)
	}
	if b, _ = os.ReadFile(cfg); string(b) != userCfg {
		t.Errorf("after uninstall %q, want %q", b, userCfg)
	}
	for _, args := range [][]string{{"--runtime", "claude"}, {"--runtime", "codex", "--scope", "user"}} {
		if code, _, errs := runCLI(append(append([]string{"install", "--bin", bin}, args...), "--trust-project")...); code != 2 || !strings.Contains(errs, "--trust-project is for") {
			t.Errorf("%v --trust-project: %d %s", args, code, errs)
		}
	}
}

// Gemini CLI's switch is hooksConfig: install says when it keeps docket's
// hooks from running, and leaves the user's setting alone.
func TestInstallGeminiSwitch(t *testing.T) {
	_, project, bin := wiringSandbox(t)
	settings := filepath.Join(project, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(`{"hooksConfig": {"enabled": false, "disabled": ["docket-gate"]}}`), 0o600)
	code, out, errs := runCLI("install", "--runtime", "gemini", "--bin", bin)
	if code != 0 || !strings.Contains(errs, "hooksConfig.enabled is false") || !strings.Contains(errs, `hooksConfig.disabled lists "docket-gate"`) {
		t.Fatalf("install: %d\n%s%s", code, out, errs)
	}
	b, _ := os.ReadFile(settings)
	if !strings.Contains(string(b), `"enabled": false`) {
		t.Errorf("install changed the user's switch:\n%s", b)
	}
	os.WriteFile(settings, []byte(`{}`), 0o600)
	if code, _, errs := runCLI("install", "--runtime", "gemini", "--bin", bin); code != 0 || strings.Contains(errs, "hooksConfig") {
		t.Errorf("install with hooks on: %d %s", code, errs)
	}
}
