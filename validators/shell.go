package validators

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// This file decides whether a command can prove anything: a command whose
// exit status is 0 whatever the state of the work (true, echo …, a
// pipeline ending in tee, `… || :`) is refused. It understands the subset
// of POSIX sh that agents write on one line — simple commands, pipelines,
// `!`, &&, ||, ;, &, newlines, redirections, assignments, quoting, `sh -c`
// and common wrappers (env, timeout, nice, …). Anything richer (if, for,
// subshells, functions, here-documents, computed command names) is refused
// as "cannot tell what runs": pass an argv list or a plain command instead.

// status is the abstract exit status of a piece of shell.
type status int

const (
	stReal status = iota // depends on the work: the evidence we want
	stOK                 // 0 whatever happens
	stFail               // non-zero whatever happens
	stPass               // bare `exit`: passes the previous status through
)

// verdict is the analysis of a command: its status, the command that
// decided it when trivial, and the words of the commands whose status
// matters (for objective keyword checks).
type verdict struct {
	st    status
	why   string   // for stOK: which command makes it trivially succeed
	words []string // words of real (non-trivial) simple commands
	// runner names a test runner the command invokes directly (go test,
	// pytest), which has a dedicated, stricter validator.
	runner string
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errShell is wrapped by analysis errors: shell the analysis cannot follow.
var errShell = errors.New("cannot tell what runs")

const maxShellDepth = 8

// analyzeArgv analyzes a command given as an argv list.
func analyzeArgv(argv []string) (verdict, error) {
	return analyzeSimple(argv, 0)
}

// analyzeScript analyzes a command string run with `sh -c`.
func analyzeScript(script string) (verdict, error) {
	return analyzeScriptDepth(script, 0)
}

func analyzeScriptDepth(script string, depth int) (verdict, error) {
	if depth > maxShellDepth {
		return verdict{}, fmt.Errorf("%w: shell nested more than %d deep", errShell, maxShellDepth)
	}
	toks, err := lexShell(script)
	if err != nil {
		return verdict{}, err
	}
	p := &shParser{toks: toks, depth: depth}
	v, err := p.list()
	if err != nil {
		return verdict{}, err
	}
	if p.pos < len(p.toks) {
		return verdict{}, fmt.Errorf("%w: unexpected %q", errShell, p.toks[p.pos].text)
	}
	if v.st == stPass {
		v.st, v.why = stOK, "exit"
	}
	return v, nil
}

// token kinds.
const (
	tWord = iota
	tOp
)

type token struct {
	kind    int
	text    string // operator text, or the word with quotes removed
	dynamic bool   // word contains an unquoted or double-quoted expansion
}

var redirOps = map[string]bool{">": true, ">>": true, "<": true, ">&": true, "<&": true, "&>": true, "&>>": true, "<>": true, ">|": true, "<<<": true}

// lexShell splits script into words and operators.
func lexShell(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2
		case c == '\n':
			toks = append(toks, token{kind: tOp, text: ";"})
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '(' || c == ')' || c == '{' && wordEnd(s, i+1) || c == '}' && wordEnd(s, i+1):
			return nil, fmt.Errorf("%w: subshells and groups (%q) are not supported; pass a plain command or an argv list", errShell, string(c))
		case c == ';' || c == '&' || c == '|' || c == '<' || c == '>':
			op := lexOp(s[i:])
			if op == "<<" || op == "<<-" {
				return nil, fmt.Errorf("%w: here-documents are not supported", errShell)
			}
			if op == ";;" || op == ";&" {
				return nil, fmt.Errorf("%w: case statements are not supported", errShell)
			}
			toks = append(toks, token{kind: tOp, text: op})
			i += len(op)
		default:
			// An fd number directly before a redirection: 2>&1, 2>file.
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j > i && j < len(s) && (s[j] == '<' || s[j] == '>') {
				op := lexOp(s[j:])
				toks = append(toks, token{kind: tOp, text: op})
				i = j + len(op)
				continue
			}
			w, n, err := lexWord(s[i:])
			if err != nil {
				return nil, err
			}
			toks = append(toks, w)
			i += n
		}
	}
	return toks, nil
}

func wordEnd(s string, i int) bool {
	return i >= len(s) || strings.ContainsRune(" \t\n;&|", rune(s[i]))
}

func lexOp(s string) string {
	for _, op := range []string{"&>>", "<<<", "<<-", "&&", "||", "|&", ";;", ";&", ">>", ">&", "<&", "&>", "<>", ">|", "<<"} {
		if strings.HasPrefix(s, op) {
			return op
		}
	}
	return s[:1]
}

// lexWord reads one word, removing quotes and noting expansions.
func lexWord(s string) (token, int, error) {
	var b strings.Builder
	t := token{kind: tWord}
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case strings.IndexByte(" \t\r\n;&|<>()", c) >= 0:
			t.text = b.String()
			return t, i, nil
		case c == '\\':
			if i+1 < len(s) {
				b.WriteByte(s[i+1])
				i += 2
			} else {
				i++
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return t, 0, fmt.Errorf("%w: unterminated single quote", errShell)
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 2
		case c == '"':
			i++
			for {
				if i >= len(s) {
					return t, 0, fmt.Errorf("%w: unterminated double quote", errShell)
				}
				if s[i] == '"' {
					i++
					break
				}
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '$' || s[i] == '`' {
					t.dynamic = true
					n, err := skipExpansion(s[i:])
					if err != nil {
						return t, 0, err
					}
					b.WriteString(s[i : i+n])
					i += n
					continue
				}
				b.WriteByte(s[i])
				i++
			}
		case c == '$' || c == '`':
			t.dynamic = true
			n, err := skipExpansion(s[i:])
			if err != nil {
				return t, 0, err
			}
			b.WriteString(s[i : i+n])
			i += n
		default:
			b.WriteByte(c)
			i++
		}
	}
	t.text = b.String()
	return t, i, nil
}

// skipExpansion returns the length of the expansion at the start of s:
// $(…), $((…)), ${…}, `…`, $name or a lone $.
func skipExpansion(s string) (int, error) {
	if s[0] == '`' {
		j := strings.IndexByte(s[1:], '`')
		if j < 0 {
			return 0, fmt.Errorf("%w: unterminated backquote", errShell)
		}
		return j + 2, nil
	}
	if len(s) < 2 {
		return 1, nil
	}
	open, close := byte(0), byte(0)
	switch s[1] {
	case '(':
		open, close = '(', ')'
	case '{':
		open, close = '{', '}'
	default:
		j := 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == 1 && strings.IndexByte("?!#@*$-", s[1]) >= 0 {
			j = 2
		}
		return j, nil
	}
	depth := 0
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '\'':
			k := strings.IndexByte(s[j+1:], '\'')
			if k < 0 {
				return 0, fmt.Errorf("%w: unterminated single quote", errShell)
			}
			j += k + 1
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: unterminated %c%c", errShell, '$', open)
}

type shParser struct {
	toks     []token
	pos      int
	depth    int
	pipefail bool // `set -o pipefail` seen
}

func (p *shParser) peekOp() string {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == tOp {
		return p.toks[p.pos].text
	}
	return ""
}

// list: and_or ((; | & | newline) and_or)*. The status is the last
// item's; `set -e` turns later `;` into `&&`.
func (p *shParser) list() (verdict, error) {
	var cur verdict
	cur.st = stOK
	cur.why = "an empty command"
	first, errexit := true, false
	for p.pos < len(p.toks) {
		if op := p.peekOp(); op == ";" || op == "&" {
			p.pos++
			continue
		}
		item, setE, err := p.andOr()
		if err != nil {
			return verdict{}, err
		}
		background := p.peekOp() == "&"
		if background {
			item.st, item.why = stOK, "a command sent to the background with &"
		}
		switch {
		case item.st == stPass:
			if first {
				cur = verdict{st: stOK, why: "exit"}
			}
			return cur, nil
		case first:
			cur = item
		case errexit:
			cur = and(cur, item)
		default:
			item.words = append(append([]string(nil), cur.words...), item.words...)
			item.runner = firstOf(cur.runner, item.runner)
			cur = item
		}
		first = false
		errexit = errexit || setE
	}
	return cur, nil
}

// andOr: pipeline ((&& | ||) pipeline)*, left associative.
func (p *shParser) andOr() (verdict, bool, error) {
	acc, setE, err := p.pipeline()
	if err != nil {
		return verdict{}, false, err
	}
	for {
		op := p.peekOp()
		if op != "&&" && op != "||" {
			return acc, setE, nil
		}
		p.pos++
		next, e, err := p.pipeline()
		if err != nil {
			return verdict{}, false, err
		}
		setE = setE || e
		if next.st == stPass {
			continue // `a && exit` ends with a's status
		}
		if op == "&&" {
			acc = and(acc, next)
		} else {
			acc = or(acc, next)
		}
	}
}

func and(a, b verdict) verdict {
	words := append(append([]string(nil), a.words...), b.words...)
	switch {
	case a.st == stFail || b.st == stFail:
		return verdict{st: stFail, words: words, runner: firstOf(a.runner, b.runner)}
	case a.st == stOK:
		return verdict{st: b.st, why: b.why, words: words, runner: firstOf(a.runner, b.runner)}
	case b.st == stOK:
		return verdict{st: a.st, why: a.why, words: words, runner: firstOf(a.runner, b.runner)}
	}
	return verdict{st: stReal, words: words, runner: firstOf(a.runner, b.runner)}
}

func or(a, b verdict) verdict {
	words := append(append([]string(nil), a.words...), b.words...)
	switch {
	case a.st == stOK:
		return verdict{st: stOK, why: a.why, words: words, runner: firstOf(a.runner, b.runner)}
	case b.st == stOK:
		return verdict{st: stOK, why: "`|| " + b.why + "`", words: words, runner: firstOf(a.runner, b.runner)}
	case a.st == stFail:
		return verdict{st: b.st, why: b.why, words: words, runner: firstOf(a.runner, b.runner)}
	}
	return verdict{st: stReal, words: words, runner: firstOf(a.runner, b.runner)}
}

// pipeline: [!] command (| command)*. The status is the last command's,
// or any failure's under `set -o pipefail`.
func (p *shParser) pipeline() (verdict, bool, error) {
	negate := false
	for p.pos < len(p.toks) && p.toks[p.pos].kind == tWord && p.toks[p.pos].text == "!" && !p.toks[p.pos].dynamic {
		negate = !negate
		p.pos++
	}
	var cmds []verdict
	setE := false
	for {
		words, err := p.simple()
		if err != nil {
			return verdict{}, false, err
		}
		v, err := analyzeWords(words, p.depth)
		if err != nil {
			return verdict{}, false, err
		}
		if isSet(words, "e", "errexit") {
			setE = true
		}
		if isSet(words, "", "pipefail") {
			p.pipefail = true
		}
		cmds = append(cmds, v)
		if op := p.peekOp(); op == "|" || op == "|&" {
			p.pos++
			continue
		}
		break
	}
	v := cmds[len(cmds)-1]
	if len(cmds) > 1 {
		var words []string
		runner := ""
		for _, c := range cmds {
			words = append(words, c.words...)
			runner = firstOf(runner, c.runner)
		}
		if v.st == stOK && !p.pipefail {
			v.why = "a pipeline ending in " + v.why
		}
		if p.pipefail {
			acc := cmds[0]
			for _, c := range cmds[1:] {
				acc = and(acc, c)
			}
			v = acc
		}
		if v.st == stPass {
			v.st = stOK
		}
		v.words = words
		v.runner = runner
	}
	if negate {
		switch v.st {
		case stOK, stPass:
			v.st, v.why = stFail, ""
		case stFail:
			v.st, v.why = stOK, "`!` on a command that always fails"
		}
	}
	return v, setE, nil
}

// simple reads one simple command's words, dropping redirections.
func (p *shParser) simple() ([]token, error) {
	var words []token
	for p.pos < len(p.toks) {
		t := p.toks[p.pos]
		if t.kind == tOp {
			if redirOps[t.text] {
				p.pos++
				if p.pos >= len(p.toks) || p.toks[p.pos].kind != tWord {
					return nil, fmt.Errorf("%w: redirection %q without a target", errShell, t.text)
				}
				p.pos++
				continue
			}
			break
		}
		words = append(words, t)
		p.pos++
	}
	if len(words) == 0 {
		op := "end of command"
		if p.pos < len(p.toks) {
			op = p.toks[p.pos].text
		}
		return nil, fmt.Errorf("%w: missing command before %q", errShell, op)
	}
	return words, nil
}

func isSet(words []token, short, long string) bool {
	if len(words) < 2 || words[0].text != "set" {
		return false
	}
	for i, w := range words[1:] {
		if short != "" && strings.HasPrefix(w.text, "-") && !strings.HasPrefix(w.text, "--") && strings.Contains(w.text, short) {
			return true
		}
		if w.text == "-o" && i+2 < len(words) && words[i+2].text == long {
			return true
		}
	}
	return false
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

// shellKeywords start compound commands the analysis does not follow.
var shellKeywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"case": true, "esac": true, "while": true, "until": true, "for": true, "select": true,
	"function": true, "[[": true, "]]": true, "coproc": true, "trap": true,
}

// trivialOK are commands whose exit status is 0 whatever the work's state.
var trivialOK = map[string]bool{
	"true": true, ":": true, "echo": true, "printf": true, "test": true, "[": true,
	"pwd": true, "sleep": true, "date": true, "whoami": true, "id": true, "hostname": true,
	"uname": true, "cat": true, "tee": true, "head": true, "tail": true, "wc": true,
	"sort": true, "uniq": true, "tr": true, "cut": true, "ls": true, "basename": true,
	"dirname": true, "seq": true, "touch": true, "yes": true, "cd": true, "set": true,
	"export": true, "unset": true, "shift": true, "wait": true, "local": true,
	"readonly": true, "declare": true, "typeset": true, "alias": true, "unalias": true,
	"hash": true, "type": true, "umask": true, "sync": true, "clear": true, "printenv": true,
	"env": true, "nproc": true, "tput": true, "stty": true, "logger": true, "mkdir": true,
}

// trivialFail always fail.
var trivialFail = map[string]bool{"false": true}

// shells run their -c argument as a script.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true, "mksh": true, "busybox": true}

// trivialFlags alone on a command only print something.
var trivialFlags = map[string]bool{"--version": true, "-version": true, "version": true, "-V": true, "--help": true, "-h": true, "help": true, "-help": true}

func analyzeWords(words []token, depth int) (verdict, error) {
	i := 0
	for i < len(words) && assignment.MatchString(words[i].text) {
		i++
	}
	if i == len(words) {
		return verdict{st: stOK, why: "a variable assignment"}, nil
	}
	if words[i].dynamic {
		return verdict{}, fmt.Errorf("%w: the command name %q is computed at run time", errShell, words[i].text)
	}
	argv := make([]string, 0, len(words)-i)
	for _, w := range words[i:] {
		argv = append(argv, w.text)
	}
	if shellKeywords[argv[0]] {
		return verdict{}, fmt.Errorf("%w: shell keyword %q is not supported; pass a plain command or an argv list", errShell, argv[0])
	}
	return analyzeSimple(argv, depth)
}

// analyzeSimple classifies one simple command given as argv.
func analyzeSimple(argv []string, depth int) (verdict, error) {
	if len(argv) == 0 || argv[0] == "" {
		return verdict{}, fmt.Errorf("%w: empty command", errShell)
	}
	if depth > maxShellDepth {
		return verdict{}, fmt.Errorf("%w: commands nested more than %d deep", errShell, maxShellDepth)
	}
	name := path.Base(argv[0])
	args := argv[1:]
	if inner, ok, err := unwrap(name, args); err != nil {
		return verdict{}, err
	} else if ok {
		if len(inner) == 0 {
			return verdict{st: stOK, why: fmt.Sprintf("%q without a command", name)}, nil
		}
		return analyzeSimple(inner, depth+1)
	}
	switch name {
	case "exit", "return":
		if len(args) == 0 || args[0] == "$?" {
			return verdict{st: stPass}, nil
		}
		n, err := strconv.Atoi(args[0])
		switch {
		case err != nil:
			return verdict{}, fmt.Errorf("%w: %s %q", errShell, name, args[0])
		case n%256 == 0:
			return verdict{}, fmt.Errorf("`%s %s` forces exit status 0 whatever ran before it", name, args[0])
		}
		return verdict{st: stFail}, nil
	case "eval":
		return analyzeScriptDepth(strings.Join(args, " "), depth+1)
	case "git":
		if len(args) > 0 && (args[0] == "status" || args[0] == "log" || args[0] == "show" || args[0] == "branch" ||
			args[0] == "diff" && !hasAny(args, "--exit-code", "--quiet")) {
			return verdict{st: stOK, why: "git " + args[0]}, nil
		}
	}
	if shells[name] {
		if name == "busybox" {
			if len(args) == 0 {
				return verdict{st: stOK, why: "busybox"}, nil
			}
			return analyzeSimple(args, depth+1)
		}
		for j := 0; j < len(args); j++ {
			a := args[j]
			if a == "--" || !strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "+") {
				break
			}
			if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "c") {
				if j+1 >= len(args) {
					return verdict{}, fmt.Errorf("%w: %s -c without a script", errShell, name)
				}
				return analyzeScriptDepth(args[j+1], depth+1)
			}
			if a == "-o" || a == "+o" || a == "-O" || a == "+O" {
				j++
			}
		}
		return verdict{st: stReal, words: argv}, nil
	}
	if trivialOK[name] {
		return verdict{st: stOK, why: quoteCmd(argv)}, nil
	}
	if trivialFail[name] {
		return verdict{st: stFail}, nil
	}
	if len(args) > 0 {
		all := true
		for _, a := range args {
			all = all && trivialFlags[a]
		}
		if all {
			return verdict{st: stOK, why: quoteCmd(argv)}, nil
		}
	}
	v := verdict{st: stReal, words: argv}
	switch {
	case name == "go" && len(args) > 0 && args[0] == "test":
		v.runner = "go test"
	case name == "pytest" || name == "py.test" || strings.HasPrefix(name, "python") && hasPytestModule(args):
		v.runner = "pytest"
	}
	return v, nil
}

func hasPytestModule(args []string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-m" && (args[i+1] == "pytest" || args[i+1] == "py.test") {
			return true
		}
	}
	return false
}

// unwrap returns the command a wrapper (env, timeout, nice, …) runs.
func unwrap(name string, args []string) ([]string, bool, error) {
	// skipOpts drops leading options; withArg lists options taking a value.
	skipOpts := func(args []string, withArg string) []string {
		for len(args) > 0 {
			a := args[0]
			if a == "--" {
				return args[1:]
			}
			if !strings.HasPrefix(a, "-") || a == "-" {
				return args
			}
			args = args[1:]
			if !strings.Contains(a, "=") && withArg != "" && strings.Contains(withArg, " "+a+" ") && len(args) > 0 {
				args = args[1:]
			}
		}
		return args
	}
	switch name {
	case "command", "builtin", "exec", "nohup", "time", "sudo", "doas", "stdbuf", "ionice", "chrt", "setsid", "unbuffer":
		if name == "command" && hasAny(args, "-v", "-V") {
			return nil, false, nil // prints where a command is: trivial
		}
		rest := skipOpts(args, " -u -g -C -p -o -i -e -n -c ")
		if name == "chrt" && len(rest) > 0 {
			rest = rest[1:]
		}
		return rest, true, nil
	case "env":
		if hasAny(args, "-S", "--split-string") {
			return nil, false, fmt.Errorf("%w: env -S", errShell)
		}
		rest := skipOpts(args, " -u -C --unset --chdir ")
		for len(rest) > 0 && assignment.MatchString(rest[0]) {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			return nil, false, nil // prints the environment
		}
		return rest, true, nil
	case "nice":
		return skipOpts(args, " -n --adjustment "), true, nil
	case "timeout":
		rest := skipOpts(args, " -s -k --signal --kill-after ")
		if len(rest) > 0 {
			rest = rest[1:] // the duration
		}
		return rest, true, nil
	case "xargs":
		return skipOpts(args, " -n -I -L -P -d -s -E -a --max-args --max-procs --delimiter "), true, nil
	}
	return nil, false, nil
}

func hasAny(args []string, flags ...string) bool {
	for _, a := range args {
		for _, f := range flags {
			if a == f {
				return true
			}
		}
	}
	return false
}

func quoteCmd(argv []string) string {
	s := strings.Join(argv, " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return "`" + s + "`"
}
