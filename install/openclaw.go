package install

// OpenClaw has no hook JSON: docket runs inside it as a plugin
// (adapters/openclaw) that calls `docket serve`. Wiring it means writing
// the plugin's files where OpenClaw can load them and, in OpenClaw's
// config (openclaw.json), the plugin's load path, its entry (enabled,
// allowConversationAccess for before_agent_finalize and
// before_prompt_build) and its config: the server URL and a runtime
// token.

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/adapters/openclaw"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/server"
)

// OpenClawPluginID is the plugin's id in OpenClaw's config.
const OpenClawPluginID = openclaw.ID

// OpenClawOptions says where and what to wire.
type OpenClawOptions struct {
	ConfigPath string // openclaw.json
	PluginDir  string // absolute directory holding the plugin's files
	ServerURL  string // docket serve's URL
	// TokenFile, when set, is written as the plugin's tokenFile and any
	// inline token is taken out; else Token ("" keeps the one there).
	TokenFile string
	Token     string
}

// OpenClawConfigPath is the config file OpenClaw reads:
// $OPENCLAW_CONFIG_PATH, else $OPENCLAW_HOME/.openclaw/openclaw.json,
// else ~/.openclaw/openclaw.json.
func OpenClawConfigPath(getenv func(string) string, userHome string) string {
	if p := getenv("OPENCLAW_CONFIG_PATH"); p != "" {
		return p
	}
	if h := getenv("OPENCLAW_HOME"); h != "" {
		userHome = h
	}
	return filepath.Join(userHome, ".openclaw", "openclaw.json")
}

// OpenClawPluginDir is where install writes the plugin by default: under
// the state root, where the judge denies an agent's writes.
func OpenClawPluginDir(h home.Home) string { return filepath.Join(h.Root, "openclaw-plugin") }

// WriteOpenClawPlugin writes the embedded plugin files into dir, each
// only when its content differs. It reports whether it wrote any.
func WriteOpenClawPlugin(dir string) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("create plugin directory: %w", err)
	}
	wrote := false
	for _, n := range openclaw.Names {
		data, err := openclaw.Files.ReadFile(n)
		if err != nil {
			return false, err
		}
		p := filepath.Join(dir, n)
		if cur, err := os.ReadFile(p); err == nil && bytes.Equal(cur, data) {
			continue
		}
		if err := home.WriteFileAtomic(p, data, 0o644); err != nil {
			return false, fmt.Errorf("write plugin file: %w", err)
		}
		wrote = true
	}
	return wrote, nil
}

// OpenClawTokenFile is where install keeps the plugin's token: among
// docket's keys, which the judge keeps from every tool call.
func OpenClawTokenFile(h home.Home) string { return filepath.Join(h.KeysDir(), "openclaw.token") }

// OpenClawToken returns the docket token the config at path gives the
// plugin, inline or through its tokenFile ("" when none).
func OpenClawToken(path string) string {
	w, err := ReadOpenClawWiring(path)
	if err != nil {
		return ""
	}
	return w.Token
}

// WriteOpenClawToken writes token to path (0600), replacing what is
// there only when it differs.
func WriteOpenClawToken(path, token string) error {
	if cur, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(cur)) == token {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create token directory: %w", err)
	}
	if err := home.WriteFileAtomic(path, []byte(token+"\n"), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// PlanOpenClaw computes the edit of OpenClaw's config: wire (install)
// or unwire docket's plugin. Every other key is kept; running it on its
// own output plans no change. A missing file is created on install and
// left alone on uninstall.
func PlanOpenClaw(o OpenClawOptions, install bool) (*Change, error) {
	c := &Change{Path: o.ConfigPath}
	old, err := os.ReadFile(o.ConfigPath)
	switch {
	case err == nil:
		c.Existed, c.Old = true, old
	case errors.Is(err, fs.ErrNotExist):
		if !install {
			return c, nil
		}
	default:
		return nil, &SettingsError{Path: o.ConfigPath, Err: err}
	}
	if install && (!filepath.IsAbs(o.PluginDir) || o.ServerURL == "") {
		return nil, fmt.Errorf("plan openclaw config: plugin directory %q must be absolute and the server URL set", o.PluginDir)
	}
	doc, err := parseDocument(old)
	if err != nil {
		note := ""
		if bytes.Contains(old, []byte("//")) || bytes.Contains(old, []byte("/*")) {
			note = "; OpenClaw reads JSON5, but docket edits only plain JSON it can write back whole"
		}
		return nil, &SettingsError{Path: o.ConfigPath, Err: fmt.Errorf("%w (fix it or move it aside; docket will not overwrite it%s)", err, note)}
	}
	if err := editOpenClaw(doc, o, install, c); err != nil {
		return nil, &SettingsError{Path: o.ConfigPath, Err: err}
	}
	c.New = c.Old
	if out := encodeDocument(doc, detectIndent(old)); !c.Existed || !sameJSON(old, out) {
		c.New = out
	}
	return c, nil
}

func editOpenClaw(doc *object, o OpenClawOptions, install bool, c *Change) error {
	plugins, err := childObject(doc, "plugins", install)
	if err != nil || plugins == nil {
		return err
	}
	load, err := childObject(plugins, "load", install)
	if err != nil {
		return err
	}
	if load != nil {
		paths, err := stringList(load, "paths")
		if err != nil {
			return err
		}
		kept := []any{}
		for _, p := range paths {
			if p == o.PluginDir || isDocketPluginDir(p) {
				continue
			}
			kept = append(kept, p)
		}
		if install {
			kept = append(kept, o.PluginDir)
		}
		if len(kept) > 0 || install {
			load.set("paths", kept)
		} else {
			load.del("paths")
		}
		if len(load.members) == 0 {
			plugins.del("load")
		}
	}
	// an allow list, when the user keeps one, must name the plugin
	if v, ok := plugins.get("allow"); ok {
		list, isList := v.([]any)
		if !isList {
			return errors.New(`"plugins.allow" is not a list`)
		}
		kept := []any{}
		for _, x := range list {
			if x != OpenClawPluginID {
				kept = append(kept, x)
			}
		}
		if install {
			kept = append(kept, OpenClawPluginID)
		}
		plugins.set("allow", kept)
	}
	entries, err := childObject(plugins, "entries", install)
	if err != nil {
		return err
	}
	if !install {
		if entries != nil {
			if _, ok := entries.get(OpenClawPluginID); ok {
				entries.del(OpenClawPluginID)
				c.Removed++
			}
			if len(entries.members) == 0 {
				plugins.del("entries")
			}
		}
		if len(plugins.members) == 0 {
			doc.del("plugins")
		}
		return nil
	}
	entry, err := childObject(entries, OpenClawPluginID, true)
	if err != nil {
		return err
	}
	entry.set("enabled", true)
	hooksObj, err := childObject(entry, "hooks", true)
	if err != nil {
		return err
	}
	hooksObj.set("allowConversationAccess", true)
	cfg, err := childObject(entry, "config", true)
	if err != nil {
		return err
	}
	cfg.set("serverUrl", o.ServerURL)
	if o.TokenFile != "" {
		cfg.set("tokenFile", o.TokenFile)
		cfg.del("token")
	} else if o.Token != "" {
		cfg.set("token", o.Token)
	}
	c.Added++
	return nil
}

// isDocketPluginDir reports whether dir holds docket's plugin (its
// manifest names the docket id).
func isDocketPluginDir(p any) bool {
	dir, ok := p.(string)
	if !ok {
		return false
	}
	b, err := os.ReadFile(filepath.Join(dir, "openclaw.plugin.json"))
	return err == nil && bytes.Contains(b, []byte(`"id": "`+OpenClawPluginID+`"`))
}

// childObject returns o[key] as an object, creating it when create is
// set (nil, nil when it is absent and not created).
func childObject(o *object, key string, create bool) (*object, error) {
	v, ok := o.get(key)
	if !ok {
		if !create {
			return nil, nil
		}
		c := &object{}
		o.set(key, c)
		return c, nil
	}
	c, isObj := v.(*object)
	if !isObj {
		return nil, fmt.Errorf("%q is not an object", key)
	}
	return c, nil
}

func stringList(o *object, key string) ([]any, error) {
	v, ok := o.get(key)
	if !ok {
		return nil, nil
	}
	l, isList := v.([]any)
	if !isList {
		return nil, fmt.Errorf("%q is not a list", key)
	}
	return l, nil
}

func objPath(o *object, keys ...string) *object {
	for _, k := range keys {
		v, ok := o.get(k)
		if !ok {
			return nil
		}
		if o, ok = v.(*object); !ok {
			return nil
		}
	}
	return o
}

func getString(o *object, key string) (string, bool) {
	v, ok := o.get(key)
	if !ok {
		return "", false
	}
	s, ok := v.(string)
	return s, ok
}

func getBool(o *object, key string) bool {
	v, _ := o.get(key)
	b, _ := v.(bool)
	return b
}

// OpenClawWiring is what OpenClaw's config says about docket's plugin.
type OpenClawWiring struct {
	Wired       bool   // an entry for the plugin exists
	Enabled     bool   // entries.docket.enabled
	Access      bool   // entries.docket.hooks.allowConversationAccess
	Loaded      bool   // a plugins.load.paths entry holds the plugin
	PluginDir   string // that entry
	ServerURL   string
	Token       string // inline, or read from TokenFile
	TokenFile   string
	Workspace   string // config.workspace, else the plugin's default (openclaw)
	AllowListed bool   // no plugins.allow, or it names docket
}

// OpenClawDefaultWorkspace is the workspace_id the plugin sends when its
// config names none (adapters/openclaw/index.js).
const OpenClawDefaultWorkspace = "openclaw"

// ReadOpenClawWiring reads docket's wiring from OpenClaw's config at path.
func ReadOpenClawWiring(path string) (OpenClawWiring, error) {
	var w OpenClawWiring
	b, err := os.ReadFile(path)
	if err != nil {
		return w, err
	}
	doc, err := parseDocument(b)
	if err != nil {
		return w, &SettingsError{Path: path, Err: err}
	}
	plugins := objPath(doc, "plugins")
	if plugins == nil {
		return w, nil
	}
	w.AllowListed = true
	if v, ok := plugins.get("allow"); ok {
		w.AllowListed = false
		if l, ok := v.([]any); ok {
			for _, x := range l {
				if x == OpenClawPluginID {
					w.AllowListed = true
				}
			}
		}
	}
	if load := objPath(plugins, "load"); load != nil {
		paths, _ := stringList(load, "paths")
		for _, p := range paths {
			if isDocketPluginDir(p) {
				w.Loaded, w.PluginDir = true, p.(string)
			}
		}
	}
	e := objPath(plugins, "entries", OpenClawPluginID)
	if e == nil {
		return w, nil
	}
	w.Wired = true
	w.Enabled = getBool(e, "enabled")
	if h := objPath(e, "hooks"); h != nil {
		w.Access = getBool(h, "allowConversationAccess")
	}
	w.Workspace = OpenClawDefaultWorkspace
	if c := objPath(e, "config"); c != nil {
		if ws, _ := getString(c, "workspace"); ws != "" {
			w.Workspace = ws
		}
		w.ServerURL, _ = getString(c, "serverUrl")
		w.Token, _ = getString(c, "token")
		if f, _ := getString(c, "tokenFile"); f != "" && w.Token == "" {
			w.TokenFile = f
			if b, err := os.ReadFile(f); err == nil {
				w.Token = strings.TrimSpace(string(b))
			}
		}
	}
	return w, nil
}

// checkOpenClaw: when OpenClaw's config wires docket's plugin, the
// plugin is loadable, enabled, may see the final answer, and holds a
// live runtime token for a server that answers.
func checkOpenClaw(env *Env) []Result {
	getenv := env.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	path := OpenClawConfigPath(getenv, env.UserHome)
	w, err := ReadOpenClawWiring(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return one(skip("no OpenClaw config at " + path))
	case err != nil:
		return one(fail(err.Error(), "fix the file, then run 'docket install --runtime openclaw'"))
	case !w.Wired:
		return one(skip("OpenClaw's config " + path + " does not wire docket"))
	}
	fix := "run 'docket install --runtime openclaw'"
	var out []Result
	if !w.Enabled {
		out = append(out, fail("plugin docket is disabled in "+path, fix))
	}
	if !w.Loaded {
		out = append(out, fail("no plugins.load.paths entry of "+path+" holds docket's plugin", fix))
	} else if _, err := os.Stat(filepath.Join(w.PluginDir, "index.js")); err != nil {
		out = append(out, fail("plugin entry missing: "+err.Error(), fix))
	} else if cur, err := os.ReadFile(filepath.Join(w.PluginDir, "index.js")); err == nil {
		if want, _ := openclaw.Files.ReadFile("index.js"); !bytes.Equal(cur, want) {
			out = append(out, warn("the plugin in "+w.PluginDir+" is not this docket's", fix))
		}
	}
	if !w.AllowListed {
		out = append(out, fail("plugins.allow in "+path+" does not name docket: OpenClaw will not load it", fix))
	}
	if !w.Access {
		out = append(out, fail("allowConversationAccess is off: OpenClaw runs no claim gate (before_agent_finalize) for docket", fix))
	}
	if w.Token == "" {
		out = append(out, fail("no docket token in the plugin's config (or its tokenFile "+w.TokenFile+" is unreadable): every tool call is blocked", fix+" (it creates a runtime token)"))
	} else if p, err := server.OpenTokens(env.Home).Authenticate(w.Token); err != nil {
		out = append(out, fail("the plugin's token is not a live token of this state root ("+err.Error()+"): every tool call is blocked", fix+" --token NEW (docket token create --role runtime)"))
	} else if !p.Role.Allows(server.RoleRuntime) {
		out = append(out, fail("the plugin's token has role "+string(p.Role), fix))
	} else if !p.MayUseWorkspace(w.Workspace) {
		out = append(out, fail(fmt.Sprintf("the plugin's token is bound to workspaces %q, not the plugin's workspace %q: every tool call is refused", p.Workspaces, w.Workspace),
			fmt.Sprintf("set the plugin's workspace, or %s --token NEW (docket token create --role runtime --workspace %s)", fix, w.Workspace)))
	}
	if w.TokenFile == "" && w.Token != "" {
		out = append(out, warn("the plugin's token is inline in "+path+", which the agent's tools may read", fix+" (it moves the token to "+OpenClawTokenFile(env.Home)+")"))
	} else if st, err := os.Stat(w.TokenFile); err == nil && st.Mode().Perm()&0o077 != 0 {
		out = append(out, warn("the token file "+w.TokenFile+" is readable by others", "chmod 600 "+w.TokenFile))
	}
	if w.ServerURL == "" {
		out = append(out, fail("no serverUrl in the plugin's config", fix))
	} else if err := pingServer(w.ServerURL); err != nil {
		out = append(out, warn("docket serve at "+w.ServerURL+" does not answer ("+err.Error()+"): OpenClaw's side-effecting calls are blocked until it does", "start 'docket serve'"))
	}
	if len(out) == 0 {
		out = append(out, ok("plugin wired in "+path+" ("+w.PluginDir+", "+w.ServerURL+")"))
	}
	return out
}

// pingServer asks a docket server's /healthz, on loopback only.
func pingServer(url string) error {
	u, err := neturl.Parse(url)
	if err != nil || u.Host == "" {
		return fmt.Errorf("not a URL")
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("not checked: not a loopback address")
	}
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(strings.TrimSuffix(url, "/") + "/healthz")
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/healthz answered %d", resp.StatusCode)
	}
	return nil
}
