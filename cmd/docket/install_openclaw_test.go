package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/install"
)

func TestInstallOpenClawCommand(t *testing.T) {
	homeDir, _, _ := wiringSandbox(t)
	ochome := filepath.Join(homeDir, "oc")
	t.Setenv("OPENCLAW_HOME", ochome)
	t.Setenv("OPENCLAW_CONFIG_PATH", "")
	cfg := filepath.Join(ochome, ".openclaw", "openclaw.json")

	if code, _, errs := runCLI("install", "--runtime", "openclaw"); code != 1 || !strings.Contains(errs, "docket init") {
		t.Fatalf("before init: %d %s", code, errs)
	}
	if code, _, errs := runCLI("init"); code != 0 {
		t.Fatalf("init: %s", errs)
	}
	if code, _, errs := runCLI("install", "--runtime", "openclaw", "--scope", "user"); code != 2 || !strings.Contains(errs, "--config") {
		t.Fatalf("--scope: %d %s", code, errs)
	}
	code, out, errs := runCLI("install", "--runtime", "openclaw", "--server", "http://127.0.0.1:7431")
	if code != 0 || !strings.Contains(out, "wired docket's plugin into "+cfg) || !strings.Contains(errs, "created a runtime token") {
		t.Fatalf("install: %d\n%s%s", code, out, errs)
	}
	w, err := install.ReadOpenClawWiring(cfg)
	if err != nil || !w.Wired || !w.Loaded || !strings.HasPrefix(w.Token, "dkt_") || w.ServerURL != "http://127.0.0.1:7431" {
		t.Fatalf("wiring %+v %v", w, err)
	}
	// the token is not in the config, where the agent's tools may read it
	if b, _ := os.ReadFile(cfg); strings.Contains(string(b), w.Token) || w.TokenFile == "" {
		t.Fatalf("token inline in the config:\n%s", b)
	}
	if st, err := os.Stat(w.TokenFile); err != nil || st.Mode().Perm() != 0o600 || !strings.HasSuffix(w.TokenFile, "/keys/openclaw.token") {
		t.Fatalf("token file %s: %v %v", w.TokenFile, st, err)
	}
	// again: the live token is kept, no second token is made
	code, out, errs = runCLI("install", "--runtime", "openclaw", "--server", "http://127.0.0.1:7431")
	if code != 0 || !strings.Contains(out, "already wired") || strings.Contains(errs, "created") {
		t.Fatalf("second install: %d\n%s%s", code, out, errs)
	}
	if w2, _ := install.ReadOpenClawWiring(cfg); w2.Token != w.Token {
		t.Fatal("the token changed on a second install")
	}
	code, out, _ = runCLI("doctor")
	if !strings.Contains(out, "openclaw") {
		t.Fatalf("doctor has no openclaw check:\n%s", out)
	}
	// a revoked token is replaced
	if code, _, errs := runCLI("token", "revoke", "openclaw"); code != 0 {
		t.Fatalf("revoke: %s", errs)
	}
	code, _, errs = runCLI("install", "--runtime", "openclaw", "--server", "http://127.0.0.1:7431")
	if w3, _ := install.ReadOpenClawWiring(cfg); code != 0 || w3.Token == w.Token || !strings.Contains(errs, "created") {
		t.Fatalf("install after revoke: %d %s", code, errs)
	}
	code, out, _ = runCLI("uninstall", "--runtime", "openclaw")
	if code != 0 || !strings.Contains(out, "removed docket's plugin") {
		t.Fatalf("uninstall: %d %s", code, out)
	}
	if w4, _ := install.ReadOpenClawWiring(cfg); w4.Wired || w4.Loaded {
		t.Fatalf("after uninstall %+v", w4)
	}
	if _, err := os.Stat(w.TokenFile); err == nil {
		t.Fatal("uninstall left the token file")
	}
	if code, out, _ = runCLI("uninstall", "--runtime", "openclaw"); code != 0 || !strings.Contains(out, "not wired") {
		t.Fatalf("second uninstall: %d %s", code, out)
	}
}
