package install

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docket/docket/hooks"

	"github.com/pelletier/go-toml/v2"
)

// Codex CLI (0.169) runs a hook only when three things hold, all in the
// user's config.toml ($CODEX_HOME/config.toml, default ~/.codex):
//
//   - the project is trusted ([projects."<dir>"] trust_level = "trusted"),
//     for hooks in the project's .codex/hooks.json;
//   - the hook entry is trusted: [hooks.state."<hooks.json>:<event>:<i>:<j>"]
//     trusted_hash equals the entry's current hash (i is the matcher
//     group's index in the event's list, j the handler's in the group);
//   - it is not switched off there (enabled = false).
//
// The hash is Codex's own (codex-rs/hooks discovery, command_hook_hash):
// "sha256:" and the hex SHA-256 of the compact JSON, keys sorted, of
// {"event_name": <event label>, "matcher": <the group's matcher, for the
// events that have one>, "hooks": [{"type": "command", "command": …,
// "timeout": <seconds, default 600>, "async": <bool>, "statusMessage": …
// when set}]}. TestCodexHookHash checks it against hashes Codex 0.169.0
// itself reported.
//
// Inside Codex's workspace-write sandbox a shell command may write only
// under the workspace and sandbox_workspace_write.writable_roots, so
// `docket validate` cannot append to a state root outside them.
//
// docket install --runtime codex writes what is missing of the hook trust
// and the writable root into one block of config.toml, between the
// markers below, and uninstall removes exactly that block. The project's
// own trust is the user's decision: it is written only when asked
// (TrustProject), and otherwise printed as a note.
//
// Codex can run a command in a terminal and type into it later
// (exec_command with tty, then write_stdin), and runs no hook for what
// it types. Install turns its terminal sessions off: unified_exec_tty =
// false in [features], in docket's block, or, when the user has a
// [features] table, as one marked line right under its header
// (codexTTYLine), the one line uninstall takes out of it.

// Markers of docket's block in Codex's config.toml.
const (
	codexBlockBegin = "# >>> docket (written by `docket install --runtime codex`; `docket uninstall --runtime codex` removes it)"
	codexBlockEnd   = "# <<< docket"
)

// codexTTYLine is the [features] line docket writes into a user's table.
const codexTTYLine = "unified_exec_tty = false # docket: Codex runs no hook for what it types into a running command (write_stdin)"

var (
	codexTTYLineRE  = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(codexTTYLine) + `\n?`)
	codexFeaturesRE = regexp.MustCompile(`(?m)^[ \t]*\[[ \t]*features[ \t]*\][ \t]*(?:#.*)?\n`)
)

var codexBlock = regexp.MustCompile(`(?s)(?:^|\n)\n?` + regexp.QuoteMeta(codexBlockBegin) + `\n.*?` + regexp.QuoteMeta(codexBlockEnd) + `\n?`)

// codexEventLabels are Codex's hooks.json event names and the labels of
// its trust keys; codexMatcherEvents those whose matcher counts.
var codexEventLabels = map[string]string{
	"PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request", "PostToolUse": "post_tool_use",
	"PreCompact": "pre_compact", "PostCompact": "post_compact", "SessionStart": "session_start",
	"UserPromptSubmit": "user_prompt_submit", "SubagentStart": "subagent_start", "SubagentStop": "subagent_stop",
	"Stop": "stop",
}

var codexMatcherEvents = map[string]bool{
	"PreToolUse": true, "PermissionRequest": true, "PostToolUse": true, "PreCompact": true,
	"PostCompact": true, "SessionStart": true, "SubagentStart": true, "SubagentStop": true,
}

// CodexHandler is one command handler of a Codex hooks.json, as Codex
// hashes it.
type CodexHandler struct {
	Event         string // hooks.json event name (PreToolUse, …)
	Matcher       *string
	Command       string
	TimeoutSec    *int64 // nil when unset (Codex uses 600; 0 counts as 1)
	Async         bool
	StatusMessage *string
	Group, Index  int // the matcher group's index in the event list, the handler's in the group
}

// CodexHookHash is the trusted_hash Codex expects for h.
func CodexHookHash(h CodexHandler) string {
	timeout := int64(600)
	if h.TimeoutSec != nil {
		timeout = max(*h.TimeoutSec, 1)
	}
	var b strings.Builder
	b.WriteString(`{"event_name":`)
	writeJSONString(&b, codexEventLabels[h.Event])
	b.WriteString(`,"hooks":[{"async":`)
	b.WriteString(strconv.FormatBool(h.Async))
	b.WriteString(`,"command":`)
	writeJSONString(&b, h.Command)
	if h.StatusMessage != nil {
		b.WriteString(`,"statusMessage":`)
		writeJSONString(&b, *h.StatusMessage)
	}
	b.WriteString(`,"timeout":`)
	b.WriteString(strconv.FormatInt(timeout, 10))
	b.WriteString(`,"type":"command"}]`)
	if h.Matcher != nil && codexMatcherEvents[h.Event] {
		b.WriteString(`,"matcher":`)
		writeJSONString(&b, *h.Matcher)
	}
	b.WriteString("}")
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// writeJSONString writes s as serde_json does: only '"', '\\' and
// control characters escaped (\b \f \n \r \t, else \u00xx), everything
// else, U+2028 and HTML characters included, as is.
func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// CodexHandlers returns the command handlers of a Codex hooks.json with
// their positions, for the events Codex knows.
func CodexHandlers(settings []byte) ([]CodexHandler, error) {
	h, err := hooksObject(settings)
	if h == nil || err != nil {
		return nil, err
	}
	var out []CodexHandler
	for _, m := range h.members {
		if _, known := codexEventLabels[m.key]; !known {
			continue
		}
		groups, _ := m.val.([]any)
		for gi, gv := range groups {
			g, ok := gv.(*object)
			if !ok {
				continue
			}
			var matcher *string
			if mv, ok := g.get("matcher"); ok {
				if s, ok := mv.(string); ok {
					matcher = &s
				}
			}
			hv, _ := g.get("hooks")
			list, _ := hv.([]any)
			for hi, hd := range list {
				o, ok := hd.(*object)
				if !ok {
					continue
				}
				if t, _ := o.get("type"); t != "command" {
					continue
				}
				c := CodexHandler{Event: m.key, Matcher: matcher, Group: gi, Index: hi}
				cv, _ := o.get("command")
				c.Command, _ = cv.(string)
				if tv, ok := o.get("timeout"); ok {
					if n, ok := tv.(interface{ Int64() (int64, error) }); ok {
						if v, err := n.Int64(); err == nil {
							c.TimeoutSec = &v
						}
					}
				}
				if av, ok := o.get("async"); ok {
					c.Async, _ = av.(bool)
				}
				if sv, ok := o.get("statusMessage"); ok {
					if s, ok := sv.(string); ok {
						c.StatusMessage = &s
					}
				}
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// CodexTrust is one trust entry docket's hooks need.
type CodexTrust struct {
	Key  string // hooks.state key
	Hash string // trusted_hash
	Bin  string // which docket binary the entry runs
}

// CodexTrustEntries returns the hooks.state entries that trust docket's
// handlers in the Codex hooks.json at hooksPath (settings is its content).
func CodexTrustEntries(hooksPath string, settings []byte) ([]CodexTrust, error) {
	hs, err := CodexHandlers(settings)
	if err != nil {
		return nil, err
	}
	src := codexKeySource(hooksPath)
	var out []CodexTrust
	for _, h := range hs {
		bin := DocketBinary(h.Command)
		if bin == "" {
			continue
		}
		out = append(out, CodexTrust{
			Key:  fmt.Sprintf("%s:%s:%d:%d", src, codexEventLabels[h.Event], h.Group, h.Index),
			Hash: CodexHookHash(h),
			Bin:  bin,
		})
	}
	return out, nil
}

// codexKeySource is the hooks.json path as Codex spells it in trust keys:
// absolute, with the symlinks of its directory resolved (Codex finds it
// from the working directory, which the kernel reports resolved).
func codexKeySource(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	if d, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
		p = filepath.Join(d, filepath.Base(p))
	}
	return p
}

// CodexConfigPath is Codex's user config: $CODEX_HOME/config.toml, else
// ~/.codex/config.toml.
func CodexConfigPath(homeDir string) string {
	if ch := os.Getenv("CODEX_HOME"); ch != "" {
		return filepath.Join(ch, "config.toml")
	}
	return filepath.Join(homeDir, ".codex", "config.toml")
}

// CodexHooksFile is one Codex hooks.json docket's block trusts.
type CodexHooksFile struct {
	Path    string
	Content []byte // as it will be on disk
}

// CodexOptions says what docket's block in config.toml should hold.
type CodexOptions struct {
	ConfigPath string
	// Hooks are the hooks.json files (user and project scope) whose
	// docket entries the block trusts; none (or none with docket's
	// entries) plans the block away.
	Hooks []CodexHooksFile
	// ProjectDir is the project whose trust TrustProject writes. The
	// trust docket wrote before for any project is kept, but for
	// DropProject.
	ProjectDir   string
	TrustProject bool
	// DropProject is a project whose trust docket wrote before and now
	// takes out (its uninstall).
	DropProject string
	// StateRoot is added to sandbox_workspace_write.writable_roots.
	StateRoot string
}

// CodexPlan is a planned edit of Codex's config.toml and what the user
// must still do by hand.
type CodexPlan struct {
	Change *Change
	Notes  []string
}

// codexConfig is the part of config.toml docket reads.
type codexConfig struct {
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
	Hooks struct {
		State map[string]struct {
			TrustedHash *string `toml:"trusted_hash"`
			Enabled     *bool   `toml:"enabled"`
		} `toml:"state"`
	} `toml:"hooks"`
	// Features is [features]: unified_exec_tty, for one (see codexTTYLine).
	Features              map[string]any `toml:"features"`
	SandboxMode           string         `toml:"sandbox_mode"`
	SandboxWorkspaceWrite *struct {
		WritableRoots []string `toml:"writable_roots"`
	} `toml:"sandbox_workspace_write"`
}

func parseCodexConfig(b []byte) (*codexConfig, error) {
	var c codexConfig
	if err := toml.Unmarshal(b, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// tomlKey quotes a TOML key as a basic string.
func tomlKey(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || !unicode.IsPrint(r) && r > 0x7f && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04X`, r)
		case !unicode.IsPrint(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// stripCodexBlock returns cfg without docket's block.
func stripCodexBlock(cfg []byte) []byte {
	// the block and the blank line docket put before it; the newline
	// ending the user's last line stays
	return codexBlock.ReplaceAllFunc(cfg, func(m []byte) []byte {
		if len(m) > 0 && m[0] == '\n' {
			return []byte("\n")
		}
		return nil
	})
}

// PlanCodexConfig plans docket's block in Codex's config.toml: trust for
// each docket hook entry that is not trusted with its current hash, the
// project's trust when asked, and the state root as a writable root of
// the workspace-write sandbox. What it cannot write without redefining a
// table the user wrote (a trust entry with another hash, a
// sandbox_workspace_write table without the state root) it leaves to the
// user, with the exact lines, in Notes.
func PlanCodexConfig(o CodexOptions) (*CodexPlan, error) {
	plan := &CodexPlan{Change: &Change{Path: o.ConfigPath}}
	c := plan.Change
	old, err := os.ReadFile(o.ConfigPath)
	switch {
	case err == nil:
		c.Existed, c.Old = true, old
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, &SettingsError{Path: o.ConfigPath, Err: err}
	}
	if !utf8.Valid(old) {
		return nil, &SettingsError{Path: o.ConfigPath, Err: errors.New("not UTF-8")}
	}
	rest := codexTTYLineRE.ReplaceAll(stripCodexBlock(old), nil)
	cfg, err := parseCodexConfig(rest)
	if err != nil {
		return nil, &SettingsError{Path: o.ConfigPath, Err: fmt.Errorf("not TOML docket can read: %w (fix it; docket will not edit it)", err)}
	}
	var entries []CodexTrust
	for _, f := range o.Hooks {
		es, err := CodexTrustEntries(f.Path, f.Content)
		if err != nil {
			return nil, &SettingsError{Path: f.Path, Err: err}
		}
		entries = append(entries, es...)
	}
	// projects docket trusted before, when asked, stay trusted until
	// their own uninstall
	var trusted []string
	if m := codexBlock.Find(old); m != nil {
		inner := bytes.TrimPrefix(bytes.TrimLeft(m, "\n"), []byte(codexBlockBegin))
		if prev, err := parseCodexConfig(inner); err == nil {
			for dir, p := range prev.Projects {
				if p.TrustLevel == "trusted" && dir != o.DropProject {
					trusted = append(trusted, dir)
				}
			}
		}
	}
	if o.TrustProject && o.ProjectDir != "" {
		trusted = append(trusted, CodexProjectDir(o.ProjectDir))
	}
	sort.Strings(trusted)
	var block []string
	for i, dir := range trusted {
		if len(entries) == 0 || (i > 0 && trusted[i-1] == dir) {
			continue
		}
		if p, ok := cfg.Projects[dir]; !ok {
			block = append(block, "[projects."+tomlKey(dir)+"]", `trust_level = "trusted"`, "")
		} else if p.TrustLevel != "trusted" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s marks %s as %q; Codex runs none of its project hooks until you set trust_level = \"trusted\" there", o.ConfigPath, dir, p.TrustLevel))
		}
	}
	for _, e := range entries {
		st, ok := cfg.Hooks.State[e.Key]
		switch {
		case !ok:
			block = append(block, "[hooks.state."+tomlKey(e.Key)+"]", "trusted_hash = "+tomlKey(e.Hash), "")
		case st.TrustedHash == nil || *st.TrustedHash != e.Hash:
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s already has [hooks.state.%s] with another trusted_hash; set it to trusted_hash = %s (or trust the hook in codex's /hooks)", o.ConfigPath, tomlKey(e.Key), tomlKey(e.Hash)))
		}
		if ok && st.Enabled != nil && !*st.Enabled {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s switches docket's %s hook off ([hooks.state.%s] enabled = false); remove that line", o.ConfigPath, e.Bin, tomlKey(e.Key)))
		}
	}
	if o.StateRoot != "" && len(entries) > 0 {
		switch {
		case cfg.SandboxWorkspaceWrite == nil:
			block = append(block, "[sandbox_workspace_write]", "writable_roots = ["+tomlKey(o.StateRoot)+"]", "")
		case !coveredBy(o.StateRoot, cfg.SandboxWorkspaceWrite.WritableRoots):
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s has a [sandbox_workspace_write] table without docket's state root: add %s to its writable_roots, or `docket validate` cannot record evidence inside Codex's workspace-write sandbox", o.ConfigPath, tomlKey(o.StateRoot)))
		}
	}
	var added []string // lines docket adds to the user's own tables
	if len(entries) > 0 {
		tty, set := cfg.Features["unified_exec_tty"]
		switch {
		case set && tty == false:
		case set:
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s turns Codex's terminal sessions on (unified_exec_tty = %v): what Codex types into a running command (write_stdin) runs no docket hook; set unified_exec_tty = false in its [features]", o.ConfigPath, tty))
		case cfg.Features == nil:
			block = append(block, "[features]", "unified_exec_tty = false", "")
		default:
			if loc := codexFeaturesRE.FindIndex(rest); loc != nil {
				rest = append(append(append([]byte(nil), rest[:loc[1]]...), codexTTYLine+"\n"...), rest[loc[1]:]...)
				added = append(added, "unified_exec_tty = false  (in [features])")
			} else {
				plan.Notes = append(plan.Notes, fmt.Sprintf("%s defines features without a [features] table docket can add a line to: add unified_exec_tty = false to them (what Codex types into a running command runs no docket hook)", o.ConfigPath))
			}
		}
	}
	c.New = rest
	if len(block) > 0 {
		var b bytes.Buffer
		b.Write(rest)
		if len(rest) > 0 {
			if !bytes.HasSuffix(rest, []byte("\n")) {
				b.WriteByte('\n')
			}
			b.WriteByte('\n')
		}
		b.WriteString(codexBlockBegin + "\n")
		b.WriteString(strings.Join(block, "\n"))
		b.WriteString(codexBlockEnd + "\n")
		c.New = b.Bytes()
	}
	if len(block) > 0 || len(added) > 0 {
		if _, err := parseCodexConfig(c.New); err != nil {
			// the user's file defines a table docket's block would
			// redefine (e.g. an inline hooks.state): leave it alone
			c.New = old
			plan.Notes = append(plan.Notes, fmt.Sprintf("docket cannot add its entries to %s without breaking it (%v); add these lines yourself:\n%s", o.ConfigPath, err, strings.Join(append(block, added...), "\n")))
		}
	}
	if bytes.Equal(c.New, old) {
		c.New = c.Old
	}
	c.Added = len(entries)
	return plan, nil
}

// PlanCodexUninstall plans removing docket's block from config.toml
// (what PlanCodexConfig plans when no hooks.json holds docket's entries).
func PlanCodexUninstall(configPath string) (*Change, error) {
	if _, err := os.Stat(configPath); errors.Is(err, fs.ErrNotExist) {
		return &Change{Path: configPath}, nil
	}
	p, err := PlanCodexConfig(CodexOptions{ConfigPath: configPath})
	if err != nil {
		return nil, err
	}
	return p.Change, nil
}

// CodexProjectDir is a project directory as Codex keys it in
// [projects]: absolute, symlinks resolved.
func CodexProjectDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		dir = a
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	return dir
}

// coveredBy reports whether p is one of roots or under one.
func coveredBy(p string, roots []string) bool {
	for _, r := range roots {
		if r == "" {
			continue
		}
		if rel, err := filepath.Rel(filepath.Clean(r), filepath.Clean(p)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return true
		}
	}
	return false
}

// CodexProblems checks that Codex will run docket's hooks in the
// hooks.json at hooksPath (settings its content) under config.toml at
// configPath: each docket entry trusted with its current hash and not
// switched off, the project trusted (projectDir, "" for user scope), and
// stateRoot writable in the workspace-write sandbox. It returns the
// problems (Codex runs no hook, or validate cannot record), the warnings,
// and the fix for both.
func CodexProblems(configPath, hooksPath string, settings []byte, projectDir, stateRoot string) (problems, warnings []string, fix string) {
	entries, err := CodexTrustEntries(hooksPath, settings)
	if err != nil {
		return []string{err.Error()}, nil, "fix " + hooksPath
	}
	b, err := os.ReadFile(configPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return []string{err.Error()}, nil, "make " + configPath + " readable"
	}
	cfg, err := parseCodexConfig(b)
	if err != nil {
		return []string{fmt.Sprintf("%s does not parse: %v", configPath, err)}, nil, "fix " + configPath
	}
	scope := "user"
	if projectDir != "" {
		scope = "project"
		dir := CodexProjectDir(projectDir)
		if p := cfg.Projects[dir]; p.TrustLevel != "trusted" {
			problems = append(problems, fmt.Sprintf("project %s is not trusted in %s, so Codex runs none of its .codex hooks", dir, configPath))
		}
	}
	var untrusted []string
	for _, e := range entries {
		st, ok := cfg.Hooks.State[e.Key]
		switch {
		case !ok || st.TrustedHash == nil:
			untrusted = append(untrusted, e.Bin+" ("+e.Key+") is not trusted")
		case *st.TrustedHash != e.Hash:
			untrusted = append(untrusted, e.Bin+" ("+e.Key+") changed since it was trusted")
		}
		if ok && st.Enabled != nil && !*st.Enabled {
			problems = append(problems, e.Bin+" ("+e.Key+") is switched off (enabled = false)")
		}
	}
	sort.Strings(untrusted)
	if len(untrusted) > 0 {
		problems = append(problems, "Codex runs no untrusted hook: "+strings.Join(untrusted, "; "))
	}
	if stateRoot != "" && cfg.SandboxMode != "danger-full-access" {
		var roots []string
		if cfg.SandboxWorkspaceWrite != nil {
			roots = cfg.SandboxWorkspaceWrite.WritableRoots
		}
		if !coveredBy(stateRoot, roots) && (projectDir == "" || !coveredBy(stateRoot, []string{CodexProjectDir(projectDir)})) {
			warnings = append(warnings, fmt.Sprintf("the state root %s is not in sandbox_workspace_write.writable_roots of %s: inside Codex's workspace-write sandbox `docket validate` cannot record evidence", stateRoot, configPath))
		}
	}
	if tty, set := cfg.Features["unified_exec_tty"]; !set || tty != false {
		warnings = append(warnings, fmt.Sprintf("Codex's terminal sessions are on (%s: features.unified_exec_tty): what Codex types into a running command (write_stdin) runs no docket hook; docket refuses the interactive programs it recognises, not every program that reads its input", configPath))
	}
	fix = fmt.Sprintf("run 'docket install --runtime codex --scope %s' (add --trust-project to trust the project too)", scope)
	return problems, warnings, fix
}

// CodexFiles returns Codex's user and project hooks.json (those that
// exist, or that c creates), each with the content it will have once c
// is applied.
func CodexFiles(homeDir, projectDir string, c *Change) []CodexHooksFile {
	var out []CodexHooksFile
	seen := map[string]bool{}
	for _, sc := range []Scope{User, Project} {
		p, err := SettingsPath(hooks.Codex, sc, homeDir, projectDir)
		if err != nil || seen[p] {
			continue
		}
		seen[p] = true
		if c != nil && p == c.Path {
			if len(bytes.TrimSpace(c.New)) > 0 {
				out = append(out, CodexHooksFile{p, c.New})
			}
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, CodexHooksFile{p, b})
		}
	}
	return out
}
