package judge

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docket/docket/internal/regular"
)

// interpreterScript returns the script file an interpreter's argv runs
// (python3 deploy.py, node x.js, deno run x.ts, perl -w x.pl), "" when
// it runs code given inline (flag, a cluster ending in its letter), a
// module (python -m), or its input.
func interpreterScript(argv []string, flag string) string {
	name := path.Base(argv[0])
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == flag || a == "--eval" || len(a) > 2 && a[0] == '-' && a[1] != '-' && a[len(a)-1] == flag[1]:
			return "" // inline code: inlineSpawns
		case a == "-m" && strings.HasPrefix(name, "python"):
			return ""
		case a == "-W" || a == "-X" || a == "-r" || a == "--require" || a == "-I" || a == "--import":
			i++ // an option's value
		case a == "--":
			if i+1 < len(argv) {
				return argv[i+1]
			}
			return ""
		case strings.HasPrefix(a, "-"):
		case a == "run" && i == 1 && (name == "deno" || name == "bun"):
		default:
			return a
		}
	}
	return ""
}

// codeCommands are the command lines a program's code (in the language
// of the interpreter cmd) starts with literal arguments: the string
// literals of each call that starts a program (os.system("…"),
// subprocess.run(["git", "push"]), execSync('…')) and of perl's and
// ruby's backticks. A list of literals is one argv; other literals are
// joined ("git push " + branch gives "git push "). A command the code
// computes has no literal and adds nothing: like a shell script's
// computed commands, it is the author's idiom.
func codeCommands(cmd, code string) []string {
	if cmd == "go" {
		return goCommands(code)
	}
	_, marks := interpreterCode(cmd)
	seen := map[string]bool{}
	var out []string
	add := func(line string) {
		if line = strings.TrimSpace(line); line != "" && !seen[line] && len(out) < maxCodeCommands {
			seen[line] = true
			out = append(out, line)
		}
	}
	for _, m := range marks {
		for rest := code; ; {
			i := strings.Index(rest, m)
			if i < 0 {
				break
			}
			rest = rest[i+len(m):]
			if m == "`" { // `cmd` in perl or ruby
				j := strings.IndexByte(rest, '`')
				if j < 0 {
					break
				}
				add(rest[:j])
				rest = rest[j+1:]
				continue
			}
			args, ok := callArgs(rest, strings.HasSuffix(m, "("))
			if !ok {
				continue
			}
			// the command is the first argument; with a list after it
			// (spawn('git', ['push'])), an argv with the list
			as := topLevel(args)
			if len(as) == 0 {
				continue
			}
			first := strings.TrimSpace(as[0])
			switch {
			case strings.HasPrefix(first, "["):
				add(quoteArgv(stringLiterals(first)))
			case len(as) > 1 && strings.HasPrefix(strings.TrimSpace(as[1]), "["):
				add(quoteArgv(append(stringLiterals(first), stringLiterals(as[1])...)))
			default:
				add(strings.Join(stringLiterals(first), ""))
			}
		}
	}
	return out
}

// maxCodeCommands bounds the command lines read from one program.
const maxCodeCommands = 256

// callArgs returns the arguments of the call whose text follows: up to
// the matching ")" (quotes respected), from rest's start when opened
// (the mark ended with "("), else from the next "(" on the same line
// within a few characters (subprocess.run(…) after "subprocess").
func callArgs(rest string, opened bool) (string, bool) {
	if !opened {
		i := strings.IndexByte(rest, '(')
		if i < 0 || i > 40 || strings.ContainsAny(rest[:i], "\n;=") {
			return "", false
		}
		rest = rest[i+1:]
	}
	end := -1
	scanCode(rest, func(i int, c byte, depth int) bool {
		if depth < 0 { // the call's own ")"
			end = i
		}
		return end >= 0
	})
	if end < 0 {
		return "", false
	}
	return rest[:end], true
}

// topLevel splits a call's arguments at its top-level commas (quotes,
// brackets and parentheses respected).
func topLevel(args string) []string {
	var out []string
	start := 0
	scanCode(args, func(i int, c byte, depth int) bool {
		if c == ',' && depth == 0 {
			out = append(out, args[start:i])
			start = i + 1
		}
		return false
	})
	return append(out, args[start:])
}

// scanCode walks code outside its string literals ('…', "…", `…`,
// backslash escapes respected), calling at with each byte and the
// bracket depth after it (an opening bracket counts itself, a closing
// one is below its pair) until at returns true.
func scanCode(code string, at func(i int, c byte, depth int) bool) {
	depth := 0
	var quote byte
	for i := 0; i < len(code); i++ {
		c := code[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '\'' || c == '"' || c == '`':
			quote = c
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		}
		if at(i, c, depth) {
			return
		}
	}
}

// stringLiterals are the contents of the quoted strings in s ('…',
// "…", `…`), backslash escapes read as the character they escape.
func stringLiterals(s string) []string {
	var out []string
	for i := 0; i < len(s); i++ {
		q := s[i]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		var b strings.Builder
		for i++; i < len(s) && s[i] != q; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
			b.WriteByte(s[i])
		}
		out = append(out, b.String())
	}
	return out
}

// goCommands are the commands Go code starts with literal arguments:
// exec.Command("git", "push", …) and exec.CommandContext's, each
// argument a string literal up to the first that is not, and the argv
// list of syscall.Exec and os.StartProcess.
func goCommands(code string) []string {
	var out []string
	for _, m := range []string{"exec.Command(", "exec.CommandContext(", "syscall.Exec(", "os.StartProcess("} {
		for rest := code; len(out) < maxCodeCommands; {
			i := strings.Index(rest, m)
			if i < 0 {
				break
			}
			rest = rest[i+len(m):]
			args, ok := callArgs(rest, true)
			if !ok {
				continue
			}
			as := topLevel(args)
			var argv []string
			switch m {
			case "exec.CommandContext(":
				as = as[1:]
			case "syscall.Exec(", "os.StartProcess(":
				if len(as) > 1 {
					argv = stringLiterals(as[1])
				}
				as = nil
			}
			for _, a := range as {
				a = strings.TrimSpace(a)
				lit := stringLiterals(a)
				if len(lit) != 1 || len(a) != len(lit[0])+2 {
					break // not a plain literal: the rest is computed
				}
				argv = append(argv, lit[0])
			}
			if len(argv) > 0 {
				out = append(out, quoteArgv(argv))
			}
		}
	}
	return out
}

// goRunSource returns the source go run builds for s (go run x.go,
// go run ./cmd/tool, go run .), its .go files (no tests, absolute) and
// their text joined, and a name for the reasons; "" for another
// command, or a package from elsewhere (go run example.com/tool@latest).
func goRunSource(s Segment, dir string, open func(string) (*os.File, error)) (name string, files []string, code string) {
	if s.Name() != "go" {
		return "", nil, ""
	}
	sub, rest := subcommand(s.Argv, nil)
	if sub != "run" {
		return "", nil, ""
	}
	var named []string
	for i := 1; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "-C":
			if i+1 < len(rest) {
				dir = under(dir, rest[i+1])
				i++
			}
		case a == "-tags" || a == "-ldflags" || a == "-gcflags" || a == "-mod" || a == "-exec" || a == "-o" || a == "-p" || a == "-pgo" || a == "-overlay" || a == "-modfile":
			i++
		case strings.HasPrefix(a, "-"):
		case strings.HasSuffix(a, ".go"):
			named = append(named, a)
			name = a
		default:
			if len(named) > 0 || !(a == "." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../")) {
				i = len(rest) // the program's own arguments, or a package from elsewhere
				continue
			}
			pkg := under(dir, a)
			names, err := regular.DirNames(pkg)
			if err != nil {
				return "", nil, ""
			}
			sort.Strings(names)
			for _, n := range names {
				if strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
					named = append(named, filepath.Join(pkg, n))
				}
			}
			name = a
			i = len(rest)
		}
	}
	if dir == "" || len(named) == 0 {
		return "", nil, ""
	}
	var b strings.Builder
	for _, f := range named {
		f = under(dir, f)
		files = append(files, f)
		if t, err := regular.ReadFile(open, f, maxScript); err == nil && b.Len()+len(t) <= maxScript {
			b.Write(t)
			b.WriteByte('\n')
		}
	}
	return path.Base(name), files, b.String()
}
