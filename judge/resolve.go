package judge

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/docket/docket/internal/home"
)

// unknownMark stands for a fragment of a word the judge cannot know: the
// output of $(…) or backticks, or a variable other than the ones it
// expands. It matches anything, slashes included.
const unknownMark = '\x00'

// expand replaces, anywhere in w, the variables the judge knows ($HOME,
// $DOCKET_HOME, $XDG_STATE_HOME, braced or not) with their values, a
// leading `~` or `~/` with the user's home, and every fragment it cannot
// know with unknownMark. It returns "" for URLs.
func (pr Protector) expand(w string) string {
	if w == "" || strings.Contains(w, "://") {
		return ""
	}
	if w == "~" || strings.HasPrefix(w, "~/") {
		if pr.UserHome == "" {
			return string(unknownMark) + w[1:]
		}
		w = pr.UserHome + w[1:]
	}
	if !strings.ContainsAny(w, "$`") {
		return w
	}
	known := map[string]string{"HOME": pr.UserHome, "DOCKET_HOME": pr.Home.Root, "XDG_STATE_HOME": pr.XDGState}
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c == '`':
			j := strings.IndexByte(w[i+1:], '`')
			b.WriteRune(unknownMark)
			if j < 0 {
				return b.String()
			}
			i += j + 1
		case c == '$' && i+1 < len(w) && w[i+1] == '(':
			_, end, ok := parenBody(w, i+1)
			b.WriteRune(unknownMark)
			if !ok {
				return b.String()
			}
			i = end
		case c == '$' && i+1 < len(w) && w[i+1] == '{':
			j := strings.IndexByte(w[i:], '}')
			if j < 0 {
				b.WriteRune(unknownMark)
				return b.String()
			}
			name := w[i+2 : i+j]
			if v := known[name]; v != "" {
				b.WriteString(v)
			} else {
				b.WriteRune(unknownMark)
			}
			i += j
		case c == '$' && i+1 < len(w) && isVarStart(w[i+1]):
			j := i + 1
			for j < len(w) && (isVarStart(w[j]) || w[j] >= '0' && w[j] <= '9') {
				j++
			}
			if v := known[w[i+1:j]]; v != "" {
				b.WriteString(v)
			} else {
				b.WriteRune(unknownMark)
			}
			i = j - 1
		case c == '$' && i+1 < len(w) && strings.IndexByte("0123456789@*#?!-$", w[i+1]) >= 0:
			b.WriteRune(unknownMark)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isVarStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func hasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// roots are the state root as configured and with symlinks resolved.
func (pr Protector) roots() []home.Home {
	hs := []home.Home{pr.Home}
	if pr.RealRoot != "" && pr.RealRoot != pr.Home.Root {
		hs = append(hs, home.Home{Root: pr.RealRoot})
	}
	return hs
}

// matchProtected decides a pattern (globs and unknown fragments) the
// judge cannot list exactly: it is denied when some leading part of it
// could name the keys or the state root. pat is absolute or starts with
// an unknown fragment.
func (pr Protector) matchProtected(pat string, writes bool) *Violation {
	if v := pr.matchHookBinary(pat, writes); v != nil {
		return v
	}
	segs := strings.Split(pat, "/")
	i := 0
	for i < len(segs) && !hasGlob(segs[i]) && !strings.ContainsRune(segs[i], unknownMark) {
		i++
	}
	if lit := strings.Join(segs[:i], "/"); lit != "" {
		lit = filepath.Clean(lit)
		for _, h := range pr.roots() {
			if h.Contains(lit) {
				// the pattern's fixed part is already inside the state root:
				// judge it as some file below that part
				return pr.checkPathIn(h, filepath.Join(lit, "\x02"), writes, false)
			}
		}
	}
	hit := ""
	for k := max(i+1, 1); k <= len(segs); k++ {
		prefix := strings.Join(segs[:k], "/")
		if strings.Trim(prefix, "/"+string(unknownMark)) == "" {
			continue // nothing known yet
		}
		re, err := globRegexp(prefix)
		if err != nil {
			continue // not a pattern the shell would expand either
		}
		for _, h := range pr.roots() {
			if re.MatchString(h.KeysDir()) || re.MatchString(h.HMACKeyPath()) || re.MatchString(h.CheckpointKeyPath()) {
				return &Violation{ProtectKeys, "the path " + shown(pat) + " could name docket's keys (" + h.KeysDir() + "); tools may not read or write them"}
			}
			if re.MatchString(h.Root) && hit == "" {
				hit = h.Root
			}
		}
	}
	if hit != "" {
		return &Violation{ProtectStateRead, "the path " + shown(pat) + " could name docket's state root (" + hit + "); spell out a path outside it"}
	}
	return nil
}

func shown(pat string) string { return strings.ReplaceAll(pat, string(unknownMark), "…") }

// globRegexp compiles a shell pattern: * and ? stay within a path
// segment, ** crosses segments, [...] is a class, unknownMark matches
// anything.
func globRegexp(pat string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pat); i++ {
		switch c := pat[i]; c {
		case unknownMark:
			b.WriteString(".*")
		case '*':
			if strings.HasPrefix(pat[i:], "**") {
				// globstar (bash with globstar, Gemini and Claude's glob
				// tools): any depth
				b.WriteString(".*")
				for i+1 < len(pat) && pat[i+1] == '*' {
					i++
				}
				continue
			}
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(pat[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := pat[i+1 : i+1+j]
			neg := strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^")
			if neg {
				class = class[1:]
			}
			if class == "" {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString("[")
			if neg {
				b.WriteString("^")
			}
			for k := 0; k < len(class); k++ {
				if class[k] == '-' && k > 0 && k < len(class)-1 {
					b.WriteByte('-')
				} else {
					b.WriteString(regexp.QuoteMeta(string(class[k])))
				}
			}
			b.WriteString("]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// realPath resolves p against the filesystem as the kernel would: each
// existing component in turn, symlinks followed (".." after a symlink is
// its target's parent), the part from the first missing component on
// appended as written. One lstat per component; p itself when it is not
// absolute or the links loop.
func realPath(p string) string { return (*lstatMemo)(nil).realPath(p) }

// lstatMemo remembers lstat answers for one Check, so the words of one
// command line do not stat the same directories again.
type lstatMemo struct{ m map[string]lstatAnswer }

type lstatAnswer struct {
	ok   bool
	link string // the symlink's target, "" when not a symlink
}

func (c *lstatMemo) lstat(p string) lstatAnswer {
	if c != nil {
		if a, ok := c.m[p]; ok {
			return a
		}
	}
	var a lstatAnswer
	if st, err := os.Lstat(p); err == nil {
		a.ok = true
		if st.Mode()&fs.ModeSymlink != 0 {
			if t, err := os.Readlink(p); err == nil && t != "" {
				a.link = t
			} else {
				a.ok = false
			}
		}
	}
	if c != nil {
		if c.m == nil {
			c.m = map[string]lstatAnswer{}
		}
		if len(c.m) < 4096 {
			c.m[p] = a
		}
	}
	return a
}

func (c *lstatMemo) realPath(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return p
	}
	rest := strings.Split(p[1:], "/")
	resolved := "/"
	hops := 0
	for i := 0; i < len(rest); i++ {
		comp := rest[i]
		switch comp {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, comp)
		a := c.lstat(next)
		if !a.ok {
			return filepath.Join(append([]string{next}, rest[i+1:]...)...)
		}
		if a.link == "" {
			resolved = next
			continue
		}
		if hops++; hops > 40 {
			return filepath.Clean(p)
		}
		t := a.link
		if !filepath.IsAbs(t) {
			t = filepath.Join(resolved, t)
		}
		rest = append(strings.Split(strings.TrimPrefix(filepath.Clean(t), "/"), "/"), rest[i+1:]...)
		resolved = "/"
		i = -1
	}
	return resolved
}

// interpreters run inline code; version suffixes (python3.12) are
// dropped before the lookup.
var interpreters = words{"python", "python2", "python3", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "perl", "ruby", "irb", "php",
	"lua", "luajit", "rscript", "osascript", "pwsh", "powershell", "tclsh", "julia", "groovy", "jshell", "swift", "awk", "gawk", "sh", "bash", "zsh", "dash", "ksh", "fish"}

func isInterpreterName(n string) bool {
	n = strings.ToLower(strings.TrimRight(n, "0123456789."))
	return interpreters.has(n) || interpreters.has(n+"3")
}

// squash lowercases s and keeps only letters and digits, so that
// 'doc'+'ket', "hm" "ac.key" and os.path.join('keys','hmac.key') read as
// the words they spell.
func squash(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteByte(c)
		case c >= 'A' && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		}
	}
	return b.String()
}

// codeMentionsState is the inline-code rule: the squashed code names a
// key file, $DOCKET_HOME, the state root's path, or the state root's
// directory name together with one of its parts.
func (pr Protector) codeMentionsState(code string) bool {
	sq := squash(code)
	strong := []string{"hmackey", "checkpointkey", "dockethome"}
	for _, h := range pr.roots() {
		strong = append(strong, squash(h.Root))
		if pr.UserHome != "" {
			if rel, ok := strings.CutPrefix(h.Root, pr.UserHome+"/"); ok && len(squash(rel)) >= 6 {
				strong = append(strong, squash(rel))
			}
		}
	}
	for _, s := range strong {
		if s != "" && strings.Contains(sq, s) {
			return true
		}
	}
	for _, h := range pr.roots() {
		// the state root's parent as written from home (".local/state")
		// with one of the protected parts: the name itself may be globbed
		if pr.UserHome != "" {
			if rel, ok := strings.CutPrefix(filepath.Dir(h.Root), pr.UserHome+"/"); ok && len(squash(rel)) >= 6 && strings.Contains(sq, squash(rel)) {
				for _, part := range []string{"keys", "hmac", "ledger", "artifacts"} {
					if strings.Contains(sq, part) {
						return true
					}
				}
			}
		}
		base := squash(filepath.Base(h.Root))
		if len(base) < 3 || !strings.Contains(sq, base) {
			continue
		}
		for _, part := range []string{"keys", "hmac", "ledger", "artifacts", "storedb", "tokens", "localstate", "statehome"} {
			if strings.Contains(sq, part) {
				return true
			}
		}
	}
	return false
}

// checkInline applies the inline-code rule to a line that runs an
// interpreter: its -c/-e code, heredocs and here-strings are all in the
// line.
func (pr Protector) checkInline(line string, cc *CommandClass, cwd string) *Violation {
	has := false
	for _, s := range cc.Segments {
		if isInterpreterName(s.Name()) && (len(s.Argv) > 1 || strings.Contains(line, "<<")) {
			has = true
			break
		}
	}
	if !has {
		return nil
	}
	for _, dir := range pr.HookBins {
		for _, name := range hookBinaryNames {
			if strings.Contains(line, filepath.Join(dir, name)) {
				return &Violation{ProtectHookBinary, "the command runs an interpreter whose code names docket's hook binary " + filepath.Join(dir, name) + "; tools may not write, replace or remove it"}
			}
		}
	}
	if pr.codeMentionsState(line) {
		return &Violation{ProtectShellState, "the command runs an interpreter whose code names docket's state root or keys (" + pr.Home.Root + "); tools may not touch them"}
	}
	// a path the code names in a string, a pattern too
	// (glob.glob('/home/*/.local/*/d*/keys/h*')), as a shell word would be
	for _, lit := range codePaths(line) {
		if v := pr.checkWord(lit, cwd, false, false); v != nil {
			return &Violation{ProtectShellState, "the command runs an interpreter whose code names " + lit + ": " + v.Reason}
		}
	}
	return nil
}

// codePaths are the words of code that look like paths: a / or a
// leading ~, split at quotes, blanks and the punctuation around a
// string in code (open('…'), ["…", …]); at most maxCodePaths.
func codePaths(code string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(code, func(r rune) bool { return strings.ContainsRune(" \t\n'\"`(),;{}=+\\", r) }) {
		if len(w) > 1 && (strings.Contains(w, "/") || w[0] == '~') {
			out = append(out, w)
			if len(out) == maxCodePaths {
				break
			}
		}
	}
	return out
}

// maxCodePaths bounds the paths of inline code the protections check.
const maxCodePaths = 64

// checkRoutes denies calls of the review and approval routes of a docket
// server: the agent under judgment must not approve itself.
func (pr Protector) checkRoutes(p *ActionProposal, in map[string]any, cmd string) *Violation {
	var text string
	switch {
	case p.Context.Shell != nil:
		client := false
		for _, s := range p.Context.Shell.Segments {
			if netClients.has(s.Name()) || isInterpreterName(s.Name()) {
				client = true
				break
			}
		}
		if !client {
			return nil
		}
		text = cmd
	case p.Tool.Kind == "api" || p.mcpName() != "":
		text = string(p.Input)
	default:
		for _, f := range []string{"url", "uri", "endpoint"} {
			if s, ok := in[f].(string); ok {
				text += s + " "
			}
		}
	}
	sq := squash(text)
	if strings.Contains(sq, "v1reviewqueue") || strings.Contains(sq, "v1approvals") || strings.Contains(sq, "v1tokens") {
		return &Violation{ProtectSelfApproval, "the call reaches the review, approval or token routes of a docket server; those are for humans"}
	}
	return nil
}

var netClients = words{"curl", "wget", "http", "https", "xh", "httpie", "nc", "ncat", "socat", "telnet", "aria2c", "lwp-request", "GET", "POST", "PUT", "grpcurl", "websocat"}

// checkPatch judges every path an apply_patch payload names as a write.
func (pr Protector) checkPatch(in map[string]any, cwd string) *Violation {
	for _, v := range in {
		s, ok := v.(string)
		if !ok || !strings.Contains(s, "*** Begin Patch") {
			continue
		}
		for _, path := range PatchPaths(s) {
			ap := pr.resolve(pr.expand(path), cwd)
			if ap == "" {
				if strings.ContainsRune(pr.expand(path), unknownMark) {
					if v := pr.matchProtected(pr.expand(path), true); v != nil {
						return v
					}
				}
				continue
			}
			if v := pr.checkResolved(ap, true, false); v != nil {
				return v
			}
		}
	}
	return nil
}

// PatchPaths lists the files an apply_patch body adds, updates, deletes
// or moves to, in order.
func PatchPaths(patch string) []string {
	var out []string
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		for _, pre := range []string{"*** Add File:", "*** Update File:", "*** Delete File:", "*** Move to:", "*** Move File:"} {
			if rest, ok := strings.CutPrefix(line, pre); ok {
				if p := strings.TrimSpace(rest); p != "" {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// installedDocket is the docket CLI installed beside the running binary
// (make build puts the hooks and the CLI in one directory); "" when
// there is none.
var installedDocket = sync.OnceValue(func() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	exe = realPath(exe)
	if filepath.Base(exe) == "docket" {
		return exe
	}
	p := filepath.Join(filepath.Dir(exe), "docket")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
})

// trustedDocket reports whether argv0 runs the installed docket: the bare
// command (unless the line redefines it) or the installed absolute path.
func (pr Protector) trustedDocket(argv0 string, redefined bool) bool {
	if argv0 == "docket" {
		return !redefined
	}
	if !filepath.IsAbs(argv0) {
		return false
	}
	installed := pr.docketPath()
	if installed == "" {
		return false
	}
	return filepath.Clean(argv0) == installed || realPath(filepath.Clean(argv0)) == realPath(installed)
}

// docketPath is Docket, found on first use when the protector was
// built to look for it.
func (pr Protector) docketPath() string {
	if pr.Docket == "" && pr.findDocket != nil {
		return pr.findDocket()
	}
	return pr.Docket
}

func (pr Protector) installedHint() string {
	installed := pr.docketPath()
	if installed == "" {
		return ""
	}
	return " (" + installed + ")"
}

// redefinesDocket reports whether a line may change what a bare `docket`
// runs: PATH assignments, aliases and functions.
func redefinesDocket(line string) bool {
	return strings.Contains(line, "PATH=") || strings.Contains(line, "alias ") || strings.Contains(line, "hash ") ||
		strings.Contains(line, "docket()") || strings.Contains(line, "docket ()") || strings.Contains(line, "function docket")
}

var reviewActionNames = words{"confirm", "edit", "evidence_only", "restrict_scope", "mark_stale", "merge", "reject", "dispute", "supersede", "escalate"}

// humanOnlyDocket names the docket subcommand in argv that only a human
// may run (approvals, reviews, policy approval, tokens, key setup), or "".
func humanOnlyDocket(argv []string) string {
	sub, rest := subcommand(argv, nil)
	arg := ""
	for _, a := range rest[min(1, len(rest)):] {
		if !strings.HasPrefix(a, "-") {
			arg = a
			break
		}
	}
	switch sub {
	case "approvals":
		if arg != "" && arg != "list" && arg != "show" {
			return "approvals " + arg
		}
	case "review":
		if reviewActionNames.has(arg) {
			return "review " + arg
		}
	case "policy":
		if arg == "approve" {
			return "policy approve"
		}
	case "token", "init", "install", "uninstall":
		return sub
	}
	return ""
}

// braceExpand expands the shell's brace alternatives ({a,b}, nested) of
// w, up to limit words; w alone when it has none. Sequences ({1..3}) are
// left as they are.
func braceExpand(w string, limit int) []string {
	open := -1
	depth := 0
	for i := 0; i < len(w); i++ {
		switch w[i] {
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth != 0 {
				continue
			}
			body := w[open+1 : i]
			parts := splitTop(body)
			if len(parts) < 2 {
				open = -1
				continue
			}
			var out []string
			for _, p := range parts {
				for _, rest := range braceExpand(w[:open]+p+w[i+1:], limit) {
					if len(out) >= limit {
						return out
					}
					out = append(out, rest)
				}
			}
			return out
		}
	}
	return []string{w}
}

// splitTop splits s at the commas outside nested braces.
func splitTop(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}
