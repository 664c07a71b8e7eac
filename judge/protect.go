package judge

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

// Built-in protection rule ids. No policy file can remove them.
const (
	ProtectKeys        = "builtin:keys_read"
	ProtectStateWrite  = "builtin:state_root_write"
	ProtectStateRead   = "builtin:state_root_read"
	ProtectShellState  = "builtin:state_root_shell"
	ProtectDestructive = "builtin:destructive_root_or_home"
	ProtectHookBinary  = "builtin:hook_binary"
)

// Protector enforces the built-in protections: no tool call may read the
// keys, write (or, for the ledger, artifacts, run state and store, read)
// anything under the state root, or run a destructive command on the
// filesystem root or the user's home. Paths are cleaned lexically; `~`,
// $HOME, $DOCKET_HOME, $XDG_STATE_HOME and relative paths (against the
// working directory, following the line's own `cd`s) are expanded.
// Symlinks are not resolved: the call that would create a link into the
// state root names the state root and is denied itself.
type Protector struct {
	Home     home.Home
	UserHome string // the user's $HOME; "" disables ~ expansion
	// XDGState is $XDG_STATE_HOME as the agent would see it.
	XDGState string
}

// Violation is a protection that fired.
type Violation struct {
	Rule   string
	Reason string
}

// readable lists state-root subtrees an agent may read (policies and
// validator definitions, per the trust model).
func (pr Protector) readable(p string) bool {
	return within(pr.Home.PoliciesDir(), p) || within(pr.Home.ValidatorsDir(), p)
}

func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// ancestorOf reports whether dir is p or an ancestor of p.
func ancestorOf(dir, p string) bool { return within(dir, p) }

// Check runs the protections on p.
func (pr Protector) Check(p *ActionProposal) *Violation {
	if pr.Home.Root == "" {
		return nil
	}
	var in map[string]any
	_ = json.Unmarshal(p.Input, &in)
	if p.Context.Shell != nil {
		cmd, _ := in["command"].(string)
		return pr.checkShell(cmd, p.Context.Shell, p.Context.Cwd)
	}
	writes := p.Context.Spec.Writes
	recursive := p.Tool.Name == "Grep" || p.Tool.Name == "Glob"
	for _, f := range []string{"file_path", "notebook_path", "path", "pattern", "directory", "filename", "dir"} {
		s, ok := in[f].(string)
		if !ok || s == "" {
			continue
		}
		if f == "pattern" && !recursive {
			continue
		}
		if f == "pattern" && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~") {
			continue
		}
		ap := pr.resolve(s, p.Context.Cwd)
		if ap == "" {
			continue
		}
		if v := pr.checkPath(ap, writes, recursive); v != nil {
			return v
		}
	}
	// Any other tool (MCP servers included) that names the state root in
	// its input is denied: we cannot know what it does with the path.
	if !p.Context.SpecFound || p.Tool.Kind == "api" {
		if pr.mentionsState(string(p.Input)) {
			return &Violation{ProtectStateWrite, "the tool input names docket's state root (" + pr.Home.Root + "); tools may not touch it"}
		}
	}
	return nil
}

func (pr Protector) checkPath(ap string, writes, recursive bool) *Violation {
	keys := pr.Home.KeysDir()
	switch {
	case within(keys, ap):
		return &Violation{ProtectKeys, "docket's keys (" + keys + ") may not be read or written by tools"}
	case writes && pr.Home.Contains(ap):
		return &Violation{ProtectStateWrite, "writing under docket's state root (" + pr.Home.Root + ") is not allowed; evidence is written only by the hooks and `docket validate`"}
	case pr.Home.Contains(ap) && !pr.readable(ap):
		return &Violation{ProtectStateRead, "the ledger, artifacts, run state and store under " + pr.Home.Root + " are not readable by tools; use `docket verify` or ask the user"}
	case recursive && ancestorOf(ap, keys):
		return &Violation{ProtectKeys, "a recursive search of " + ap + " would read docket's keys; narrow the path"}
	}
	return nil
}

func (pr Protector) mentionsState(s string) bool {
	if strings.Contains(s, pr.Home.Root) || strings.Contains(s, "$DOCKET_HOME") || strings.Contains(s, "${DOCKET_HOME}") {
		return true
	}
	if pr.UserHome != "" {
		if rel, ok := strings.CutPrefix(pr.Home.Root, pr.UserHome+"/"); ok {
			for _, pre := range []string{"~/", "$HOME/", "${HOME}/"} {
				if strings.Contains(s, pre+rel) {
					return true
				}
			}
		}
	}
	if pr.XDGState != "" && within(pr.XDGState, pr.Home.Root) && (strings.Contains(s, "$XDG_STATE_HOME") || strings.Contains(s, "${XDG_STATE_HOME}")) {
		return true
	}
	return false
}

// resolve expands and lexically cleans a path-like word; "" when it is
// not resolvable (an unknown variable, ~user, a URL).
func (pr Protector) resolve(w, cwd string) string {
	if w == "" || strings.Contains(w, "://") {
		return ""
	}
	for _, v := range []struct{ name, val string }{
		{"${DOCKET_HOME}", pr.Home.Root}, {"$DOCKET_HOME", pr.Home.Root},
		{"${HOME}", pr.UserHome}, {"$HOME", pr.UserHome},
		{"${XDG_STATE_HOME}", pr.XDGState}, {"$XDG_STATE_HOME", pr.XDGState},
	} {
		if strings.HasPrefix(w, v.name) {
			if v.val == "" {
				return ""
			}
			w = v.val + w[len(v.name):]
		}
	}
	switch {
	case w == "~" || strings.HasPrefix(w, "~/"):
		if pr.UserHome == "" {
			return ""
		}
		w = pr.UserHome + w[1:]
	case strings.HasPrefix(w, "~") || strings.HasPrefix(w, "$"):
		return ""
	}
	if !filepath.IsAbs(w) {
		if cwd == "" {
			return ""
		}
		w = filepath.Join(cwd, w)
	}
	return filepath.Clean(w)
}

// pathWords returns the words of a segment that may name paths: the
// arguments (and the values of --opt=value), redirect targets and inputs.
func pathWords(s Segment) []string {
	var out []string
	for _, a := range s.Argv[1:] {
		if i := strings.IndexByte(a, '='); i > 0 && strings.HasPrefix(a, "-") {
			a = a[i+1:]
		} else if strings.HasPrefix(a, "-") {
			continue
		}
		if strings.HasPrefix(a, "of=") || strings.HasPrefix(a, "if=") {
			a = a[3:]
		}
		out = append(out, a)
	}
	out = append(out, s.Redirects...)
	return append(out, s.Inputs...)
}

var destructiveCommands = map[string]bool{"rm": true, "rmdir": true, "shred": true, "mv": true, "chmod": true, "chown": true, "chgrp": true, "dd": true, "find": true, "rsync": true, "truncate": true, "srm": true, "trash": true}

var recursiveReaders = map[string]bool{"grep": true, "rg": true, "ag": true, "find": true, "tar": true, "zip": true, "rsync": true, "cp": true, "scp": true, "du": false, "chmod": true, "chown": true, "rm": true, "fd": true, "ack": true, "7z": true}

func (pr Protector) checkShell(line string, cc *CommandClass, cwd string) *Violation {
	allDocket := len(cc.Segments) > 0
	for _, s := range cc.Segments {
		switch s.Name() {
		case "docket-ledger", "docket-gate", "docket-judge":
			return &Violation{ProtectHookBinary, s.Name() + " is run by the agent runtime's hooks, not by tools; record evidence with `docket validate`"}
		case "docket":
		default:
			allDocket = false
		}
	}
	if !allDocket && pr.mentionsState(line) {
		return &Violation{ProtectShellState, "the command names docket's state root (" + pr.Home.Root + "); tools may not touch the keys, ledger, artifacts or store (the docket CLI may)"}
	}
	top := pr.topLevel()
	dir := cwd
	for _, s := range cc.Segments {
		name := s.Name()
		if name == "cd" || name == "pushd" {
			// follow the line's own cds, with ~ and variables expanded
			if len(s.Argv) > 1 {
				dir = pr.resolve(s.Argv[len(s.Argv)-1], dir)
			} else {
				dir = pr.UserHome
			}
		}
		if name == "docket" {
			continue
		}
		for _, w := range pathWords(s) {
			glob := strings.ContainsAny(w, "*?[")
			lit := w
			if glob {
				lit = w[:strings.IndexAny(w, "*?[")]
			}
			ap := pr.resolve(lit, dir)
			if ap == "" {
				continue
			}
			if !glob || !strings.HasSuffix(lit, "/") && lit != "" {
				if v := pr.checkPath(ap, cc.Class != policies.ReadOnly, false); v != nil {
					if v.Rule == ProtectStateRead || v.Rule == ProtectStateWrite {
						v.Rule = ProtectShellState
					}
					return v
				}
			}
			recursive := recursiveReaders[name] && (name != "cp" && name != "chmod" && name != "chown" && name != "rm" || hasFlag(s.Argv, "-r", "-R", "--recursive", "-a"))
			if (recursive || glob && cc.Class != policies.ReadOnly) && ancestorOf(ap, pr.Home.Root) {
				if destructiveCommands[name] && top[ap] {
					return &Violation{ProtectDestructive, name + " on " + ap + " would destroy the filesystem root or home; name the exact files instead"}
				}
				return &Violation{ProtectShellState, name + " over " + ap + " would reach docket's state root (" + pr.Home.Root + "); narrow the path"}
			}
			if destructiveCommands[name] && (top[ap] || glob && top[strings.TrimSuffix(ap, "/")]) {
				if name == "find" && !hasFlag(s.Argv, "-delete") && !slicesContains(s.Argv, "-exec") {
					continue
				}
				if name == "chmod" || name == "chown" || name == "rm" || name == "mv" || name == "rsync" {
					if name != "mv" && !hasFlag(s.Argv, "-r", "-R", "--recursive", "--delete") && !glob {
						continue
					}
				}
				return &Violation{ProtectDestructive, name + " on " + ap + " would destroy the filesystem root or home; name the exact files instead"}
			}
		}
	}
	return nil
}

// topLevel is the set of paths a destructive command must never target:
// the root, the user's home and its parent, and the system directories.
func (pr Protector) topLevel() map[string]bool {
	m := map[string]bool{"/": true}
	for _, d := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/var", "/boot", "/home", "/Users", "/root", "/opt", "/System", "/Library", "/Applications", "/dev", "/proc", "/sys", "/private"} {
		m[d] = true
	}
	if pr.UserHome != "" {
		m[filepath.Clean(pr.UserHome)] = true
		m[filepath.Dir(filepath.Clean(pr.UserHome))] = true
	}
	return m
}
