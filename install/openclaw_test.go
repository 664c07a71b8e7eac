package install

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/server"
)

func TestOpenClawConfigPath(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "/u/.openclaw/openclaw.json"},
		{map[string]string{"OPENCLAW_HOME": "/oc"}, "/oc/.openclaw/openclaw.json"},
		{map[string]string{"OPENCLAW_HOME": "/oc", "OPENCLAW_CONFIG_PATH": "/etc/oc.json"}, "/etc/oc.json"},
	}
	for _, tt := range tests {
		if got := OpenClawConfigPath(func(k string) string { return tt.env[k] }, "/u"); got != tt.want {
			t.Errorf("%v: %s, want %s", tt.env, got, tt.want)
		}
	}
}

func planApply(t *testing.T, o OpenClawOptions, install bool) *Change {
	t.Helper()
	c, err := PlanOpenClaw(o, install)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(c, time.Now()); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPlanOpenClaw(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin")
	if _, err := WriteOpenClawPlugin(plugin); err != nil {
		t.Fatal(err)
	}
	if wrote, err := WriteOpenClawPlugin(plugin); err != nil || wrote {
		t.Fatalf("second plugin write: wrote %v, %v", wrote, err)
	}
	tests := []struct {
		name, before string
	}{
		{"no file", ""},
		{"empty object", "{}"},
		{"user config kept", `{
    "models": {"providers": {"x": {"baseUrl": "http://127.0.0.1:1/v1", "maxTokens": 4096.0}}},
    "plugins": {
        "allow": ["other"],
        "load": {"paths": ["/opt/other-plugin"]},
        "entries": {"other": {"enabled": true}, "docket": {"enabled": false, "config": {"hookLog": "/tmp/h.jsonl", "token": "old"}}}
    }
}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".openclaw", "openclaw.json")
			if tt.before != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				os.WriteFile(path, []byte(tt.before), 0o600)
			}
			o := OpenClawOptions{ConfigPath: path, PluginDir: plugin, ServerURL: "http://127.0.0.1:7420", Token: "dkt_new"}
			planApply(t, o, true)
			w, err := ReadOpenClawWiring(path)
			if err != nil {
				t.Fatal(err)
			}
			if !w.Wired || !w.Enabled || !w.Access || !w.Loaded || w.PluginDir != plugin || w.Token != "dkt_new" || w.ServerURL != o.ServerURL || !w.AllowListed {
				t.Fatalf("wiring %+v", w)
			}
			after, _ := os.ReadFile(path)
			if c, _ := PlanOpenClaw(o, true); c.Changed() {
				t.Fatalf("install again changes:\n%s", c.Diff())
			}
			// a token left out keeps the one there
			o2 := o
			o2.Token = ""
			if c, _ := PlanOpenClaw(o2, true); c.Changed() {
				t.Fatalf("install without a token changes:\n%s", c.Diff())
			}
			for _, keep := range []string{"4096.0", "/opt/other-plugin", `"other"`, "hookLog"} {
				if strings.Contains(tt.before, keep) && !strings.Contains(string(after), keep) {
					t.Errorf("install lost %s:\n%s", keep, after)
				}
			}
			var doc map[string]any
			if err := json.Unmarshal(after, &doc); err != nil {
				t.Fatal(err)
			}
			if paths := doc["plugins"].(map[string]any)["load"].(map[string]any)["paths"].([]any); strings.Count(string(after), plugin) != 1 || len(paths) == 0 {
				t.Errorf("load paths %v", paths)
			}
			// a token file replaces the inline token
			tf := filepath.Join(t.TempDir(), "openclaw.token")
			WriteOpenClawToken(tf, "dkt_file")
			o3 := o
			o3.TokenFile = tf
			planApply(t, o3, true)
			if b, _ := os.ReadFile(path); strings.Contains(string(b), "dkt_new") || strings.Contains(string(b), "dkt_file") {
				t.Fatalf("a token is inline in the config:\n%s", b)
			}
			if w, _ = ReadOpenClawWiring(path); w.Token != "dkt_file" || w.TokenFile != tf {
				t.Fatalf("token file wiring %+v", w)
			}
			if st, _ := os.Stat(tf); st.Mode().Perm() != 0o600 {
				t.Fatalf("token file mode %v", st.Mode().Perm())
			}
			planApply(t, o, false)
			w, _ = ReadOpenClawWiring(path)
			if w.Wired || w.Loaded {
				t.Fatalf("after uninstall: %+v", w)
			}
			rest, _ := os.ReadFile(path)
			if strings.Contains(string(rest), "docket") || strings.Contains(string(rest), plugin) {
				t.Fatalf("uninstall left docket behind:\n%s", rest)
			}
			for _, keep := range []string{"/opt/other-plugin", `"other"`, "4096.0"} {
				if strings.Contains(tt.before, keep) && !strings.Contains(string(rest), keep) {
					t.Errorf("uninstall lost %s:\n%s", keep, rest)
				}
			}
			if tt.before == "" || tt.before == "{}" {
				if strings.TrimSpace(string(rest)) != "{}" {
					t.Errorf("uninstall of a fresh install left %s", rest)
				}
			}
			if c, _ := PlanOpenClaw(o, false); c.Changed() {
				t.Fatalf("uninstall again changes:\n%s", c.Diff())
			}
		})
	}
}

func TestPlanOpenClawRefuses(t *testing.T) {
	plugin := t.TempDir()
	for _, tt := range []struct{ name, body, want string }{
		{"json5 comments", "{\n  // my config\n  \"plugins\": {}\n}\n", "JSON5"},
		{"plugins not an object", `{"plugins": []}`, `"plugins" is not an object`},
		{"load paths not a list", `{"plugins": {"load": {"paths": "x"}}}`, `"paths" is not a list`},
		{"allow not a list", `{"plugins": {"allow": "docket"}}`, `"plugins.allow" is not a list`},
		{"not an object", `[]`, "not a JSON object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "openclaw.json")
			os.WriteFile(path, []byte(tt.body), 0o600)
			_, err := PlanOpenClaw(OpenClawOptions{ConfigPath: path, PluginDir: plugin, ServerURL: "http://127.0.0.1:1"}, true)
			var se *SettingsError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want a SettingsError naming %q", err, tt.want)
			}
			if b, _ := os.ReadFile(path); string(b) != tt.body {
				t.Fatal("the file changed")
			}
		})
	}
	if _, err := PlanOpenClaw(OpenClawOptions{ConfigPath: filepath.Join(t.TempDir(), "x.json"), PluginDir: "rel", ServerURL: "u"}, true); err == nil {
		t.Fatal("a relative plugin directory was accepted")
	}
}

func TestDoctorOpenClaw(t *testing.T) {
	root := t.TempDir()
	h, _ := home.At(filepath.Join(root, "docket"))
	os.MkdirAll(filepath.Join(h.Root, "keys"), 0o700)
	toks := server.OpenTokens(h)
	_, live, err := toks.Create("openclaw", server.RoleRuntime, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, revoked, _ := toks.Create("old", server.RoleRuntime, time.Now())
	toks.Revoke("old", time.Now())
	_, boundHere, err := toks.CreateBound("openclaw-here", server.RoleRuntime, []string{"acme", OpenClawDefaultWorkspace}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, boundElsewhere, _ := toks.CreateBound("openclaw-acme", server.RoleRuntime, []string{"acme", "OpenClaw"}, time.Now())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			w.Write([]byte(`{"status":"ok"}`))
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	plugin := filepath.Join(h.Root, "openclaw-plugin")
	WriteOpenClawPlugin(plugin)
	cfg := filepath.Join(root, "oc", "openclaw.json")
	env := &Env{Home: h, UserHome: root, Getenv: func(k string) string {
		if k == "OPENCLAW_CONFIG_PATH" {
			return cfg
		}
		return ""
	}}
	status := func() (Status, string) {
		rs := checkOpenClaw(env)
		worst, detail := OK, ""
		for _, r := range rs {
			if r.Status == Fail || (r.Status == Warn && worst != Fail) || (r.Status == Skip && worst == OK) {
				worst, detail = r.Status, r.Detail
			}
		}
		return worst, detail
	}
	if s, d := status(); s != Skip {
		t.Fatalf("no config: %s %s", s, d)
	}
	tokenFile := OpenClawTokenFile(h)
	if err := WriteOpenClawToken(tokenFile, live); err != nil {
		t.Fatal(err)
	}
	o := OpenClawOptions{ConfigPath: cfg, PluginDir: plugin, ServerURL: srv.URL, TokenFile: tokenFile}
	planApply(t, o, true)
	if s, d := status(); s != OK {
		t.Fatalf("wired: %s %s", s, d)
	}
	WriteOpenClawToken(tokenFile, boundHere)
	if s, d := status(); s != OK {
		t.Fatalf("wired with a token bound to the plugin's workspace: %s %s", s, d)
	}
	WriteOpenClawToken(tokenFile, live)
	for _, tt := range []struct {
		name   string
		mutate func()
		want   Status
		detail string
	}{
		{"revoked token", func() { WriteOpenClawToken(tokenFile, revoked) }, Fail, "not a live token"},
		{"token bound to other workspaces", func() { WriteOpenClawToken(tokenFile, boundElsewhere) }, Fail, `not the plugin's workspace "openclaw"`},
		{"token file gone", func() { os.Remove(tokenFile) }, Fail, "unreadable"},
		{"token inline in the config", func() {
			o2 := o
			o2.TokenFile, o2.Token = "", live
			planApply(t, o2, true)
		}, Warn, "inline"},
		{"token file readable by others", func() {
			WriteOpenClawToken(tokenFile, live)
			planApply(t, o, true)
			os.Chmod(tokenFile, 0o644)
		}, Warn, "readable by others"},
		{"server down", func() { os.Chmod(tokenFile, 0o600); o.ServerURL = "http://127.0.0.1:1"; planApply(t, o, true) }, Warn, "does not answer"},
		{"access off", func() {
			o.ServerURL = srv.URL
			planApply(t, o, true)
			b, _ := os.ReadFile(cfg)
			os.WriteFile(cfg, []byte(strings.Replace(string(b), `"allowConversationAccess": true`, `"allowConversationAccess": false`, 1)), 0o600)
		}, Fail, "allowConversationAccess"},
		{"disabled", func() {
			planApply(t, o, true)
			b, _ := os.ReadFile(cfg)
			os.WriteFile(cfg, []byte(strings.Replace(string(b), `"enabled": true`, `"enabled": false`, 1)), 0o600)
		}, Fail, "disabled"},
		{"plugin gone", func() { planApply(t, o, true); os.Remove(filepath.Join(plugin, "index.js")) }, Fail, "plugin entry missing"},
		{"plugin edited", func() {
			WriteOpenClawPlugin(plugin)
			os.WriteFile(filepath.Join(plugin, "index.js"), []byte("export default {register(){}}"), 0o644)
		}, Warn, "not this docket's"},
	} {
		tt.mutate()
		if s, d := status(); s != tt.want || !strings.Contains(d, tt.detail) {
			t.Errorf("%s: %s %q, want %s naming %q", tt.name, s, d, tt.want, tt.detail)
		}
	}
}
