package judge

import (
	"slices"
	"strings"

	"github.com/docket/docket/policies"
)

// Commands that run other commands from their own text or options: an
// awk program's system() and pipes, sed's e command, the command git
// rebase --exec, git bisect run and git submodule foreach run, and the
// programs an option names (tar --to-command, rsync -e, ssh -o
// ProxyCommand, zip -TT, sort --compress-program). The command each
// runs is classified as a line; an awk or sed program that starts one
// is high_risk, as inline interpreter code that does is.

// classifyEmbedded classifies what s runs through its program text or
// options.
func classifyEmbedded(c *CommandClass, s Segment, ctx ShellContext, depth int) {
	argv := s.Argv
	switch name := s.Name(); name {
	case "awk", "gawk", "mawk", "nawk":
		for _, prog := range programTexts(argv, []string{"-e", "--source"}, []string{"-v", "-F"}) {
			switch {
			case strings.Contains(prog, "system(") || strings.Contains(prog, "system (") || awkPipes(prog):
				c.raise(policies.HighRisk, name+" runs a command from its program (system or a pipe)")
			case awkPrintsToFile(prog):
				c.raise(policies.ReversibleWrite, name+" writes a file from its program (print >)")
			}
		}
	case "sed", "gsed":
		for _, script := range programTexts(argv, []string{"-e", "--expression"}, []string{"-l", "--line-length"}) {
			if runs, writes := sedEffects(script); runs {
				c.raise(policies.HighRisk, name+" runs a command from its script (the e command or flag)")
			} else if writes {
				c.raise(policies.ReversibleWrite, name+" writes a file from its script (w)")
			}
		}
	case "git":
		sub, rest := subcommand(argv, map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true})
		switch sub {
		case "rebase":
			for i := 1; i < len(rest); i++ {
				if v, ok := optionArg(rest, &i, "-x", "--exec"); ok {
					classifyLine(c, v, ctx, depth+1)
				}
			}
		case "bisect":
			if len(rest) > 2 && rest[1] == "run" {
				classifyLine(c, quoteArgv(rest[2:]), ctx, depth+1) // an argv, run as is
			}
		case "submodule":
			if len(rest) > 1 && rest[1] == "foreach" {
				if cmd := skipFlags(rest[2:], nil); len(cmd) > 0 {
					classifyLine(c, strings.Join(cmd, " "), ctx, depth+1)
				}
			}
		}
	default:
		for _, cmd := range optionCommands(name, argv) {
			classifyLine(c, cmd, ctx, depth+1)
		}
	}
}

// quoteArgv writes argv as a shell line that gives the same words.
func quoteArgv(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// optionArg reads the value of the option at args[*i] when it is one of
// names (NAME VALUE, NAME=VALUE, or a short -xVALUE), advancing *i past
// a separate value.
func optionArg(args []string, i *int, names ...string) (string, bool) {
	a := args[*i]
	for _, n := range names {
		switch {
		case a == n && *i+1 < len(args):
			*i++
			return args[*i], true
		case strings.HasPrefix(a, n+"="):
			return a[len(n)+1:], true
		case len(n) == 2 && n[1] != '-' && len(a) > 2 && strings.HasPrefix(a, n):
			return a[2:], true
		}
	}
	return "", false
}

// optionCommands are the command lines the options of argv name for
// the command to run.
func optionCommands(name string, argv []string) []string {
	var long, short []string
	switch name {
	case "tar", "gtar", "bsdtar":
		long, short = []string{"--to-command", "--use-compress-program", "--rsh-command", "--info-script", "--new-volume-script"}, []string{"-I", "-F"}
	case "rsync":
		long, short = []string{"--rsh", "--rsync-path"}, []string{"-e"}
	case "zip":
		long, short = []string{"--unzip-command"}, []string{"-TT"}
	case "sort":
		long = []string{"--compress-program"}
	case "scp", "sftp":
		short = []string{"-S"}
	case "ssh":
	default:
		return nil
	}
	var out []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if v, ok := optionArg(argv, &i, append(long, short...)...); ok {
			out = append(out, v)
			continue
		}
		switch {
		case strings.HasPrefix(a, "--checkpoint-action=exec="):
			out = append(out, strings.TrimPrefix(a, "--checkpoint-action=exec="))
		case (name == "ssh" || name == "scp" || name == "sftp") && (a == "-o" || strings.HasPrefix(a, "-o")):
			opt := strings.TrimPrefix(a, "-o")
			if opt == "" && i+1 < len(argv) {
				i++
				opt = argv[i]
			}
			// Key=Value or "Key Value"
			k, v := opt, ""
			if j := strings.IndexAny(opt, "= "); j >= 0 {
				k, v = opt[:j], strings.TrimLeft(opt[j+1:], "= ")
			}
			if strings.EqualFold(k, "ProxyCommand") || strings.EqualFold(k, "LocalCommand") || strings.EqualFold(k, "KnownHostsCommand") {
				out = append(out, v)
			}
		}
	}
	return out
}

// programTexts are the program texts of an awk or sed command line:
// the values of its text options (awk -e and --source, sed -e and
// --expression), else its first operand, which is no program with -f
// (a file); valued are its other options that take a value.
func programTexts(argv, text, valued []string) []string {
	var progs []string
	file := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if v, ok := optionArg(argv, &i, text...); ok {
			progs = append(progs, v)
			continue
		}
		switch {
		case a == "-f" || a == "--file" || strings.HasPrefix(a, "--file="):
			file = true
			if a == "-f" || a == "--file" {
				i++
			}
		case slices.Contains(valued, a):
			i++
		case a == "--":
			if !file && len(progs) == 0 && i+1 < len(argv) {
				progs = append(progs, argv[i+1])
			}
			return progs
		case strings.HasPrefix(a, "-"):
		default:
			if !file && len(progs) == 0 {
				progs = append(progs, a)
			}
			return progs
		}
	}
	return progs
}

// awkPipes reports whether an awk program pipes to or from a command
// (print | "cmd", "cmd" | getline, |&).
func awkPipes(prog string) bool {
	return strings.Contains(prog, "|&") || strings.Contains(prog, "| \"") || strings.Contains(prog, "|\"") ||
		strings.Contains(prog, "\" |") || strings.Contains(prog, "\"|") || strings.Contains(prog, "| getline")
}

// awkPrintsToFile reports whether an awk program redirects a print or
// printf into a file (print > "f", print >> f): a > after print in the
// same statement.
func awkPrintsToFile(prog string) bool {
	for rest := prog; ; {
		i := strings.Index(rest, "print")
		if i < 0 {
			return false
		}
		rest = rest[i+len("print"):]
		if j := strings.IndexAny(rest, ";}\n"); j >= 0 {
			if strings.Contains(rest[:j], ">") {
				return true
			}
		} else if strings.Contains(rest, ">") {
			return true
		}
	}
}

// sedEffects reads a sed script's commands: runs, an e command or an s
// command with the e flag (GNU sed runs the pattern space or the
// command as a shell line); writes, a w or W command or the w flag.
// Addresses, blocks and labels are stepped over; a:, i: and c: text and
// y/// are data.
func sedEffects(script string) (runs, writes bool) {
	i, n := 0, len(script)
	skipDelimited := func(d byte) { // past the next unescaped d
		for i < n && script[i] != d {
			if script[i] == '\\' {
				i++
			}
			i++
		}
		i++
	}
	for i < n {
		ch := script[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n' || ch == ';' || ch == '{' || ch == '}' || ch == '!' || ch == ',' || ch == '$' || ch == '~' || ch == '+' || ch >= '0' && ch <= '9':
			i++
		case ch == '/' || ch == '\\': // an address /re/ or \cREc
			if ch == '\\' {
				i++
			}
			if i < n {
				d := script[i]
				i++
				skipDelimited(d)
			}
			for i < n && (script[i] == 'I' || script[i] == 'M') {
				i++
			}
		case ch == 'e':
			return true, writes
		case ch == 'w' || ch == 'W':
			writes = true
			return runs, writes // its file name runs to the line's end
		case ch == 's' || ch == 'y':
			i++
			if i >= n {
				return
			}
			d := script[i]
			i++
			skipDelimited(d)
			skipDelimited(d)
			if ch == 'y' {
				continue
			}
			for i < n && strings.IndexByte("gpiImMe0123456789w", script[i]) >= 0 {
				switch script[i] {
				case 'e':
					runs = true
				case 'w':
					writes = true
					return
				}
				i++
			}
		case ch == 'a' || ch == 'i' || ch == 'c' || ch == 'b' || ch == 't' || ch == 'T' || ch == ':' || ch == 'r' || ch == 'R' || ch == 'q' || ch == 'Q' || ch == 'l' || ch == 'L':
			// text, a label, a file to read or an exit code: to the line's end (or ;)
			for i < n && script[i] != '\n' && (script[i] != ';' || ch == 'a' || ch == 'i' || ch == 'c') {
				i++
			}
		default:
			i++
		}
	}
	return
}
