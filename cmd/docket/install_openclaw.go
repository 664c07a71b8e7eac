package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/docket/docket/install"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/server"
)

// openclawFlags are install's and uninstall's flags for --runtime openclaw.
type openclawFlags struct {
	config, server, token, pluginDir string
}

func (f *openclawFlags) register(fs *flag.FlagSet, withInstall bool) {
	fs.StringVar(&f.config, "config", "", "")
	if withInstall {
		fs.StringVar(&f.server, "server", "", "")
		fs.StringVar(&f.token, "token", "", "")
		fs.StringVar(&f.pluginDir, "plugin-dir", "", "")
	}
}

func (f *openclawFlags) configPath() (string, error) {
	if f.config != "" {
		return filepath.Abs(f.config)
	}
	uh, err := os.UserHomeDir()
	if err != nil && os.Getenv("OPENCLAW_HOME") == "" && os.Getenv("OPENCLAW_CONFIG_PATH") == "" {
		return "", fmt.Errorf("locate home directory: %w", err)
	}
	return install.OpenClawConfigPath(os.Getenv, uh), nil
}

func installOpenClaw(fs *flag.FlagSet, f *wiringFlags, stdout, stderr io.Writer) error {
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("install takes no arguments, got %q", fs.Arg(0)), "")
	}
	if f.scope != "project" || f.trustProject || f.bin != "" {
		return usageError("--scope, --bin and --trust-project do not apply to --runtime openclaw", "OpenClaw has one config file; name it with --config")
	}
	oc := f.openclaw
	path, err := oc.configPath()
	if err != nil {
		return err
	}
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	if _, err := os.Stat(h.Root); err != nil {
		return fmt.Errorf("state root %s: %w\nhint: run 'docket init' first", h.Root, err)
	}
	dir := oc.pluginDir
	if dir == "" {
		dir = install.OpenClawPluginDir(h)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return fmt.Errorf("resolve --plugin-dir: %w", err)
	}
	url := oc.server
	if url == "" {
		url = "http://127.0.0.1:7420"
		if b, err := os.ReadFile(filepath.Join(h.RunDir(), "serve.json")); err == nil {
			var info ServeInfo
			if json.Unmarshal(b, &info) == nil && info.URL != "" {
				url = info.URL
			}
		}
	}
	token, created := oc.token, false
	if token == "" {
		old := install.OpenClawToken(path)
		if p, err := server.OpenTokens(h).Authenticate(old); old != "" && err == nil && p.Role.Allows(server.RoleRuntime) {
			token = old
		} else if !f.dryRun {
			if token, err = newOpenClawToken(h); err != nil {
				return err
			}
			created = true
		} else {
			token = "dkt_(a new runtime token)"
		}
	}
	tokenFile := install.OpenClawTokenFile(h)
	if !f.dryRun {
		if err := install.WriteOpenClawToken(tokenFile, token); err != nil {
			return err
		}
		if wrote, err := install.WriteOpenClawPlugin(dir); err != nil {
			return err
		} else if wrote {
			fmt.Fprintf(stdout, "wrote docket's OpenClaw plugin to %s\n", dir)
		}
	}
	c, err := install.PlanOpenClaw(install.OpenClawOptions{ConfigPath: path, PluginDir: dir, ServerURL: url, TokenFile: tokenFile}, true)
	if err != nil {
		return err
	}
	if err := applyChange(c, f.dryRun, stdout, fmt.Sprintf("wired docket's plugin into %s (server %s)", path, url),
		fmt.Sprintf("already wired: %s", path)); err != nil {
		return err
	}
	if created {
		fmt.Fprintln(stderr, "docket: note: created a runtime token for OpenClaw; it is kept only in "+tokenFile+" (revoke it with 'docket token revoke')")
	}
	if !f.dryRun {
		fmt.Fprintln(stderr, "docket: note: OpenClaw loads plugins in 'openclaw agent --local' and the Gateway, not in 'openclaw agent exec'; 'docket serve' must be running")
	}
	return nil
}

// newOpenClawToken creates a runtime token named openclaw (openclaw-2, …
// when the name is taken).
func newOpenClawToken(h home.Home) (string, error) {
	toks := server.OpenTokens(h)
	for i := 1; i < 100; i++ {
		name := "openclaw"
		if i > 1 {
			name = fmt.Sprintf("openclaw-%d", i)
		}
		_, secret, err := toks.Create(name, server.RoleRuntime, time.Now())
		if errors.Is(err, server.ErrTokenName) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("create runtime token: %w", err)
		}
		return secret, nil
	}
	return "", errors.New("create runtime token: names openclaw … openclaw-99 are taken")
}

func uninstallOpenClaw(fs *flag.FlagSet, f *wiringFlags, stdout io.Writer) error {
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("uninstall takes no arguments, got %q", fs.Arg(0)), "")
	}
	if f.scope != "project" {
		return usageError("--scope does not apply to --runtime openclaw", "name OpenClaw's config with --config")
	}
	path, err := f.openclaw.configPath()
	if err != nil {
		return err
	}
	w, _ := install.ReadOpenClawWiring(path)
	c, err := install.PlanOpenClaw(install.OpenClawOptions{ConfigPath: path}, false)
	if err != nil {
		return err
	}
	if err := applyChange(c, f.dryRun, stdout, fmt.Sprintf("removed docket's plugin from %s", path), fmt.Sprintf("docket's plugin is not wired in %s", path)); err != nil {
		return err
	}
	// the token file install wrote goes too; the token stays until revoked
	if h, err := home.Resolve(); err == nil && !f.dryRun && w.TokenFile == install.OpenClawTokenFile(h) {
		if err := os.Remove(w.TokenFile); err == nil {
			fmt.Fprintf(stdout, "removed %s (the token itself stays valid until 'docket token revoke')\n", w.TokenFile)
		}
	}
	return nil
}
