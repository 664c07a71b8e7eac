package judge

import (
	"path"
	"strings"

	"github.com/docket/docket/hooks"
)

// ProtectUnseenInput: under Codex or OpenClaw, a shell line that starts
// a program reading commands from its terminal.
const ProtectUnseenInput = "builtin:unseen_input"

// checkUnseenInput blocks, under Codex and OpenClaw, a shell line that
// starts a program which reads commands from its terminal: a shell given
// no command or script, a language's REPL, a database or network client
// given no command, su and sudo -i/-s, ssh with no remote command, a
// terminal multiplexer, an editor.
//
// Codex runs a command it may then type into (exec_command with a tty,
// then write_stdin), and runs no hook for what it types: docket would
// judge the first line and none after it. Its hook payload does not say
// whether the command has a tty, so every such start is refused; the
// agent runs each command as its own call. `docket install --runtime
// codex` also turns Codex's tty sessions off (features.unified_exec_tty),
// which closes the channel itself.
//
// OpenClaw's process tool types into a session (write, paste,
// send-keys) with a hook, and docket judges the typed text as a command
// line (hooks.ShellCommandOf); but a line typed in pieces is judged a
// piece at a time, so the start is refused there too.
func (pr Protector) checkUnseenInput(p *ActionProposal) *Violation {
	why := ""
	switch p.Runtime.Name {
	case string(hooks.Codex):
		why = "Codex types into a running command (write_stdin) without running docket's hooks, so none of them would be judged"
	case "openclaw":
		// OpenClaw runs before_tool_call for its process tool, and docket
		// judges what it types as a command line: but a fragment at a
		// time, never the line the fragments make
		why = "OpenClaw's process tool types into a running command a piece at a time, and docket judges each piece, not the line they make"
	default:
		return nil
	}
	if p.Context.Shell == nil {
		return nil
	}
	cmd, _ := hooks.ShellCommandOf(p.Input)
	what := startsInteractive(cmd, p.Context.Shell.Segments)
	if what == "" {
		return nil
	}
	return &Violation{ProtectUnseenInput, what + " reads commands from its terminal, and " + why + ": run each command as its own call (bash -c '…', python3 script.py, psql -c '…')"}
}

// startsInteractive names the first program of line (its segments) that
// would read commands from the terminal; "" when none does.
func startsInteractive(line string, segs []Segment) string {
	if len(segs) == 0 {
		// sudo with options alone: -i, -s and --login start root's shell
		if w := strings.Fields(line); len(w) > 0 && w[0] == "sudo" {
			for _, a := range w[1:] {
				if a == "-i" || a == "-s" || a == "--login" || a == "--shell" || strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "is") {
					return "sudo " + a
				}
			}
		}
		return ""
	}
	for i, s := range segs {
		if len(s.Inputs) > 0 || s.Here {
			continue // its input is a file or a here-document
		}
		if s.Piped && !(i > 0 && readsTerminal(segs[i-1])) {
			continue // its input is the previous command's output
		}
		if interactive(s) {
			return s.String()
		}
	}
	return ""
}

// readsTerminal reports whether s copies its own input to its output:
// cat, tee or dd given no file to read, so that a pipeline's next
// program reads the terminal through it.
func readsTerminal(s Segment) bool {
	switch s.Name() {
	case "cat", "tee":
		for _, a := range s.Argv[1:] {
			if !strings.HasPrefix(a, "-") || a == "-" {
				return s.Name() == "tee" || a == "-"
			}
		}
		return true
	case "dd":
		for _, a := range s.Argv[1:] {
			if strings.HasPrefix(a, "if=") {
				return false
			}
		}
		return true
	}
	return false
}

// Lists, not map literals, for the reason words gives: a map literal is
// built at start-up in every judge call.
var (
	shells = words{"bash", "sh", "zsh", "dash", "ksh", "mksh", "fish", "tcsh", "csh", "ash", "yash"}
	// wrappers run the rest of their line as a command (the shell
	// classifier strips the bare env, nohup, timeout and xargs; these
	// catch the others and any spelled by path, /usr/bin/env)
	wrappers = words{"setsid", "nice", "ionice", "chrt", "taskset", "env", "nohup", "stdbuf", "unbuffer", "timeout"}
	// programs that are interactive whatever their arguments
	alwaysInteractive = words{"tmux", "screen", "dtach", "abduco", "vi", "vim", "nvim", "emacs", "telnet", "ftp", "login",
		"irb", "pry", "ghci", "iex"}
)

// replFlags are the flags that give a language's REPL its code (or, for
// deno and bun, a subcommand that does): without one and without a
// script it reads the terminal; "-" reads the program from it. ok is
// false for a program that is no such REPL.
func replFlags(name string) (flags []string, ok bool) {
	switch name {
	case "node", "nodejs":
		return []string{"-e", "--eval", "-p", "--print"}, true
	case "ruby", "scala", "racket":
		return []string{"-e"}, true
	case "perl":
		return []string{"-e", "-E"}, true
	case "php":
		return []string{"-r"}, true
	case "lua", "luajit":
		return []string{"-e"}, true
	case "R":
		return []string{"-e", "-f", "--file"}, true
	case "julia":
		return []string{"-e", "--eval"}, true
	case "erl":
		return []string{"-eval", "-s", "-run"}, true
	case "guile", "expect":
		return []string{"-c"}, true
	case "ocaml", "tclsh", "wish":
		return nil, true
	case "deno":
		return []string{"eval", "run", "test", "fmt", "lint", "task", "compile", "install", "check"}, true
	case "bun":
		return []string{"run", "x", "test", "install", "add", "build", "-e", "--eval"}, true
	}
	return nil, false
}

// clientFlags are the flags that give a client whose operands name what
// it connects to a command: without one it is interactive. SQL typed at
// a database client runs, and \! (psql), system (mysql), .shell (sqlite3)
// run shell commands. ok is false for a program that is no such client.
func clientFlags(name string) (flags []string, ok bool) {
	switch name {
	case "psql":
		return []string{"-c", "--command", "-f", "--file", "-l", "--list"}, true
	case "mysql", "mariadb":
		return []string{"-e", "--execute"}, true
	case "mongosh":
		return []string{"--eval", "-f", "--file"}, true
	case "mongo":
		return []string{"--eval"}, true
	case "sftp":
		return []string{"-b"}, true
	case "lftp":
		return []string{"-c", "-f"}, true
	}
	return nil, false
}

// isPython reports whether name is python or pypy with an optional
// version (python3, python3.12, pypy3): `^(?:python|pypy)[0-9.]*$`.
func isPython(name string) bool {
	rest, ok := strings.CutPrefix(name, "python")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "pypy"); !ok {
			return false
		}
	}
	return strings.Trim(rest, "0123456789.") == ""
}

// interactive reports whether the program s starts reads commands from
// its terminal.
func interactive(s Segment) bool {
	argv := s.Argv
	if s.Name() == "busybox" && len(argv) > 1 {
		argv = argv[1:]
	}
	// wrappers that run the rest of their line as a command
	for len(argv) > 1 && wrappers.has(path.Base(argv[0])) {
		argv = argv[1:]
		for len(argv) > 1 && (strings.HasPrefix(argv[0], "-") || strings.Contains(argv[0], "=") || isNumber(argv[0])) {
			argv = argv[1:]
		}
	}
	name, args := path.Base(argv[0]), argv[1:]
	if hasFlag(argv, "--version", "--help") || isPython(name) && hasExact(args, "-h", "-V") || name == "node" && hasExact(args, "-h", "-v") {
		return false // prints and exits
	}
	switch {
	case shells.has(name):
		return shellInteractive(args)
	case isPython(name):
		return pythonInteractive(args)
	case alwaysInteractive.has(name):
		return true
	case name == "script":
		// script -c CMD runs CMD in a terminal of its own
		cmd, ok := optionValue(args, 'c', "--command")
		if !ok {
			return true
		}
		return startsInteractive(cmd, ClassifyCommand(cmd, ShellContext{}).Segments) != ""
	case name == "su":
		return !hasFlag(argv, "-c", "--command")
	case name == "doas":
		return hasFlag(argv, "-s")
	case name == "ssh":
		return sshInteractive(args)
	case name == "nc" || name == "ncat" || name == "netcat" || name == "socat":
		return true // typed text goes to the network
	case name == "chroot" || name == "nsenter" || name == "machinectl":
		return operands(args) <= 1 // no command: the target's shell
	case name == "sqlite3" || name == "redis-cli":
		return operands(args) <= 1 // a database (a host's options) and no statement
	}
	if flags, ok := clientFlags(name); ok {
		return !hasFlag(argv, flags...)
	}
	if flags, ok := replFlags(name); ok {
		if hasFlag(argv, flags...) {
			return false
		}
		return operands(args) == 0 || hasExact(args, "-i", "--interactive", "repl")
	}
	return false
}

// shellInteractive: a shell reads commands from its input unless it is
// given a command (-c, in any cluster: -lc) or a script operand; -s and
// -i make it read them even so (-s: from its input, whatever follows).
func shellInteractive(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return i+1 == len(args)
		case a == "--rcfile" || a == "--init-file" || a == "-o" || a == "+o" || a == "-O" || a == "+O":
			i++ // its argument
		case strings.HasPrefix(a, "--"):
			// --login, --norc, --posix, …
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.ContainsRune(a, 'c') {
				return false
			}
			if strings.ContainsRune(a, 's') {
				return true
			}
		default:
			return false // a script
		}
	}
	return true
}

// pythonInteractive: python reads the terminal with no script, module or
// -c, with -i before any of them, or with "-" as its script.
func pythonInteractive(args []string) bool {
	iflag := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-":
			return true
		case a == "-W" || a == "-X":
			i++ // its value
		case strings.HasPrefix(a, "--"):
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				switch c {
				case 'i':
					iflag = true
				case 'c', 'm':
					// code or a module (the cluster's rest, or the next
					// argument); what follows is its own argv
					return iflag
				}
			}
		default:
			return iflag // a script
		}
	}
	return true
}

// sshInteractive: ssh starts a remote shell unless given a command after
// the host (or -N, -W, -O for forwarding and control).
func sshInteractive(args []string) bool {
	if hasExact(args, "-N", "-W", "-O", "-G", "-Q") {
		return false
	}
	withValue := "BbcDEeFIiJLlmOoPpQRSWw"
	n := 0
	for i := 0; i < len(args); i++ {
		a := args[i]
		if strings.HasPrefix(a, "-") && len(a) == 2 && strings.ContainsRune(withValue, rune(a[1])) {
			i++
			continue
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		n++
	}
	return n <= 1 // the host alone
}

// hasExact reports whether args holds one of words as it stands.
func hasExact(args []string, words ...string) bool {
	for _, a := range args {
		for _, w := range words {
			if a == w {
				return true
			}
		}
	}
	return false
}

// operands counts the arguments that are not options.
func operands(args []string) int {
	n := 0
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			n++
		}
	}
	return n
}

// optionValue is the value of a short option (letter, alone or ending a
// cluster such as -qc, with the value next) or of a long one (--long V,
// --long=V) in args. flagValue reads -cVALUE, not such a cluster.
func optionValue(args []string, letter rune, long string) (string, bool) {
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, long+"="):
			return strings.TrimPrefix(a, long+"="), true
		case a == long || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, string(letter)):
			if i+1 < len(args) {
				return args[i+1], true
			}
		}
	}
	return "", false
}
