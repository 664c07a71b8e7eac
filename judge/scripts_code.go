package judge

import (
	"path"
	"strings"
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
