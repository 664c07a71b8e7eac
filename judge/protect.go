package judge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/worktree"
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
	// ProtectFakeDocket: a binary named docket that is not the installed
	// one, asked to do what only a human may (approve, review, policy).
	ProtectFakeDocket = "builtin:untrusted_docket"
	// ProtectSelfApproval: a tool call that would approve docket's own
	// policy or call the review and approval routes of a docket server.
	ProtectSelfApproval = "builtin:self_approval"
	// ProtectUnapproved: the policy in force is not the one a human
	// approved (see policies.CheckApproval).
	ProtectUnapproved = "builtin:policy_unapproved"
)

// Protector enforces the built-in protections: no tool call may read the
// keys, write (or, for the ledger, artifacts, run state and store, read)
// anything under the state root, or run a destructive command on the
// filesystem root or the user's home.
//
// It resolves what a call touches before comparing paths: `~`, $HOME,
// $DOCKET_HOME and $XDG_STATE_HOME anywhere in a word, relative paths
// (against the working directory, following the line's own `cd`s), globs
// (expanded against the real filesystem, and also matched as patterns
// against the protected paths, so a glob that could name a key is denied
// even when nothing matches yet) and symlinks (every path is compared both
// as written and with its existing prefix resolved). A fragment it cannot
// know — $(…), backticks, any other variable — is a wildcard: a word whose
// known parts could still name a protected path is denied. Inline code of
// an interpreter (python -c, node -e, perl -e, heredocs, here-strings)
// that mentions the state root's pieces, even split by concatenation,
// counts as touching it. `docket` is trusted only as the bare command or
// at its installed path.
type Protector struct {
	Home     home.Home
	UserHome string // the user's $HOME; "" disables ~ expansion
	// XDGState is $XDG_STATE_HOME as the agent would see it.
	XDGState string
	// Docket is the installed docket CLI's absolute path; "" trusts only
	// the bare command name.
	Docket string
	// findDocket, when Docket is empty, finds it on first use (most calls
	// never run docket: the lookup reads /proc/self/exe and stats).
	findDocket func() string
	// RealRoot is the state root with symlinks resolved; Check computes
	// it when empty.
	RealRoot string
	// memo caches lstat answers within one Check.
	memo *lstatMemo
	// Unapproved, when set, is why the policy in force is not the
	// approved one: side-effecting calls are denied with the fix.
	Unapproved string
	// HookBins are the directories of docket's hook binaries, as the
	// runtime runs them and as they resolve (hookBinDirs): no tool call
	// may write, replace or remove docket's binaries there, or move or
	// remove a directory holding them. A docket-judge swapped for
	// /bin/true would allow every later call.
	HookBins []string
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
	pr.memo = &lstatMemo{}
	if pr.RealRoot == "" {
		pr.RealRoot = pr.memo.realPath(pr.Home.Root)
	}
	var in map[string]any
	_ = json.Unmarshal(p.Input, &in)
	if v := pr.checkPatch(in, p.Context.Cwd); v != nil {
		return v
	}
	// the command line as the runtime runs it: Codex's exec_command
	// carries it in "cmd", its shell tool as an argv
	cmd, hasCmd := hooks.ShellCommandOf(p.Input)
	if v := pr.checkRoutes(p, in, cmd); v != nil {
		return v
	}
	// Codex's shell tools run the line in their "workdir"
	shellDir := p.Context.Cwd
	if wd, ok := in["workdir"].(string); ok && wd != "" {
		if shellDir = pr.resolve(pr.expand(wd), p.Context.Cwd); shellDir == "" || strings.ContainsRune(shellDir, unknownMark) {
			shellDir = string(unknownMark)
		}
	}
	if p.Context.Shell != nil {
		if v := pr.checkShell(cmd, p.Context.Shell, shellDir); v != nil {
			return v
		}
		return pr.checkApproved(p, cmd, hasCmd)
	}
	// a tool the registry does not know as a shell but that carries a
	// command line (another runtime's shell tool, an MCP runner) is
	// protected as one
	if hasCmd && cmd != "" && !strings.Contains(cmd, "*** Begin Patch") {
		cc := ClassifyCommand(cmd, ShellContext{Cwd: p.Context.Cwd, Branch: p.Context.Branch})
		if v := pr.checkShell(cmd, &cc, shellDir); v != nil {
			return v
		}
	}
	writes := p.Context.Spec.Writes || p.Tool.Kind == "file_write" || p.Tool.Kind == "file_edit" || p.Tool.Kind == "patch"
	// read_many_files reads a named directory's files, recursively
	recursive := p.kind() == hooks.KindSearch || p.Tool.Kind == "search" || p.Tool.Name == "read_many_files"
	for _, f := range []string{"file_path", "notebook_path", "path", "absolute_path", "dir_path", "pattern", "directory", "filename", "dir"} {
		s, ok := in[f].(string)
		if !ok || s == "" {
			continue
		}
		if f == "pattern" && !recursive {
			continue
		}
		if f == "pattern" && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "~") && !strings.HasPrefix(s, "$") {
			continue
		}
		if v := pr.checkWord(s, p.Context.Cwd, writes, recursive); v != nil {
			return v
		}
	}
	if recursive && p.Context.Cwd != "" && !hasAny(in, "path", "absolute_path", "dir_path", "directory", "dir", "paths") {
		// a search given no directory searches the working directory
		if v := pr.checkWord(p.Context.Cwd, "", writes, true); v != nil {
			return v
		}
	}
	for _, f := range []string{"paths", "file_paths", "absolute_paths", "include"} {
		list, _ := in[f].([]any)
		for _, v := range list {
			if s, ok := v.(string); ok && s != "" {
				if v := pr.checkWord(s, p.Context.Cwd, writes, recursive); v != nil {
					return v
				}
			}
		}
	}
	// Any other tool (MCP servers included) that names the state root in
	// its input is denied: we cannot know what it does with the path.
	if !p.Context.SpecFound || p.Tool.Kind == "api" {
		if pr.mentionsState(string(p.Input)) {
			return &Violation{ProtectStateWrite, "the tool input names docket's state root (" + pr.Home.Root + "); tools may not touch it"}
		}
	}
	return pr.checkApproved(p, cmd, hasCmd)
}

func hasAny(in map[string]any, fields ...string) bool {
	for _, f := range fields {
		if v, ok := in[f]; ok && v != nil && v != "" {
			return true
		}
	}
	return false
}

// checkApproved denies side-effecting calls while the policy in force is
// not the approved one.
//
// The registry that would call a tool read-only is itself unapproved, so
// read-only here is decided without it: shell lines by the classifier,
// other tools by name.
func (pr Protector) checkApproved(p *ActionProposal, cmd string, hasCmd bool) *Violation {
	if pr.Unapproved == "" {
		return nil
	}
	sh := p.Context.Shell
	if sh == nil && hasCmd {
		cc := ClassifyCommand(cmd, ShellContext{Cwd: p.Context.Cwd, Branch: p.Context.Branch})
		sh = &cc
	}
	if sh != nil && sh.Class == policies.ReadOnly || sh == nil && readsOnly(p) {
		return nil
	}
	return &Violation{ProtectUnapproved, "docket's policy is not the one a human approved (" + pr.Unapproved + "); side-effecting calls are refused until the user runs `docket policy approve` in a terminal"}
}

// checkWord resolves one path-like word and checks every path it may
// name: as written, its glob matches, and each with symlinks resolved.
func (pr Protector) checkWord(w, cwd string, writes, recursive bool) *Violation {
	if alts := braceExpand(w, 64); len(alts) > 1 {
		for _, a := range alts {
			if v := pr.checkWord(a, cwd, writes, recursive); v != nil {
				return v
			}
		}
		return nil
	}
	x := pr.expand(w)
	if x == "" {
		return nil
	}
	if strings.ContainsRune(cwd, unknownMark) && !filepath.IsAbs(x) && x[0] != unknownMark {
		x = string(unknownMark) + "/" + x
	}
	if strings.ContainsRune(x, unknownMark) || hasGlob(x) {
		pat := x
		if !strings.HasPrefix(pat, "/") && pat[0] != unknownMark {
			if cwd == "" {
				return nil
			}
			pat = filepath.Join(cwd, pat)
		}
		if v := pr.matchProtected(pat, writes); v != nil {
			return v
		}
		if strings.ContainsRune(x, unknownMark) || globSegments(pat) > 2 {
			// the pattern match above is the answer: listing a deep glob
			// could read much of the filesystem
			return nil
		}
		matches, _ := filepath.Glob(pat)
		if len(matches) > 64 {
			matches = matches[:64]
		}
		for _, m := range matches {
			if v := pr.checkResolved(m, writes, recursive); v != nil {
				return v
			}
		}
		return nil
	}
	ap := pr.resolve(x, cwd)
	if ap == "" {
		return nil
	}
	// the unclean path resolves ".." physically, after symlinks
	raw := x
	if !filepath.IsAbs(raw) {
		raw = cwd + "/" + raw
	}
	if v := pr.checkPath(ap, writes, recursive); v != nil {
		return v
	}
	if rp := pr.memo.realPath(raw); rp != ap {
		if v := pr.checkPath(rp, writes, recursive); v != nil {
			v.Reason += " (" + w + " resolves to " + rp + ")"
			return v
		}
	}
	return nil
}

// globReachesRoot reports a recursive command whose glob could name a
// directory above the state root (other than the top-level ones the
// destructive rule judges): it would reach the keys.
func (pr Protector) globReachesRoot(pat string, top map[string]bool) *Violation {
	if !filepath.IsAbs(pat) {
		return nil
	}
	re, err := globRegexp(pat)
	if err != nil {
		return nil
	}
	for _, h := range pr.roots() {
		for d := h.Root; d != "/" && d != "."; d = filepath.Dir(d) {
			if !top[d] && re.MatchString(d) {
				return &Violation{ProtectShellState, "a recursive command over " + pat + " could reach docket's state root through " + d + "; narrow the path"}
			}
		}
	}
	return nil
}

func globSegments(pat string) int {
	n := 0
	for _, seg := range strings.Split(pat, "/") {
		if hasGlob(seg) {
			n++
		}
	}
	return n
}

// checkResolved checks an absolute path as written and with symlinks
// resolved.
func (pr Protector) checkResolved(ap string, writes, recursive bool) *Violation {
	if v := pr.checkPath(ap, writes, recursive); v != nil {
		return v
	}
	if rp := pr.memo.realPath(ap); rp != ap {
		if v := pr.checkPath(rp, writes, recursive); v != nil {
			v.Reason += " (" + ap + " resolves to " + rp + ")"
			return v
		}
	}
	return nil
}

func (pr Protector) checkPath(ap string, writes, recursive bool) *Violation {
	if v := pr.checkHookBinary(ap, writes); v != nil {
		return v
	}
	if v := pr.checkPathIn(pr.Home, ap, writes, recursive); v != nil {
		return v
	}
	if pr.RealRoot != "" && pr.RealRoot != pr.Home.Root {
		return pr.checkPathIn(home.Home{Root: pr.RealRoot}, ap, writes, recursive)
	}
	return nil
}

func (pr Protector) checkPathIn(h home.Home, ap string, writes, recursive bool) *Violation {
	pr.Home = h
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

// hookBinaryNames are the binaries docket install wires into the
// runtimes, and the CLI beside them.
var hookBinaryNames = words{"docket", "docket-judge", "docket-gate", "docket-ledger", "docket-hook"}

// checkHookBinary refuses a write to one of docket's binaries in a
// directory of HookBins, or to such a directory or one above it (a move,
// a removal, a copy into it) short of / and the home directory, whose
// destruction has a protection of its own.
func (pr Protector) checkHookBinary(ap string, writes bool) *Violation {
	if !writes || ap == "/" || ap == pr.UserHome {
		return nil
	}
	for _, dir := range pr.HookBins {
		if filepath.Dir(ap) == dir && hookBinaryNames.has(filepath.Base(ap)) || ap == dir || ancestorOf(ap, dir) {
			return &Violation{ProtectHookBinary, ap + " is where the runtime's hooks run docket (" + dir + "); tools may not write, replace or remove docket's binaries"}
		}
	}
	return nil
}

// matchHookBinary refuses a write through a pattern (a glob, an unknown
// fragment) that could name one of docket's binaries in HookBins.
func (pr Protector) matchHookBinary(pat string, writes bool) *Violation {
	if !writes || strings.Trim(pat, "/*?"+string(unknownMark)) == "" {
		return nil // nothing known of it ("$f"): as for the state root
	}
	re, err := globRegexp(pat)
	if err != nil {
		return nil
	}
	for _, dir := range pr.HookBins {
		for _, name := range hookBinaryNames {
			if p := filepath.Join(dir, name); re.MatchString(p) {
				return &Violation{ProtectHookBinary, "the path " + shown(pat) + " could name docket's hook binary " + p + "; tools may not write, replace or remove it"}
			}
		}
	}
	return nil
}

// hookBinDirs is the directory of the running hook binary, as the
// runtime ran it (its absolute argv[0]) and as it resolves, when it is
// one of docket's; nil otherwise (tests, other programs).
var hookBinDirs = sync.OnceValue(func() []string {
	var dirs []string
	add := func(p string) {
		if hookBinaryNames.has(filepath.Base(p)) && !slices.Contains(dirs, filepath.Dir(p)) {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	if len(os.Args) > 0 && filepath.IsAbs(os.Args[0]) {
		add(filepath.Clean(os.Args[0]))
	}
	if exe, err := os.Executable(); err == nil {
		add(realPath(exe))
	}
	return dirs
})

func (pr Protector) mentionsState(s string) bool {
	if strings.Contains(s, pr.Home.Root) || pr.RealRoot != "" && strings.Contains(s, pr.RealRoot) || strings.Contains(s, "$DOCKET_HOME") || strings.Contains(s, "${DOCKET_HOME}") {
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

// readsOnly reports whether p's tool only reads: a read or search tool
// of any runtime (hooks' vocabulary), or Claude Code's to-do list.
func readsOnly(p *ActionProposal) bool {
	k := p.kind()
	return k == hooks.KindRead || k == hooks.KindSearch || p.Tool.Name == "TodoWrite"
}

var destructiveCommands = words{"rm", "rmdir", "shred", "mv", "chmod", "chown", "chgrp", "dd", "find", "rsync", "truncate", "srm", "trash"}

// recursiveReaders walk the directories they are given (du only sizes
// them, and is not one).
var recursiveReaders = words{"grep", "rg", "ag", "find", "tar", "zip", "rsync", "cp", "scp", "chmod", "chown", "rm", "fd", "ack", "7z",
	// a link to a directory above the state root reaches it by another path
	"ln"}

func (pr Protector) checkShell(line string, cc *CommandClass, cwd string) *Violation {
	redefined := redefinesDocket(line)
	allDocket := len(cc.Segments) > 0
	trusted := make([]bool, len(cc.Segments))
	for i, s := range cc.Segments {
		switch s.Name() {
		case "docket-ledger", "docket-gate", "docket-judge":
			return &Violation{ProtectHookBinary, s.Name() + " is run by the agent runtime's hooks, not by tools; record evidence with `docket validate`"}
		case "docket":
			trusted[i] = pr.trustedDocket(s.Argv[0], redefined)
			what := humanOnlyDocket(s.Argv)
			switch {
			case what != "" && !trusted[i]:
				return &Violation{ProtectFakeDocket, s.Argv[0] + " is not the installed docket" + pr.installedHint() + "; `docket " + what + "` is for a human, at a terminal"}
			case what == "policy approve":
				return &Violation{ProtectSelfApproval, "approving docket's policy is for a human: ask the user to run `docket policy approve` in a terminal"}
			case !trusted[i]:
				allDocket = false
			}
		default:
			allDocket = false
		}
	}
	if !allDocket && pr.mentionsState(line) {
		return &Violation{ProtectShellState, "the command names docket's state root (" + pr.Home.Root + "); tools may not touch the keys, ledger, artifacts or store (the docket CLI may)"}
	}
	if v := pr.checkInline(line, cc, cwd); v != nil {
		return v
	}
	top := pr.topLevel()
	dir := cwd
	for i, s := range cc.Segments {
		name := s.Name()
		if name == "cd" || name == "pushd" {
			// follow the line's own cds, with ~ and variables expanded
			if len(s.Argv) > 1 {
				t := pr.expand(s.Argv[len(s.Argv)-1])
				switch {
				case strings.ContainsRune(t, unknownMark) || strings.ContainsRune(dir, unknownMark) && !filepath.IsAbs(t):
					// a directory we cannot know: what follows is
					// judged as a pattern below an unknown prefix
					dir = string(unknownMark)
				default:
					dir = pr.resolve(t, dir)
				}
			} else {
				dir = pr.UserHome
			}
		}
		if trusted[i] {
			continue
		}
		if name == "git" && !strings.ContainsRune(dir, unknownMark) {
			if v := pr.gitStages(s, dir); v != nil {
				return v
			}
		}
		recursive := recursiveReaders.has(name) && (name != "cp" && name != "chmod" && name != "chown" && name != "rm" || hasFlag(s.Argv, "-r", "-R", "--recursive", "-a"))
		words := pathWords(s)
		if mounts := bindMounts(s); len(mounts) > 0 {
			// a container reads all it is given: docker run -v $HOME:/h
			recursive, words = true, append(words, mounts...)
		}
		if recursive && searchesDot(s) {
			words = append(words, ".")
		}
		for _, w := range words {
			// a literal path's recursive reach is judged below, where a
			// destructive command gets its own rule
			if v := pr.checkWord(w, dir, cc.Class != policies.ReadOnly, recursive && hasGlob(w)); v != nil {
				if v.Rule == ProtectStateRead || v.Rule == ProtectStateWrite {
					v.Rule = ProtectShellState
				}
				return v
			}
			x := pr.expand(w)
			if strings.ContainsRune(x, unknownMark) {
				continue
			}
			glob := hasGlob(x)
			lit := x
			if glob {
				lit = x[:strings.IndexAny(x, "*?[")]
			}
			ap := pr.resolve(lit, dir)
			if ap == "" {
				continue
			}
			if (recursive || glob && cc.Class != policies.ReadOnly) && (ancestorOf(ap, pr.Home.Root) || ancestorOf(ap, pr.RealRoot)) {
				if destructiveCommands.has(name) && top[ap] {
					return &Violation{ProtectDestructive, name + " on " + ap + " would destroy the filesystem root or home; name the exact files instead"}
				}
				return &Violation{ProtectShellState, name + " over " + ap + " would reach docket's state root (" + pr.Home.Root + "); narrow the path"}
			}
			if destructiveCommands.has(name) && (top[ap] || glob && top[strings.TrimSuffix(ap, "/")]) {
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
			if recursive && glob {
				pat := x
				if !filepath.IsAbs(pat) && filepath.IsAbs(dir) {
					pat = filepath.Join(dir, pat)
				}
				if v := pr.globReachesRoot(pat, top); v != nil {
					return v
				}
			}
		}
	}
	return nil
}

// gitStages judges `git add -A`, `git add DIR` and `git stash -u/-a`:
// they copy every untracked file below their path into the
// repository's objects, where any git command reads it back. Over the
// state root (a home directory kept in git, a DOCKET_HOME inside the
// project) that would hand the keys to the agent.
func (pr Protector) gitStages(s Segment, dir string) *Violation {
	args := s.Argv[1:]
	for len(args) > 0 && strings.HasPrefix(args[0], "-") { // options before the subcommand
		if (args[0] == "-C" || args[0] == "-c" || args[0] == "--git-dir" || args[0] == "--work-tree") && len(args) > 1 {
			if args[0] == "-C" {
				if dir = pr.resolve(pr.expand(args[1]), dir); dir == "" {
					return nil
				}
			}
			args = args[2:]
			continue
		}
		args = args[1:]
	}
	if len(args) == 0 {
		return nil
	}
	var paths []string
	all := false
	switch args[0] {
	case "add":
		for _, a := range args[1:] {
			switch {
			case a == "-A" || a == "--all" || a == "--no-ignore-removal":
				all = true
			case !strings.HasPrefix(a, "-"):
				paths = append(paths, a)
			}
		}
	case "stash":
		all = slicesContains(args, "-u") || slicesContains(args, "--include-untracked") || slicesContains(args, "-a") || slicesContains(args, "--all")
		if !all {
			return nil
		}
	default:
		return nil
	}
	if len(paths) == 0 {
		if !all {
			return nil
		}
		paths = []string{worktree.FindRoot(dir)} // the whole working tree
	}
	root := worktree.FindRoot(dir)
	for _, p := range paths {
		if strings.HasPrefix(p, ":") {
			// pathspec magic (`:/`, `:(top)`, `:!x`) names paths from the
			// repository's top, wherever the command runs
			p = root
		}
		x := pr.expand(p)
		if strings.ContainsRune(x, unknownMark) {
			continue
		}
		if ap := pr.resolve(x, dir); ap != "" && (ancestorOf(ap, pr.Home.Root) || ancestorOf(ap, pr.RealRoot)) {
			return &Violation{ProtectShellState, "git " + args[0] + " over " + ap + " would copy docket's state root (" + pr.Home.Root + ") into the repository's objects; name the files to stage"}
		}
	}
	return nil
}

// searchesDot reports a recursive search given no directory, which
// bindMounts are the host paths a container command (docker or podman
// run, create) mounts: -v/--volume SOURCE:…, --mount
// type=bind,source=SOURCE (src=), and a volume given as a plain path.
// The host's / is left to the classifier: a container given the whole
// host is high_risk, a human's to approve (actions.go).
func bindMounts(s Segment) []string {
	if n := s.Name(); n != "docker" && n != "podman" && n != "nerdctl" {
		return nil
	}
	if sub, _ := subcommand(s.Argv, map[string]bool{"-H": true, "--host": true, "--context": true, "-c": true, "--config": true, "--log-level": true, "-l": true}); sub != "run" && sub != "create" && sub != "container" {
		return nil
	}
	var out []string
	for i := 1; i < len(s.Argv); i++ {
		if v, ok := optionArg(s.Argv, &i, "-v", "--volume"); ok {
			if src, _, _ := strings.Cut(v, ":"); strings.ContainsAny(src, "/~$.") && src != "/" {
				out = append(out, src) // a named volume has none of these
			}
			continue
		}
		if v, ok := optionArg(s.Argv, &i, "--mount"); ok {
			for _, kv := range strings.Split(v, ",") {
				if k, val, _ := strings.Cut(kv, "="); (k == "source" || k == "src") && val != "/" {
					out = append(out, val)
				}
			}
		}
	}
	return out
}

// searches the working directory: grep -r, rg, ag, ack and fd with only
// a pattern (rg, ag and ack search their input instead when it is a
// pipe), find with no path before its expression.
func searchesDot(s Segment) bool {
	if s.Name() == "find" {
		return len(s.Argv) == 1 || strings.HasPrefix(s.Argv[1], "-") || s.Argv[1] == "(" || s.Argv[1] == "!"
	}
	if len(s.Inputs) > 0 || s.Here || s.Name() == "grep" && !hasFlag(s.Argv, "-r", "-R", "--recursive", "--dereference-recursive") {
		return false // it reads the input it is given
	}
	if s.Piped && (s.Name() == "rg" || s.Name() == "ag" || s.Name() == "ack") && !hasFlag(s.Argv, "--files") {
		return false // with a pipe for input and no path, they search the pipe (grep -r still searches .)
	}
	switch s.Name() {
	case "grep", "rg", "ag", "ack", "fd":
		n := 0
		for _, a := range s.Argv[1:] {
			if !strings.HasPrefix(a, "-") {
				n++
			}
		}
		return n <= 1
	}
	return false
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
