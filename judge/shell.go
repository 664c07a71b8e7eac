package judge

import (
	"encoding/hex"
	"path"
	"slices"
	"strings"

	"github.com/docket/docket/policies"
)

// maxShellDepth bounds nested command substitutions and `sh -c` strings.
const maxShellDepth = 4

// Segment is one simple command of a shell line, after sudo, env
// assignments and wrappers (nohup, time, timeout, xargs, …) are stripped.
type Segment struct {
	Argv      []string // argv[0] is the command as written
	Sudo      bool
	Redirects []string // files written by >, >>, 2>, &> …
	Inputs    []string // files read by <
	// Here: the command's input is a here-document (<<EOF) or a
	// here-string (<<<), whose text is Stdin; stdinExpands: the shell
	// expands it first (an unquoted here-document), so its $(…) run.
	Here         bool
	Stdin        string
	stdinExpands bool
	// Piped is a later command of a pipeline: its input is the previous
	// command's output.
	Piped bool
	// XArgs: xargs runs the command, adding arguments from its input.
	XArgs bool
	// Cwd is the working directory the segment runs in, as far as the
	// line's own `cd`s show; "" when unknown.
	Cwd string
}

// Name is the segment's command name without its directory.
func (s Segment) Name() string {
	if len(s.Argv) == 0 {
		return ""
	}
	return path.Base(s.Argv[0])
}

// String is the segment's argv joined by single spaces; rules match it.
func (s Segment) String() string { return strings.Join(s.Argv, " ") }

// CommandClass is the Bash classifier's verdict on one command line.
type CommandClass struct {
	Class    policies.RiskClass
	Reasons  []string // one short reason per escalation of the class
	Segments []Segment
	// Actions are the acts the line performs that rules may name
	// (messages, payments, access changes, approvals, secrets printed).
	Actions []Act
}

func (c *CommandClass) act(kind, reason string) {
	c.Actions = addAction(c.Actions, kind, reason)
}

func (c *CommandClass) raise(to policies.RiskClass, reason string) {
	if to.Rank() > c.Class.Rank() {
		c.Class = to
	}
	if to.Rank() >= policies.ReversibleWrite.Rank() && reason != "" {
		c.Reasons = append(c.Reasons, reason)
	}
}

// ShellContext is what the classifier knows beyond the line itself.
type ShellContext struct {
	Cwd    string // the session's working directory
	Branch string // the current git branch, "" when unknown
	// script: the line is a script file's (scriptRuns), whose commands
	// computed at run time, and quoting the lexer cannot follow, are
	// its author's idiom, not a sign of hiding what runs.
	script bool
}

// ClassifyCommand classifies a shell command line. It understands
// quoting, &&, ||, ;, |, &, newlines, subshells, $(…) and backticks,
// sudo, env prefixes and `sh -c`. An empty line is read_only; a line it
// cannot parse (unbalanced quotes) is high_risk.
func ClassifyCommand(line string, ctx ShellContext) CommandClass {
	c := CommandClass{Class: policies.ReadOnly}
	classifyLine(&c, line, ctx, 0)
	return c
}

func classifyLine(c *CommandClass, line string, ctx ShellContext, depth int) {
	if depth > maxShellDepth {
		if !ctx.script {
			c.raise(policies.HighRisk, "shell nesting too deep to judge")
		}
		return
	}
	pipes, nested, ok := lexShell(inlineHeredocs(line))
	if !ok && ctx.script {
		return
	}
	if !ok {
		c.raise(policies.HighRisk, "unbalanced quoting: cannot parse the command")
		return
	}
	for _, n := range nested {
		classifyLine(c, n, ctx, depth+1)
	}
	cwd := ctx.Cwd
	for _, pl := range pipes {
		if what := revealsSecrets(pl); what != "" {
			c.act(policies.ActionRevealSecret, what+" prints secret values into the transcript")
		}
		var fetches bool
		var before []Segment // the pipeline's segments so far
		for i, raw := range pl {
			seg := strip(raw)
			seg.Cwd, seg.Piped = cwd, i > 0
			if seg.stdinExpands {
				classifyExpansions(c, seg.Stdin, ctx, depth)
			}
			if len(seg.Argv) == 0 {
				if len(seg.Redirects) == 0 && len(seg.Inputs) == 0 {
					continue
				}
				// redirections alone (> f, or a group's: { …; } > f) are
				// the no-op command's, so the protections see their files
				seg.Argv = []string{":"}
				if len(seg.Redirects) > 0 {
					c.raise(policies.ReversibleWrite, "redirect writes a file")
				}
				c.Segments = append(c.Segments, seg)
				continue
			}
			c.Segments = append(c.Segments, seg)
			if seg.Name() == "cd" {
				cwd = cdTarget(cwd, seg.Argv)
			}
			classifySegment(c, seg, ctx, depth)
			if !ctx.script {
				classifyComputed(c, seg, before)
			}
			classifyStdin(c, seg, ctx, depth)
			classifyEmbedded(c, seg, ctx, depth)
			before = append(before, seg)
			name := seg.Name()
			if name == "curl" || name == "wget" {
				fetches = true
			}
			if i > 0 && fetches && isInterpreter(seg) {
				c.raise(policies.HighRisk, "pipes a download into an interpreter")
			}
		}
	}
}

func cdTarget(cwd string, argv []string) string {
	if len(argv) < 2 {
		return ""
	}
	t := argv[len(argv)-1]
	switch {
	case strings.HasPrefix(t, "/"):
		return path.Clean(t)
	case strings.HasPrefix(t, "~") || strings.HasPrefix(t, "$") || t == "-":
		return ""
	case cwd != "":
		return path.Join(cwd, t)
	}
	return ""
}

func isInterpreter(s Segment) bool {
	switch s.Name() {
	case "sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python3", "perl", "ruby", "node":
		for _, a := range s.Argv[1:] {
			if !strings.HasPrefix(a, "-") {
				return false // runs a script file, not stdin
			}
		}
		return true
	}
	return false
}

// lexShell splits line into pipelines of simple commands (each a list of
// words with quotes removed, operators dropped) and returns the bodies of
// $(…), `…` and <(…) for separate classification.
func lexShell(line string) (pipes [][][]string, nested []string, ok bool) {
	var (
		pipeline [][]string
		words    []string
		cur      strings.Builder
		inWord   bool
	)
	endWord := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	endCmd := func() {
		endWord()
		if len(words) > 0 {
			pipeline = append(pipeline, words)
			words = nil
		}
	}
	endPipe := func() {
		endCmd()
		if len(pipeline) > 0 {
			pipes = append(pipes, pipeline)
			pipeline = nil
		}
	}
	n := len(line)
	for i := 0; i < n; i++ {
		ch := line[i]
		switch {
		case ch == '\\':
			if i+1 < n {
				if line[i+1] != '\n' {
					cur.WriteByte(line[i+1])
					inWord = true
				}
				i++
			}
		case ch == '$' && i+1 < n && line[i+1] == '\'':
			// ANSI-C quoting: $'\x67it' is git
			text, end, ok := ansiC(line, i+2)
			if !ok {
				return nil, nil, false
			}
			cur.WriteString(text)
			inWord = true
			i = end
		case ch == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, nil, false
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case ch == '"':
			i++
			for ; i < n && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < n:
					i++
					cur.WriteByte(line[i])
				case line[i] == '`':
					j := strings.IndexByte(line[i+1:], '`')
					if j < 0 {
						return nil, nil, false
					}
					nested = append(nested, line[i+1:i+1+j])
					i += j + 1
				case line[i] == '$' && i+1 < n && line[i+1] == '(':
					body, end, ok := parenBody(line, i+1)
					if !ok {
						return nil, nil, false
					}
					nested = append(nested, body)
					cur.WriteString("$(" + body + ")")
					i = end
				default:
					cur.WriteByte(line[i])
				}
			}
			if i >= n {
				return nil, nil, false
			}
			inWord = true
		case ch == '`':
			j := strings.IndexByte(line[i+1:], '`')
			if j < 0 {
				return nil, nil, false
			}
			nested = append(nested, line[i+1:i+1+j])
			cur.WriteString("`" + line[i+1:i+1+j] + "`")
			inWord = true
			i += j + 1
		case ch == '$' && i+1 < n && line[i+1] == '(':
			body, end, ok := parenBody(line, i+1)
			if !ok {
				return nil, nil, false
			}
			nested = append(nested, body)
			cur.WriteString("$(" + body + ")")
			inWord = true
			i = end
		case (ch == '<' || ch == '>') && i+1 < n && line[i+1] == '(':
			body, end, ok := parenBody(line, i+1)
			if !ok {
				return nil, nil, false
			}
			nested = append(nested, body)
			// the word stands for a file the substitution makes
			cur.WriteString(string(ch) + "(" + body + ")")
			inWord = true
			i = end
		case ch == '#' && !inWord:
			for i < n && line[i] != '\n' {
				i++
			}
			endPipe()
		case ch == ' ' || ch == '\t':
			endWord()
		case ch == '\n' || ch == ';' || ch == '(' || ch == ')':
			endPipe()
		case (ch == '{' || ch == '}') && !inWord && len(words) == 0 && groupBrace(line, i):
			// a group's braces are words of their own at a command's
			// start; anywhere else ({} for find, echo {}) they are text
			endPipe()
		case ch == '&':
			if i+1 < n && line[i+1] == '&' {
				i++
				endPipe()
			} else if i+1 < n && line[i+1] == '>' {
				endWord()
				words = append(words, ">")
				i++
			} else if inWord && cur.Len() > 0 && strings.HasSuffix(cur.String(), ">") {
				cur.WriteByte('&') // 2>&1
			} else {
				endPipe()
			}
		case ch == '|':
			if i+1 < n && line[i+1] == '|' {
				i++
				endPipe()
			} else {
				if i+1 < n && line[i+1] == '&' {
					i++
				}
				endCmd()
			}
		case ch == '>' || ch == '<':
			// a redirection operator is its own word: 2>, >>, &>, <<<
			prefix := ""
			if inWord && isDigits(cur.String()) {
				prefix = cur.String()
				cur.Reset()
				inWord = false
			}
			endWord()
			op := prefix + string(ch)
			for i+1 < n && (line[i+1] == '>' || line[i+1] == '<' || line[i+1] == '&' || line[i+1] == '|') {
				i++
				op += string(line[i])
			}
			words = append(words, op)
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	endPipe()
	return pipes, nested, true
}

// groupBrace reports whether the brace at line[i], at a command's start,
// is a group's: alone as a word (followed by white space, an operator or
// the end), as `{ cmd; }` needs, not the start of a word like {a,b}.
func groupBrace(line string, i int) bool {
	if i+1 >= len(line) {
		return true
	}
	switch line[i+1] {
	case ' ', '\t', '\n', ';', '&', '|', '>', '<', ')':
		return true
	}
	return false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parenBody returns the text inside the parenthesis at line[open] and the
// index of its closing parenthesis, honouring quotes and nesting.
func parenBody(line string, open int) (string, int, bool) {
	depth := 0
	for i := open; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return "", 0, false
			}
			i += j + 1
		case '"':
			i++
			for i < len(line) && line[i] != '"' {
				if line[i] == '\\' {
					i++
				}
				i++
			}
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return line[open+1 : i], i, true
			}
		}
	}
	return "", 0, false
}

// strip turns raw words into a Segment: redirections are pulled out, and
// env assignments, sudo and wrapper commands are removed from the front.
func strip(raw []string) Segment {
	var s Segment
	var words []string
	for i := 0; i < len(raw); i++ {
		w := raw[i]
		if isRedirOp(w) {
			if i+1 < len(raw) {
				t := raw[i+1]
				i++
				switch {
				case strings.HasSuffix(w, "&") && isDigits(t) || t == "-":
					// fd duplication: 2>&1
				case strings.HasSuffix(w, "<<<"):
					s.Here, s.Stdin = true, t
				case strings.HasSuffix(w, "<<"):
					// a here-document: its delimiter names no file
					s.Here = true
					if h, ok := parseHeredocWord(t); ok {
						s.Stdin, s.stdinExpands = h.body, h.expands
					}
				case strings.HasPrefix(strings.TrimLeft(w, "0123456789"), "<"):
					s.Inputs = append(s.Inputs, t)
				default:
					s.Redirects = append(s.Redirects, t)
				}
			}
			continue
		}
		words = append(words, w)
	}
	for len(words) > 0 {
		w := words[0]
		switch {
		case isAssignment(w):
			words = words[1:]
		case w == "sudo" || w == "doas":
			s.Sudo = true
			words = skipFlags(words[1:], map[string]bool{"-u": true, "-g": true, "-C": true, "-D": true, "-h": true, "-p": true, "-r": true, "-t": true, "-U": true})
		case shellKeywords.has(w):
			words = words[1:] // if, then, do, !, coproc: the command follows
		case w == "for" || w == "select":
			return s // a loop's header (its $(…) are classified on their own)
		case w == "env":
			if line, ok := optionValue(words[1:], 'S', "--split-string"); ok {
				words = []string{"sh", "-c", line} // env -S 'cmd args': a line env splits
				continue
			}
			rest := skipFlags(words[1:], map[string]bool{"-u": true, "-C": true})
			if len(rest) == 0 {
				s.Argv = words // env alone prints the environment
				return s
			}
			words = rest
		case w == "su" || w == "runuser":
			line, ok := optionValue(words[1:], 'c', "--command")
			if !ok {
				s.Argv = words // a login shell: interactive.go
				return s
			}
			s.Sudo = true
			words = []string{"sh", "-c", line}
		case w == "script":
			line, ok := optionValue(words[1:], 'c', "--command")
			if !ok {
				s.Argv = words // a recorded interactive shell: interactive.go
				return s
			}
			words = []string{"sh", "-c", line} // script -qc 'cmd' log
		case w == "flock":
			if line, ok := optionValue(words[1:], 'c', "--command"); ok {
				words = []string{"sh", "-c", line} // flock /tmp/l -c 'cmd'
				continue
			}
			rest := skipFlags(words[1:], map[string]bool{"-w": true, "--timeout": true, "-E": true, "--conflict-exit-code": true})
			if len(rest) < 2 {
				s.Argv = words // flock FD: no command
				return s
			}
			words = rest[1:] // past the lock file
		case w == "watch":
			rest := skipFlags(words[1:], map[string]bool{"-n": true, "--interval": true, "-q": true, "--equexit": true})
			if hasFlag(words[:len(words)-len(rest)], "-x", "--exec") || len(rest) == 0 {
				words = rest
			} else {
				words = []string{"sh", "-c", strings.Join(rest, " ")} // watch runs its words through sh -c
			}
		case w == "screen":
			rest := words[1:]
			for len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
				// -dmS name: a cluster ending in a letter that takes a value
				if f := rest[0]; len(f) > 1 && strings.ContainsRune("ScstehpT", rune(f[len(f)-1])) && len(rest) > 1 {
					rest = rest[1:]
				}
				rest = rest[1:]
			}
			if len(rest) == 0 || screenSends(words[1:len(words)-len(rest)]) {
				s.Argv = words // attached, or a command to a running session (classifySegment)
				return s
			}
			words = rest // screen -dm cmd: a detached session runs cmd
		case w == "setsid" || w == "busybox":
			words = skipFlags(words[1:], nil)
		case w == "taskset" || w == "chrt":
			rest := skipFlags(words[1:], map[string]bool{"-T": true, "-P": true, "-D": true})
			if hasFlag(words[:len(words)-len(rest)], "-p", "--pid") || len(rest) < 2 {
				s.Argv = words // of a running process: no command
				return s
			}
			words = rest[1:] // past the mask or priority
		case w == "parallel":
			words = skipFlags(words[1:], map[string]bool{"-j": true, "--jobs": true, "-S": true, "--sshlogin": true, "-a": true, "--arg-file": true, "--delay": true, "--timeout": true, "-d": true, "--delimiter": true, "-n": true, "-N": true})
			if i := slices.Index(words, ":::"); i >= 0 {
				words = words[:i]
			}
			s.XArgs = true
		case w == "nohup" || w == "time" || w == "command" || w == "exec" || w == "builtin" || w == "stdbuf" || w == "unbuffer" || w == "caffeinate" || w == "chronic" || w == "fakeroot":
			words = skipFlags(words[1:], map[string]bool{"-i": true, "-o": true, "-e": true, "-a": true}) // exec -a NAME
		case w == "strace" || w == "ltrace":
			rest := skipFlags(words[1:], map[string]bool{"-o": true, "-e": true, "-p": true, "-s": true, "-u": true, "-E": true, "-P": true})
			if hasFlag(words[:len(words)-len(rest)], "-p") || len(rest) == 0 {
				s.Argv = words // attached to a running process: no command
				return s
			}
			words = rest
		case w == "faketime" || w == "cpulimit":
			rest := skipFlags(words[1:], map[string]bool{"-f": true, "-l": true, "--limit": true, "-p": true, "-e": true})
			if w == "faketime" && len(rest) > 0 {
				rest = rest[1:] // the time
			}
			words = rest
		case w == "nice" || w == "ionice":
			words = skipFlags(words[1:], map[string]bool{"-n": true, "-c": true})
		case w == "timeout":
			words = skipFlags(words[1:], map[string]bool{"-s": true, "-k": true})
			if len(words) > 0 {
				words = words[1:] // the duration
			}
		case w == "xargs":
			words = skipFlags(words[1:], map[string]bool{"-I": true, "-n": true, "-P": true, "-d": true, "-L": true, "-s": true, "-E": true, "-a": true})
			s.XArgs = true
		default:
			s.Argv = words
			return s
		}
	}
	return s
}

// screenSends reports whether screen's flags hold -X: a command sent to
// a running session (stuff types into it).
func screenSends(flags []string) bool {
	return slices.ContainsFunc(flags, func(f string) bool { return len(f) > 1 && f[0] == '-' && f[1] != '-' && strings.Contains(f, "X") })
}

// classifyTmux: tmux runs a command line in a session, window or pane
// it makes (new-session, new-window, split-window, respawn-pane,
// run-shell), classified as the line it is; send-keys types into a
// running pane, past the judge.
func classifyTmux(c *CommandClass, argv []string, ctx ShellContext, depth int) {
	sub, rest := subcommand(argv, map[string]bool{"-L": true, "-S": true, "-f": true, "-T": true})
	switch sub {
	case "send-keys", "send":
		c.raise(policies.HighRisk, "tmux send-keys types into a terminal, past the judge")
	case "new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane", "respawnp", "respawn-window", "respawnw", "run-shell", "run":
		cmd := skipFlags(rest[1:], map[string]bool{"-s": true, "-n": true, "-c": true, "-t": true, "-x": true, "-y": true, "-e": true, "-F": true, "-f": true, "-l": true})
		if len(cmd) > 0 {
			classifyLine(c, strings.Join(cmd, " "), ctx, depth+1)
		}
	}
}

// shellKeywords start, continue or end a compound command, or negate
// one; the command after them is what runs.
var shellKeywords = words{"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "esac", "!", "coproc"}

func isRedirOp(w string) bool {
	if w == "" {
		return false
	}
	i := 0
	for i < len(w) && w[i] >= '0' && w[i] <= '9' {
		i++
	}
	if i == len(w) {
		return false
	}
	for ; i < len(w); i++ {
		switch w[i] {
		case '<', '>', '&', '|':
		default:
			return false
		}
	}
	return strings.ContainsAny(w, "<>")
}

func isAssignment(w string) bool {
	eq := strings.IndexByte(w, '=')
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := w[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// skipFlags drops leading flags (and the values of flags in withValue),
// and leading env assignments, up to the wrapped command.
func skipFlags(words []string, withValue map[string]bool) []string {
	for len(words) > 0 {
		w := words[0]
		switch {
		case w == "--":
			return words[1:]
		case isAssignment(w):
			words = words[1:]
		case strings.HasPrefix(w, "-") && len(w) > 1:
			words = words[1:]
			if withValue[w] && len(words) > 0 {
				words = words[1:]
			}
		default:
			return words
		}
	}
	return words
}

var (
	readOnlyCommands = words{"ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "ack", "wc", "echo", "printf",
		"pwd", "which", "whereis", "type", "stat", "file", "diff", "cmp", "tree", "jq", "yq", "awk", "sort", "uniq", "cut", "tr",
		"printenv", "date", "whoami", "id", "uname", "hostname", "du", "df", "ps", "top", "true", "false", "test", "[", "[[",
		"basename", "dirname", "realpath", "readlink", "sha256sum", "shasum", "md5sum", "md5", "column", "nl", "fold", "rev",
		"seq", "sleep", "cd", "pushd", "popd", "export", "set", "unset", "alias", "history", "man", "help",
		"lsof", "netstat", "ss", "free", "uptime", "env", "locale", "tput", "clear", "fd", "bat", "glow", "git-log", "read",
		"exit", "return", "local", "declare", "wait", "jobs", "cal", "xxd", "hexdump", "od", "strings", "base64"}
	mailCommands   = words{"mail", "mailx", "sendmail", "mutt", "neomutt", "msmtp", "swaks", "slack", "slack-cli", "slackcat", "telegram-send", "twilio", "signal-cli", "discord", "notify-send-remote", "wall", "write", "osascript"}
	dbCommands     = words{"psql", "mysql", "mariadb", "mongo", "mongosh", "redis-cli", "sqlcmd", "clickhouse-client", "cqlsh", "cockroach", "pg_restore", "pg_dump", "mysqldump", "influx", "bq", "snowsql"}
	diskCommands   = words{"dd", "mkfs", "fdisk", "sfdisk", "parted", "shred", "wipefs", "mkswap", "diskutil", "format"}
	systemCommands = words{"shutdown", "reboot", "halt", "poweroff", "systemctl", "service", "launchctl", "init", "iptables", "ufw", "useradd", "userdel", "usermod", "passwd", "visudo", "mount", "umount", "crontab"}
	remoteCommands = words{"ssh", "scp", "sftp", "rsync", "nc", "ncat", "telnet", "ftp"}
	publishVerbs   = words{"publish", "upload", "push", "release"}
)

func hasFlag(argv []string, flags ...string) bool {
	for _, a := range argv[1:] {
		for _, f := range flags {
			if a == f || strings.HasPrefix(f, "--") && strings.HasPrefix(a, f+"=") {
				return true
			}
			// combined short flags: -rf contains r and f
			if len(f) == 2 && f[0] == '-' && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], f[1]) >= 0 {
				return true
			}
		}
	}
	return false
}

func isMainBranch(b string) bool {
	b = strings.TrimPrefix(b, "refs/heads/")
	return b == "main" || b == "master" || b == "trunk" || b == "production" || b == "prod" || strings.HasPrefix(b, "release/")
}

// subcommand returns argv's first non-flag word after skipping global
// flags that take a value.
func subcommand(argv []string, withValue map[string]bool) (string, []string) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if strings.HasPrefix(a, "-") {
			if withValue[a] {
				i++
			}
			continue
		}
		return a, argv[i:]
	}
	return "", nil
}

func classifySegment(c *CommandClass, s Segment, ctx ShellContext, depth int) {
	argv := s.Argv
	name := s.Name()
	if s.Sudo {
		c.raise(policies.HighRisk, "runs as root (sudo)")
	}
	for _, r := range s.Redirects {
		if r != "/dev/null" && r != "/dev/stderr" && r != "/dev/stdout" && !strings.HasPrefix(r, "&") {
			c.raise(policies.ReversibleWrite, "redirect writes "+r)
		}
	}
	switch {
	case isShellName(name):
		if command, _ := shellInvocation(argv); command != "" {
			classifyLine(c, command, ctx, depth+1)
			return
		}
		if len(argv) > 1 {
			c.raise(policies.ReversibleWrite, "runs a shell script")
		}
	case name == "eval":
		classifyLine(c, strings.Join(argv[1:], " "), ctx, depth+1)
	case name == "docket" && argv[0] != "docket" && (!path.IsAbs(argv[0]) || argv[0] != installedDocket()):
		// a binary named docket elsewhere is not docket
		if what := humanOnlyDocket(argv); what != "" {
			c.raise(policies.HighRisk, "docket "+what+" is for humans")
		} else {
			c.raise(policies.ReversibleWrite, argv[0]+" is not the installed docket")
		}
	case name == "docket":
		sub, rest := subcommand(argv, nil)
		switch sub {
		case "validate", "propose", "verify", "doctor", "help", "version", "checkpoint", "prove", "inspect", "recall", "", "-h", "--help":
		case "policy":
			if len(rest) < 2 || rest[1] != "status" && rest[1] != "diff" {
				c.raise(policies.HighRisk, "docket policy is for humans")
			}
		case "approvals":
			if len(argv) > 2 && argv[2] != "list" && argv[2] != "show" && !strings.HasPrefix(argv[2], "-") {
				c.raise(policies.HighRisk, "docket approvals "+argv[2]+" is for humans")
			}
		default:
			c.raise(policies.HighRisk, "docket "+sub+" is for humans")
		}
	case name == "make" || name == "gmake" || name == "just" || name == "task" || name == "mage":
		c.raise(policies.ReversibleWrite, "")
		for _, a := range argv[1:] {
			if target := strings.ToLower(a); publishVerbs.has(target) || target == "deploy" || strings.HasPrefix(target, "deploy-") || strings.HasPrefix(target, "release-") || strings.HasPrefix(target, "publish-") {
				c.raise(policies.HighRisk, name+" "+a+" publishes or deploys")
			}
		}
	case name == "kill" || name == "pkill" || name == "killall":
		c.raise(policies.ReversibleWrite, "")
	case name == "git":
		classifyGit(c, argv, ctx)
	case name == "gh":
		classifyGH(c, argv)
	case name == "glab":
		sub, rest := subcommand(argv, map[string]bool{"-R": true, "--repo": true})
		verb, _ := ghVerb(rest)
		glabActions(c, sub, rest)
		switch {
		case verb == "view" || verb == "list" || verb == "diff" || verb == "status" || verb == "" || sub == "api" && len(c.Actions) == 0:
			c.raise(policies.ReversibleWrite, "")
		default:
			c.raise(policies.ExternalSideEffect, "glab "+sub+" "+verb+" changes GitLab")
		}
	case name == "curl":
		if hasFlag(argv, "-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "-F", "--form", "-T", "--upload-file", "--json") {
			c.raise(policies.ExternalSideEffect, "curl sends a request body")
			requestActions(c, argv)
		} else if m := flagValue(argv, "-X", "--request"); m != "" && !strings.EqualFold(m, "GET") && !strings.EqualFold(m, "HEAD") {
			c.raise(policies.ExternalSideEffect, "curl "+strings.ToUpper(m))
			requestActions(c, argv)
		} else if hasFlag(argv, "-o", "--output", "-O", "--remote-name") {
			c.raise(policies.ReversibleWrite, "curl downloads a file")
		}
	case name == "wget":
		if hasFlag(argv, "--post-data", "--post-file", "--body-data", "--body-file") {
			c.raise(policies.ExternalSideEffect, "wget sends a request body")
			requestActions(c, argv)
		} else if m := flagValue(argv, "--method"); m != "" && !strings.EqualFold(m, "GET") {
			c.raise(policies.ExternalSideEffect, "wget "+strings.ToUpper(m))
			requestActions(c, argv)
		} else if !hasFlag(argv, "--spider") {
			c.raise(policies.ReversibleWrite, "wget downloads a file")
		}
	case name == "rm" || name == "rmdir" || name == "unlink" || name == "trash":
		if hasFlag(argv, "-r", "-R", "--recursive") {
			c.raise(policies.HighRisk, "deletes recursively")
		} else {
			c.raise(policies.ReversibleWrite, "deletes files")
		}
	case name == "find":
		if hasFlag(argv, "-delete") {
			c.raise(policies.HighRisk, "find deletes files")
		}
		for i, a := range argv {
			if (a == "-exec" || a == "-execdir" || a == "-ok") && i+1 < len(argv) {
				end := len(argv)
				for j := i + 1; j < len(argv); j++ {
					if argv[j] == ";" || argv[j] == "+" || argv[j] == "\\;" {
						end = j
						break
					}
				}
				classifySegment(c, strip(argv[i+1:end]), ctx, depth+1)
			}
		}
	case name == "chown" || name == "chgrp" || name == "chattr" || name == "setfacl":
		c.raise(policies.HighRisk, "changes ownership or permissions")
	case name == "chmod":
		if hasFlag(argv, "-R", "--recursive") || chmodDangerous(argv) {
			c.raise(policies.HighRisk, "changes permissions broadly")
		} else {
			c.raise(policies.ReversibleWrite, "changes file mode")
		}
	case diskCommands.has(name) || strings.HasPrefix(name, "mkfs."):
		c.raise(policies.HighRisk, name+" writes disks directly")
	case systemCommands.has(name):
		c.raise(policies.HighRisk, name+" changes the system")
	case (name == "at" || name == "batch") && !hasFlag(argv, "-l", "-r", "-d", "-c"):
		c.raise(policies.HighRisk, name+" schedules commands that run later, past the judge")
	case name == "systemd-run":
		c.raise(policies.HighRisk, "systemd-run runs a command as a unit of its own, outside this session, past the judge")
	case name == "screen" && screenSends(argv[1:]):
		c.raise(policies.HighRisk, "screen -X sends input to a running session, past the judge")
	case name == "tmux":
		classifyTmux(c, argv, ctx, depth)
	case name == "kubectl" || name == "oc":
		sub, _ := subcommand(argv, map[string]bool{"-n": true, "--namespace": true, "--context": true, "-c": true, "--kubeconfig": true})
		switch sub {
		case "get", "describe", "logs", "explain", "version", "api-resources", "config", "top", "diff", "auth", "cluster-info":
		default:
			c.raise(policies.HighRisk, name+" "+sub+" changes a cluster")
		}
	case name == "helm":
		sub, _ := subcommand(argv, map[string]bool{"-n": true, "--namespace": true, "--kube-context": true})
		switch sub {
		case "install", "upgrade", "uninstall", "delete", "rollback", "push":
			c.raise(policies.HighRisk, "helm "+sub+" changes a cluster")
		}
	case name == "terraform" || name == "tofu" || name == "terragrunt" || name == "pulumi" || name == "cdk":
		sub, rest := subcommand(argv, map[string]bool{"-chdir": true})
		switch sub {
		case "apply", "destroy", "import", "up", "deploy", "taint", "untaint", "refresh":
			c.raise(policies.HighRisk, name+" "+sub+" changes infrastructure")
		case "state":
			if len(rest) > 1 && rest[1] != "list" && rest[1] != "show" {
				c.raise(policies.HighRisk, name+" state "+rest[1])
			}
		case "init":
			c.raise(policies.ReversibleWrite, "")
		}
	case name == "aws" || name == "gcloud" || name == "az" || name == "doctl" || name == "flyctl" || name == "fly" || name == "heroku" || name == "vercel" || name == "netlify" || name == "wrangler" || name == "firebase" || name == "serverless" || name == "sls":
		classifyCloud(c, argv)
	case name == "docker" || name == "podman":
		if why := privilegedContainer(argv); why != "" {
			c.raise(policies.HighRisk, why)
		}
		sub, _ := subcommand(argv, map[string]bool{"-H": true, "--context": true})
		switch sub {
		case "push", "login":
			c.raise(policies.ExternalSideEffect, name+" "+sub)
		case "ps", "images", "inspect", "logs", "version", "info":
		default:
			c.raise(policies.ReversibleWrite, "")
		}
	case name == "npm" || name == "yarn" || name == "pnpm" || name == "bun" || name == "cargo" || name == "gem" || name == "poetry" || name == "twine" || name == "dotnet" || name == "mvn" || name == "gradle" || name == "hex" || name == "mix" || name == "flit" || name == "hatch" || name == "uv":
		sub, rest := subcommand(argv, nil)
		if publishVerbs.has(sub) || name == "twine" && sub == "upload" || sub == "nuget" && len(rest) > 1 && rest[1] == "push" || sub == "deploy" || name == "uv" && sub == "publish" {
			c.raise(policies.HighRisk, name+" "+sub+" publishes a package")
		} else if sub == "unpublish" || sub == "yank" || sub == "owner" || sub == "deprecate" {
			c.raise(policies.HighRisk, name+" "+sub+" changes a published package")
		} else {
			c.raise(policies.ReversibleWrite, "")
		}
	case mailCommands.has(name):
		c.raise(policies.ExternalSideEffect, name+" sends a message")
		if name != "osascript" {
			c.act(policies.ActionMessage, name+" sends a message people read")
		}
	case name == "stripe":
		c.raise(policies.ReversibleWrite, "")
		stripeActions(c, argv)
	case dbCommands.has(name):
		c.raise(policies.ExternalSideEffect, name+" talks to a database")
		if destructiveSQL(argv) {
			c.raise(policies.HighRisk, "destructive SQL")
		}
	case name == "sqlite3":
		c.raise(policies.ReversibleWrite, "")
		if destructiveSQL(argv) {
			c.raise(policies.HighRisk, "destructive SQL")
		}
	case remoteCommands.has(name):
		c.raise(policies.ExternalSideEffect, name+" reaches another host")
	case name == "sed" || name == "perl":
		if hasFlag(argv, "-i", "--in-place") {
			c.raise(policies.ReversibleWrite, "edits files in place")
		}
	case name == "tee" || name == "cp" || name == "mv" || name == "ln" || name == "mkdir" || name == "touch" || name == "install" || name == "tar" || name == "unzip" || name == "zip" || name == "patch":
		c.raise(policies.ReversibleWrite, "")
	case readOnlyCommands.has(name):
	case name == "go":
		sub, _ := subcommand(argv, nil)
		switch sub {
		case "version", "env", "doc", "list", "vet":
		default:
			c.raise(policies.ReversibleWrite, "")
		}
	default:
		c.raise(policies.ReversibleWrite, "")
	}
}

// flagValue is the value of argv's first option among flags (optionArg),
// "" for none.
func flagValue(argv []string, flags ...string) string {
	for i := 0; i < len(argv); i++ {
		if v, ok := optionArg(argv, &i, flags...); ok {
			return v
		}
	}
	return ""
}

func chmodDangerous(argv []string) bool {
	for _, a := range argv[1:] {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if strings.ContainsAny(a, "s") && strings.ContainsAny(a, "+=") || a == "777" || a == "666" || a == "a+w" || a == "o+w" ||
			len(a) == 4 && isDigits(a) && a[0] != '0' {
			return true
		}
	}
	return false
}

func destructiveSQL(argv []string) bool {
	j := strings.ToUpper(strings.Join(argv, " "))
	for _, k := range []string{"DROP ", "TRUNCATE ", "DELETE FROM", "ALTER ", "GRANT ", "REVOKE ", "FLUSHALL", "FLUSHDB", "DROPDATABASE", ".DROP("} {
		if strings.Contains(j, k) {
			return true
		}
	}
	return false
}

func classifyGit(c *CommandClass, argv []string, ctx ShellContext) {
	for _, k := range gitSettings(argv) {
		if gitRunsCommand(k) {
			c.raise(policies.HighRisk, "git -c "+k+" makes git run a program the line chooses")
		}
	}
	sub, rest := subcommand(argv, map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true})
	switch {
	case computed(sub) || strings.ContainsAny(sub, "$`"):
		c.raise(policies.HighRisk, "the git subcommand is computed when the line runs ("+sub+")")
		return
	case sub != "" && !gitBuiltins.has(sub):
		c.raise(policies.HighRisk, "git "+sub+" is no git command: an alias or a git-"+sub+" program, whose effect the line does not say")
		return
	case sub == "config":
		if k := gitConfigWrite(rest); k != "" && gitRunsCommand(k) {
			c.raise(policies.HighRisk, "git config sets "+k+", a program git runs later")
		}
	}
	switch sub {
	case "push", "send-pack": // send-pack is push's plumbing
		c.raise(policies.ExternalSideEffect, "git push publishes commits")
		force := hasFlag(rest, "-f", "--force", "--mirror", "-d", "--delete", "--prune")
		var refs []string
		for _, a := range rest[1:] {
			if !strings.HasPrefix(a, "-") {
				refs = append(refs, a)
			}
		}
		if force {
			c.raise(policies.HighRisk, "git push rewrites or deletes remote refs")
		}
		toMain := false
		for i, r := range refs {
			if i == 0 && len(refs) > 1 {
				continue // the remote
			}
			if strings.HasPrefix(r, "+") {
				c.raise(policies.HighRisk, "git push with a forced refspec")
			}
			if strings.HasPrefix(r, ":") {
				c.raise(policies.HighRisk, "git push deletes a remote ref ("+r+")")
			}
			dst := r
			if j := strings.LastIndexByte(r, ':'); j >= 0 {
				dst = r[j+1:]
			}
			if isMainBranch(strings.TrimPrefix(dst, "+")) || dst == "HEAD" && isMainBranch(ctx.Branch) {
				toMain = true
			}
		}
		if len(refs) <= 1 && isMainBranch(ctx.Branch) {
			toMain = true
		}
		if hasFlag(rest, "--all", "--tags") {
			toMain = toMain || len(refs) <= 1
		}
		if toMain {
			c.raise(policies.HighRisk, "git push to a protected branch")
		}
	case "merge":
		if isMainBranch(ctx.Branch) {
			c.raise(policies.HighRisk, "git merge into "+ctx.Branch)
		} else {
			c.raise(policies.ReversibleWrite, "")
		}
	case "reset":
		if hasFlag(rest, "--hard", "--merge", "--keep") {
			c.raise(policies.HighRisk, "git reset discards work")
		} else {
			c.raise(policies.ReversibleWrite, "")
		}
	case "clean":
		if hasFlag(rest, "-f", "--force") {
			c.raise(policies.HighRisk, "git clean deletes untracked files")
		}
	case "checkout", "restore":
		if slicesContains(rest, "--") || slicesContains(rest, ".") || hasFlag(rest, "-f", "--force") {
			c.raise(policies.HighRisk, "git "+sub+" discards changes")
		} else {
			c.raise(policies.ReversibleWrite, "")
		}
	case "filter-branch", "filter-repo", "replace", "update-ref", "gc", "prune", "reflog":
		if sub == "reflog" && (len(rest) < 2 || rest[1] == "show") {
			return
		}
		c.raise(policies.HighRisk, "git "+sub+" rewrites history")
	case "status", "log", "diff", "show", "blame", "rev-parse", "ls-files", "ls-tree", "ls-remote", "describe", "shortlog",
		"grep", "cat-file", "rev-list", "name-rev", "whatchanged", "version", "help", "check-ignore", "merge-base", "for-each-ref", "show-ref", "":
	case "remote", "config", "branch", "tag", "stash", "worktree", "submodule":
		if len(rest) > 1 && !strings.HasPrefix(rest[1], "-v") && rest[1] != "--list" && rest[1] != "-l" && rest[1] != "list" && rest[1] != "--get" && rest[1] != "show" && rest[1] != "--show-current" && rest[1] != "-a" {
			c.raise(policies.ReversibleWrite, "")
		}
	default:
		c.raise(policies.ReversibleWrite, "")
	}
}

func slicesContains(s []string, w string) bool {
	for _, x := range s {
		if x == w {
			return true
		}
	}
	return false
}

func classifyGH(c *CommandClass, argv []string) {
	sub, rest := subcommand(argv, map[string]bool{"-R": true, "--repo": true})
	verb, _ := ghVerb(rest)
	ghActions(c, sub, rest)
	switch {
	case sub == "pr" && verb == "merge":
		c.raise(policies.HighRisk, "gh pr merge merges to a shared branch")
	case sub == "repo" && (verb == "delete" || verb == "archive" || verb == "rename" || verb == "edit"):
		c.raise(policies.HighRisk, "gh repo "+verb)
	case sub == "release" && (verb == "create" || verb == "delete" || verb == "upload"):
		c.raise(policies.HighRisk, "gh release "+verb+" publishes")
	case sub == "secret" || sub == "variable" || sub == "ssh-key" || sub == "gpg-key" || sub == "auth":
		if verb != "list" && verb != "status" {
			c.raise(policies.HighRisk, "gh "+sub+" "+verb+" changes credentials")
		}
	case sub == "api":
		m := flagValue(rest, "-X", "--method")
		if m != "" && !strings.EqualFold(m, "GET") || hasFlag(rest, "-f", "-F", "--field", "--raw-field", "--input") {
			c.raise(policies.ExternalSideEffect, "gh api writes")
			if strings.EqualFold(m, "DELETE") {
				c.raise(policies.HighRisk, "gh api DELETE")
			}
		}
	case verb == "view" || verb == "list" || verb == "status" || verb == "diff" || verb == "checks" || sub == "search" || sub == "browse" || verb == "":
	case sub == "pr" && verb == "checkout":
		c.raise(policies.ReversibleWrite, "")
	case sub == "workflow" && verb == "run" || sub == "run" && (verb == "rerun" || verb == "cancel"):
		c.raise(policies.ExternalSideEffect, "gh triggers a workflow")
	default:
		c.raise(policies.ExternalSideEffect, "gh "+sub+" "+verb+" changes GitHub")
	}
}

func classifyCloud(c *CommandClass, argv []string) {
	var words []string
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	readVerbs := []string{"describe", "list", "get", "show", "ls", "status", "whoami", "info", "logs", "version", "help", "config"}
	destructive := []string{"delete", "remove", "rm", "terminate", "destroy", "purge", "drop", "deploy", "apply", "update", "put", "set-iam", "add-iam", "scale"}
	for _, w := range words {
		lw := strings.ToLower(w)
		for _, d := range destructive {
			if lw == d || strings.HasPrefix(lw, d+"-") || strings.HasSuffix(lw, "-"+d) {
				c.raise(policies.HighRisk, argv[0]+" "+w+" changes cloud resources")
				return
			}
		}
	}
	for _, w := range words {
		lw := strings.ToLower(w)
		for _, r := range readVerbs {
			if lw == r || strings.HasPrefix(lw, r+"-") {
				return
			}
		}
	}
	c.raise(policies.ExternalSideEffect, argv[0]+" calls a cloud API")
}

// dropHeredocBodies removes the bodies of here-documents (<<EOF … EOF),
// which are data, not commands, keeping their delimiters.
func dropHeredocBodies(line string) string {
	return scanHeredocs(line, func(delim string, _ heredoc) string { return delim })
}

// inlineHeredocs replaces each here-document's delimiter and body with
// one word that carries the body (heredocWord), so that strip gives the
// command it feeds its text (Segment.Stdin).
func inlineHeredocs(line string) string {
	return scanHeredocs(line, func(_ string, h heredoc) string { return heredocWord(h) })
}

// heredoc is a here-document's body and whether the shell expands it
// ($(…), `…` and variables in an unquoted delimiter's body).
type heredoc struct {
	body    string
	expands bool
}

// heredocMark starts the word inlineHeredocs puts in a here-document's
// place: a NUL (no shell word has one), x or q (expanded or quoted), then
// the body in hex, which the lexer keeps as one word.
const heredocMark = "\x00"

func heredocWord(h heredoc) string {
	kind := "q"
	if h.expands {
		kind = "x"
	}
	return heredocMark + kind + hex.EncodeToString([]byte(h.body))
}

// parseHeredocWord is heredocWord's inverse.
func parseHeredocWord(w string) (heredoc, bool) {
	rest, ok := strings.CutPrefix(w, heredocMark)
	if !ok || rest == "" {
		return heredoc{}, false
	}
	b, err := hex.DecodeString(rest[1:])
	if err != nil {
		return heredoc{}, false
	}
	return heredoc{body: string(b), expands: rest[0] == 'x'}, true
}

// scanHeredocs finds each here-document (<<EOF, <<-'EOF', <<"EOF"): the
// text from its operator's word to the end of that line is kept with
// the delimiter word (its dash and quotes included) replaced by
// word(delimiter, the here-document), and the body, up to the
// delimiter's line, is left out. A here-string (<<<) is kept as it is.
func scanHeredocs(line string, word func(delim string, h heredoc) string) string {
	if !strings.Contains(line, "<<") {
		return line
	}
	var b strings.Builder
	for {
		i := strings.Index(line, "<<")
		if i < 0 || i+2 < len(line) && line[i+2] == '<' {
			if i < 0 {
				b.WriteString(line)
				return b.String()
			}
			b.WriteString(line[:i+3])
			line = line[i+3:]
			continue
		}
		j := i + 2
		dash := j < len(line) && line[j] == '-'
		if dash {
			j++
		}
		for j < len(line) && (line[j] == ' ' || line[j] == '\t') {
			j++
		}
		k := j
		for k < len(line) && (line[k] == '\'' || line[k] == '"' || line[k] == '\\') {
			k++
		}
		e := k
		for e < len(line) && (line[e] == '_' || line[e] >= 'a' && line[e] <= 'z' || line[e] >= 'A' && line[e] <= 'Z' || line[e] >= '0' && line[e] <= '9') {
			e++
		}
		delim := line[k:e]
		nl := strings.IndexByte(line[e:], '\n')
		if delim == "" || nl < 0 {
			b.WriteString(line)
			return b.String()
		}
		q := e // past the closing quotes
		for q < len(line) && (line[q] == '\'' || line[q] == '"') {
			q++
		}
		rest := line[e+nl+1:]
		var body []string
		for {
			end := strings.IndexByte(rest, '\n')
			cur := rest
			if end >= 0 {
				cur = rest[:end]
			}
			if t := strings.TrimSpace(cur); t == delim || strings.HasPrefix(t, delim+")") {
				if t != delim {
					rest = rest[strings.Index(rest, delim)+len(delim):]
				} else if end >= 0 {
					rest = rest[end:]
				} else {
					rest = ""
				}
				break
			}
			if dash {
				cur = strings.TrimLeft(cur, "\t")
			}
			body = append(body, cur)
			if end < 0 {
				rest = ""
				break
			}
			rest = rest[end+1:]
		}
		b.WriteString(line[:i+2])
		b.WriteString(word(line[i+2:q], heredoc{body: strings.Join(body, "\n"), expands: k == j}))
		b.WriteString(line[q : e+nl+1])
		line = rest
	}
}
