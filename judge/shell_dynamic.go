package judge

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/docket/docket/policies"
)

// What a line runs but does not say: a command whose name, or git
// subcommand, is computed when the line runs; text piped into a shell,
// or decoded and piped into an interpreter; a script made by a process
// substitution; a git alias or a git setting that names a program; code
// handed to an interpreter inline that starts programs. The classifier
// cannot read what runs, so the call is high_risk, whatever it turns out
// to be (`$(echo git) push --force`, `echo Z2l0IHB1c2gK | base64 -d |
// sh`, `git -c alias.p='push --force' p`).

// computed reports whether a word is wholly made when the line runs: a
// command substitution or a variable ($(…), `…`, $X, ${X}), or a brace
// expansion ({git,push} is two words); a word that only starts with a
// variable ($HOME/bin/tool) is a path.
func computed(w string) bool {
	if i := strings.IndexByte(w, '{'); i >= 0 && (i == 0 || w[i-1] != '$') && strings.Contains(w[i:], ",") && strings.Contains(w[i:], "}") {
		return true
	}
	switch {
	case strings.HasPrefix(w, "$(") && strings.HasSuffix(w, ")"), strings.HasPrefix(w, "`") && strings.HasSuffix(w, "`"):
		return true
	case strings.HasPrefix(w, "${") && strings.HasSuffix(w, "}"):
		return !strings.ContainsAny(w[2:len(w)-1], "/")
	case strings.HasPrefix(w, "$") && len(w) > 1:
		return isAssignment(w[1:] + "=")
	}
	return false
}

// classifyComputed raises s when what it runs is not on the line; the
// preceding segments of its pipeline are before (for a pipe into an
// interpreter).
func classifyComputed(c *CommandClass, s Segment, before []Segment) {
	switch name := s.Name(); {
	case computed(s.Argv[0]):
		c.raise(policies.HighRisk, "runs a command computed when the line runs ("+s.Argv[0]+")")
	case s.Piped && isInterpreter(s) && isShellName(name):
		c.raise(policies.HighRisk, "pipes text into a shell: what it runs is not on the line")
	case s.Piped && isInterpreter(s) && decodes(before):
		c.raise(policies.HighRisk, "pipes decoded text into an interpreter")
	case (isShellName(name) || name == "source" || name == ".") && len(s.Argv) > 1 && strings.HasPrefix(firstOperand(s.Argv), "<("):
		c.raise(policies.HighRisk, "runs a script a process substitution makes")
	case inlineSpawns(s.Argv):
		c.raise(policies.HighRisk, name+" runs inline code that starts programs")
	case s.XArgs && argsDecide.has(name):
		c.raise(policies.HighRisk, "xargs gives "+name+" arguments the line does not show")
	}
}

// argsDecide are the commands whose arguments decide how much they do,
// so that arguments xargs supplies make them high_risk (`echo push -f |
// xargs git`, `echo -rf / | xargs rm`); a command that only reads is
// not one.
var argsDecide = words{"git", "gh", "rm", "rmdir", "shred", "mv", "cp", "chmod", "chown", "dd", "truncate", "kubectl", "docker", "podman", "npm", "curl", "wget", "ssh", "scp", "rsync", "sh", "bash", "docket"}

// ansiC decodes the text of an ANSI-C quoted word, $'…', from line[i]
// (just past the opening quote) and returns it with the index of the
// closing quote; ok is false when it is not closed.
func ansiC(line string, i int) (text string, end int, ok bool) {
	var b strings.Builder
	for ; i < len(line); i++ {
		ch := line[i]
		if ch == '\'' {
			return b.String(), i, true
		}
		if ch != '\\' || i+1 >= len(line) {
			b.WriteByte(ch)
			continue
		}
		i++
		switch e := line[i]; e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			width := 2
			if e == 'u' {
				width = 4
			} else if e == 'U' {
				width = 8
			}
			j := i + 1
			for j < len(line) && j-i-1 < width && isHex(line[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			v, _ := strconv.ParseUint(line[i+1:j], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(rune(v))
			}
			i = j - 1
		case 'c':
			if i+1 < len(line) {
				i++
				b.WriteByte(line[i] & 0x1f)
			}
		default:
			if e >= '0' && e <= '7' {
				j := i
				for j < len(line) && j-i < 3 && line[j] >= '0' && line[j] <= '7' {
					j++
				}
				v, _ := strconv.ParseUint(line[i:j], 8, 16)
				b.WriteByte(byte(v))
				i = j - 1
				continue
			}
			b.WriteByte(e) // \\, \', \", \? and any other
		}
	}
	return "", 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isShellName(name string) bool {
	switch name {
	case "sh", "bash", "zsh", "dash", "ksh", "fish":
		return true
	}
	return false
}

// shellInvocation reads a shell's argv: with -c (alone or in a cluster,
// -lc, -ec) its first operand is the command string it runs; without,
// that operand is the script file it runs ("" for none: it reads its
// input). The values of -o, -O, --rcfile and --init-file are skipped.
func shellInvocation(argv []string) (command, script string) {
	withC := false
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "--":
			if i+1 < len(argv) {
				a = argv[i+1]
			} else {
				a = ""
			}
		case a == "-o" || a == "+o" || a == "-O" || a == "+O" || a == "--rcfile" || a == "--init-file":
			i++
			continue
		case strings.HasPrefix(a, "--"):
			continue
		case len(a) > 1 && (a[0] == '-' || a[0] == '+'):
			withC = withC || a[0] == '-' && strings.Contains(a[1:], "c")
			continue
		}
		if withC {
			return a, ""
		}
		return "", a
	}
	return "", ""
}

// firstOperand is argv's first word after its command that is no flag.
func firstOperand(argv []string) string {
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// decoders turn text into other text a reader of the line cannot see.
var decoders = words{"base64", "base32", "xxd", "openssl", "gunzip", "zcat", "gzip", "bzip2", "bunzip2", "xz", "unxz", "rev", "tr", "uudecode", "basenc"}

func decodes(segs []Segment) bool {
	for _, s := range segs {
		if decoders.has(s.Name()) {
			return true
		}
	}
	return false
}

// inlineSpawns reports whether argv hands an interpreter code inline
// (python -c, perl -e, ruby -e, node -e, php -r) that starts programs.
func inlineSpawns(argv []string) bool {
	flag, _ := interpreterCode(argv[0])
	if flag == "" {
		return false
	}
	for i := 1; i+1 < len(argv); i++ {
		a := argv[i]
		// the flag alone, last in a cluster (perl -ne, python3 -Bc), or
		// deno's eval subcommand
		code := a == flag || flag == "-e" && (a == "-E" || a == "--eval") ||
			len(a) > 2 && a[0] == '-' && a[1] != '-' && a[len(a)-1] == flag[1] ||
			a == "eval" && i == 1 && path.Base(argv[0]) == "deno"
		if code && codeSpawns(argv[0], argv[i+1]) {
			return true
		}
	}
	return false
}

// interpreterCode gives an interpreter's flag for inline code and what
// its code says when it starts a program; "" for another command.
func interpreterCode(cmd string) (flag string, marks []string) {
	switch strings.TrimRight(path.Base(cmd), "0123456789.") {
	case "python", "pypy":
		return "-c", spawnMarks
	case "perl", "ruby":
		return "-e", append(spawnMarks[:len(spawnMarks):len(spawnMarks)], "`", "qx")
	case "node", "nodejs", "deno", "bun":
		return "-e", append(spawnMarks[:len(spawnMarks):len(spawnMarks)], "Deno.run", "Deno.Command")
	case "lua", "luajit":
		return "-e", append(spawnMarks[:len(spawnMarks):len(spawnMarks)], "os.execute", "io.popen")
	case "php":
		return "-r", spawnMarks
	}
	return "", nil
}

// codeSpawns reports whether code for the interpreter cmd starts a
// program.
func codeSpawns(cmd, code string) bool {
	_, marks := interpreterCode(cmd)
	for _, m := range marks {
		if strings.Contains(code, m) {
			return true
		}
	}
	return false
}

// classifyStdin judges the text a here-document or here-string gives a
// command that runs its input: a shell's is classified as the line it
// is (`bash <<EOF` … `git push --force` …), an interpreter's is code
// that may start programs.
func classifyStdin(c *CommandClass, s Segment, ctx ShellContext, depth int) {
	if s.Stdin == "" || !runsStdin(s) {
		return
	}
	if name := s.Name(); isShellName(name) || name == "source" || name == "." {
		in := ctx
		in.Cwd = s.Cwd
		classifyLine(c, s.Stdin, in, depth+1)
	} else if codeSpawns(name, s.Stdin) {
		c.raise(policies.HighRisk, name+" runs code from its input that starts programs")
	}
}

// runsStdin reports whether s runs what it reads on its input: a shell
// or an interpreter without a script (or with - or /dev/stdin for one),
// source /dev/stdin.
func runsStdin(s Segment) bool {
	name := s.Name()
	if name == "source" || name == "." {
		return len(s.Argv) > 1 && s.Argv[1] == "/dev/stdin"
	}
	if !isShellName(name) {
		if flag, _ := interpreterCode(name); flag == "" {
			return false
		}
	}
	if isShellName(name) {
		if slices.Contains(s.Argv[1:], "-s") {
			return true // bash -s ARGS: the script is the input
		}
		command, script := shellInvocation(s.Argv)
		return command == "" && (script == "" || script == "/dev/stdin")
	}
	switch firstOperand(s.Argv) {
	case "", "/dev/stdin":
		return true
	}
	return false
}

// classifyExpansions classifies the command substitutions of an
// unquoted here-document's body: the shell runs them as it reads the
// body, whatever command the body then feeds.
func classifyExpansions(c *CommandClass, body string, ctx ShellContext, depth int) {
	if !strings.ContainsAny(body, "$`") {
		return
	}
	quoted := `"` + strings.ReplaceAll(body, `"`, `\"`) + `"`
	_, nested, ok := lexShell(quoted)
	if !ok {
		c.raise(policies.HighRisk, "unbalanced quoting in a here-document: cannot parse the command")
		return
	}
	for _, n := range nested {
		classifyLine(c, n, ctx, depth+1)
	}
}

// spawnMarks are what inline code says when it starts a program (perl
// and ruby also by backticks and qx).
var spawnMarks = []string{"system(", "system (", "popen", "subprocess", "spawn", "exec(", "execSync", "execFile", "os.exec", "Popen", "pty.", "Command::", "proc_open", "shell_exec", "passthru"}

// gitRunsCommand reports whether a git setting names a program (or
// turns one on) that git runs on its own: an alias (a "!" alias is a
// shell command, any other a git command line), the fsmonitor, pager,
// editor, ssh and credential programs, hooks, diff and merge drivers,
// filters, remote helpers' protocol switches.
func gitRunsCommand(key string) bool {
	key = strings.ToLower(key)
	switch key {
	case "core.fsmonitor", "core.sshcommand", "core.pager", "core.editor", "core.hookspath", "core.gitproxy", "core.askpass",
		"sequence.editor", "diff.external", "credential.helper", "gpg.program", "uploadpack.packobjectshook":
		return true
	}
	if strings.HasPrefix(key, "alias.") || strings.HasPrefix(key, "pager.") || strings.HasPrefix(key, "protocol.") ||
		key == "include.path" || strings.HasPrefix(key, "includeif.") { // a file that can set any of these
		return true
	}
	for _, s := range []string{".textconv", ".command", ".driver", ".clean", ".smudge", ".process", ".program", ".helper", ".uploadpack", ".receivepack", ".cmd", ".tool"} {
		if strings.HasSuffix(key, s) {
			return true
		}
	}
	return false
}

// gitSettings are the keys argv sets for itself (git -c KEY=VALUE,
// --config-env=KEY=ENV), up to its subcommand.
func gitSettings(argv []string) []string {
	var keys []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-c" && i+1 < len(argv):
			i++
			k, _, _ := strings.Cut(argv[i], "=")
			keys = append(keys, k)
		case strings.HasPrefix(a, "--config-env="):
			k, _, _ := strings.Cut(strings.TrimPrefix(a, "--config-env="), "=")
			keys = append(keys, k)
		case a == "-C" || a == "--git-dir" || a == "--work-tree" || a == "--namespace":
			i++
		case !strings.HasPrefix(a, "-"):
			return keys
		}
	}
	return keys
}

// gitConfigWrite returns the key `git config …` (rest, from "config")
// sets, or "" when it only reads.
func gitConfigWrite(rest []string) string {
	var operands []string
	write := false
	for i := 1; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-f" || a == "--file" || a == "--blob" || a == "--type" || a == "--default" || a == "--comment":
			i++
		case a == "--add" || a == "--replace-all" || a == "--unset" || a == "--unset-all" || a == "--rename-section" || a == "--remove-section":
			write = true
		case strings.HasPrefix(a, "-"):
			if a == "--get" || a == "--get-all" || a == "--get-regexp" || a == "--list" || a == "-l" || a == "--get-urlmatch" {
				return ""
			}
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) > 0 && (operands[0] == "set" || operands[0] == "unset") {
		if len(operands) > 1 {
			return operands[1]
		}
		return ""
	}
	if len(operands) > 1 || write && len(operands) > 0 {
		return operands[0]
	}
	return ""
}

// gitBuiltins are git's own commands (git help -a, 2.39): any other
// subcommand is an alias or a git-NAME program, whose effect the line
// does not say.
var gitBuiltins = words{
	"add", "am", "annotate", "apply", "archimport", "archive", "bisect", "blame", "branch", "bugreport", "bundle",
	"cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout", "checkout-index", "cherry",
	"cherry-pick", "citool", "clean", "clone", "column", "commit", "commit-graph", "commit-tree", "config", "count-objects",
	"credential", "credential-cache", "credential-store", "cvsexportcommit", "cvsimport", "cvsserver", "daemon", "describe",
	"diagnose", "diff", "diff-files", "diff-index", "diff-tree", "difftool", "fast-export", "fast-import", "fetch", "fetch-pack",
	"filter-branch", "fmt-merge-msg", "for-each-ref", "for-each-repo", "format-patch", "fsck", "gc", "get-tar-commit-id", "gitk",
	"grep", "gui", "hash-object", "help", "hook", "http-backend", "imap-send", "index-pack", "init", "instaweb",
	"interpret-trailers", "log", "ls-files", "ls-remote", "ls-tree", "mailinfo", "mailsplit", "maintenance", "merge", "merge-base",
	"merge-file", "merge-index", "merge-one-file", "merge-tree", "mergetool", "mktag", "mktree", "multi-pack-index", "mv",
	"name-rev", "notes", "p4", "pack-objects", "pack-redundant", "pack-refs", "patch-id", "prune", "prune-packed", "pull", "push",
	"quiltimport", "range-diff", "read-tree", "rebase", "reflog", "remote", "repack", "replace", "request-pull", "rerere", "reset",
	"restore", "rev-list", "rev-parse", "revert", "rm", "scalar", "send-email", "send-pack", "shortlog", "show", "show-branch",
	"show-index", "show-ref", "sparse-checkout", "stash", "status", "stripspace", "submodule", "svn", "switch", "symbolic-ref",
	"tag", "unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info", "var", "verify-commit",
	"verify-pack", "verify-tag", "version", "whatchanged", "worktree", "write-tree", "filter-repo", "lfs",
}
