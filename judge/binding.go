package judge

import (
	"slices"
	"sort"
	"strings"

	"github.com/docket/docket/hooks"
)

// A confirmed lesson binds only the calls it is about. Recall finds
// memories by shared words, tools and entities, which is right for
// evidence but far too loose for an instruction: a lesson about
// `cat ~/.aws/credentials | nc` must not block an unrelated force push.
// A lesson binds a call when
//
//   - its tool is the call's tool or one of the same kind (a lesson about
//     Bash binds every runtime's shell), and
//   - for a shell call, the call runs every command the lesson names
//     (program and subcommand: `git push`, `gh pr merge`, `kubectl
//     apply`; for a program without subcommands its first target
//     operand: `rm /home/dev/other`, `cat ~/.aws/credentials`) with at
//     least the lesson's flags and operands (a lesson about `git push
//     --force origin main` is not about a plain push to main, nor about
//     a force push of a feature branch), and
//   - for a file call, the lesson names the call's file.
//
// The memory's entities say it ("tool:bash", "command:git push",
// "file:/abs/path", "system:prod"); a memory written without command or
// file entities is matched on its words instead.

// subjectCall is what binding compares: the call's tool, kind, commands
// and targets.
type subjectCall struct {
	tool, alias string
	kind        hooks.ToolKind
	commands    [][]string        // each command's key words, lowercased
	flags       []map[string]bool // each command's flags and operands, lowercased
	targets     []string          // file paths and the target, lowercased
	system      string
}

// twoLevel lists programs whose subcommands have subcommands.
var twoLevel = words{"gh", "glab", "aws", "gcloud", "az", "doctl"}

// trivial lists commands that say nothing about what a call does.
var trivial = words{"cd", "pushd", "popd", "echo", "printf", "true", "false",
	"pwd", "sleep", "export", "set", "source", ".", "test", "[", ":", "exit"}

// subcommands lists programs whose first operand is a subcommand.
var subcommands = words{"git", "npm", "yarn", "pnpm", "bun", "kubectl", "docker",
	"podman", "helm", "terraform", "tofu", "cargo", "go", "pip", "pip3", "uv",
	"poetry", "brew", "apt", "apt-get", "systemctl", "make", "gradle", "mvn",
	"dotnet", "heroku", "vercel", "fly", "flyctl", "firebase", "supabase", "wrangler",
	"gh", "glab", "aws", "gcloud", "az", "doctl", "docket"}

// commandKey is a segment's program and subcommand (`git push`, `gh pr
// merge`) or, for a program without subcommands, its first operand that
// names a target (`rm /home/dev/other`, `curl https://paste.example`),
// lowercased; nil for a trivial segment.
func commandKey(s Segment) []string {
	name := strings.ToLower(s.Name())
	if name == "" || trivial.has(name) {
		return nil
	}
	var ops []string
	for _, a := range s.Argv[1:] {
		if a != "" && !strings.HasPrefix(a, "-") {
			ops = append(ops, strings.ToLower(a))
		}
	}
	if subcommands.has(name) {
		want := 1
		if twoLevel.has(name) {
			want = 2
		}
		return append([]string{name}, ops[:min(want, len(ops))]...)
	}
	for _, o := range ops {
		if strings.Contains(o, "://") {
			return []string{name, o}
		}
	}
	for _, o := range ops {
		if strings.ContainsAny(o, "/.~:@") {
			return []string{name, o}
		}
	}
	return append([]string{name}, ops[:min(1, len(ops))]...)
}

// textFlags take free text (a comment, a title, a message) as their
// value: what a call says is not what it does, so a lesson about
// commenting on a pull request binds the next comment too.
var textFlags = words{"--body", "--title", "--message", "--notes", "--description",
	"--subject", "--comment", "--reason"}

// shortTextFlags are the programs' one-letter text flags (elsewhere -b,
// -t, -n name a branch, a tag, a namespace: what a call does).
func shortTextFlags(program string) words {
	switch program {
	case "gh", "glab":
		return ghTextFlags
	case "git":
		return gitTextFlags
	}
	return nil
}

var (
	ghTextFlags  = words{"-b", "-t", "-m"}
	gitTextFlags = words{"-m"}
)

// commandFlags are a segment's flags (without their =values) and
// operands, lowercased: the words a lesson's command must all find.
// Numbers (a pull request's, an issue's) and the text of textFlags are
// left out: they name which one, not what is done to it.
func commandFlags(s Segment) map[string]bool {
	out := map[string]bool{}
	args := s.Argv[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-" || a == "--" || a == "" || isNumber(strings.TrimPrefix(a, "#")) {
			continue
		}
		if strings.HasPrefix(a, "-") {
			a, _, _ = strings.Cut(a, "=")
			if (textFlags.has(a) || shortTextFlags(strings.ToLower(s.Name())).has(a)) && !strings.Contains(args[i], "=") {
				i++ // its value
			}
		}
		out[strings.ToLower(a)] = true
	}
	return out
}

func isNumber(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func subjectOf(p *ActionProposal) subjectCall {
	c := subjectCall{tool: strings.ToLower(p.Tool.Name), alias: strings.ToLower(p.Context.Alias), kind: p.Context.ToolKind, system: strings.ToLower(deref(p.Tool.TargetSystem))}
	if c.kind == "" {
		c.kind = hooks.KindOf(p.Tool.Name)
	}
	if sh := p.Context.Shell; sh != nil {
		for _, s := range sh.Segments {
			if k := commandKey(s); k != nil {
				c.commands = append(c.commands, k)
				c.flags = append(c.flags, commandFlags(s))
			}
		}
		return c
	}
	for _, s := range p.Context.Paths {
		c.targets = append(c.targets, strings.ToLower(s))
	}
	if t := deref(p.Action.Target); t != "" {
		c.targets = append(c.targets, strings.ToLower(t))
	}
	return c
}

func subjectOfQuery(q RecallQuery) subjectCall {
	c := subjectCall{tool: strings.ToLower(q.ToolName), kind: hooks.KindOf(q.ToolName), system: strings.ToLower(q.TargetSystem)}
	if c.kind == hooks.KindShell {
		for _, s := range ClassifyCommand(q.Target, ShellContext{}).Segments {
			if k := commandKey(s); k != nil {
				c.commands = append(c.commands, k)
				c.flags = append(c.flags, commandFlags(s))
			}
		}
		return c
	}
	if q.Target != "" {
		c.targets = append(c.targets, strings.ToLower(q.Target))
	}
	return c
}

// SubjectEntities are the entity tags that say what a call is about:
// its tool, its shell commands and its file. A lesson written with them
// binds the calls they name (see LessonBinds).
func SubjectEntities(p *ActionProposal) []string {
	c := subjectOf(p)
	out := []string{"tool:" + c.tool}
	for i, k := range c.commands {
		fl := make([]string, 0, len(c.flags[i]))
		for f := range c.flags[i] {
			if !slices.Contains(k, f) {
				fl = append(fl, f)
			}
		}
		sort.Strings(fl)
		out = append(out, "command:"+strings.Join(append(slices.Clone(k), fl...), " "))
	}
	if c.kind != hooks.KindShell {
		for i, t := range c.targets {
			if (strings.HasPrefix(t, "/") || strings.HasPrefix(t, "~")) && !slices.Contains(c.targets[:i], t) {
				out = append(out, "file:"+t)
			}
		}
	}
	if c.system != "" {
		out = append(out, "system:"+c.system)
	}
	return out
}

// LessonBinds reports whether the instruction-grade memory m is about
// the call p, so that its required behaviour may decide p.
func LessonBinds(m Memory, p *ActionProposal) bool { return binds(m, subjectOf(p)) }

// LessonBindsQuery is LessonBinds for what a recall query says of its
// call (the store adapter filters policy hits with it).
func LessonBindsQuery(m Memory, q RecallQuery) bool { return binds(m, subjectOfQuery(q)) }

func kindOfName(t string) hooks.ToolKind {
	if k := hooks.KindOf(t); k != hooks.KindOther {
		return k
	}
	for _, k := range []hooks.ToolKind{hooks.KindShell, hooks.KindFileWrite, hooks.KindFileEdit, hooks.KindRead, hooks.KindSearch, hooks.KindFetch} {
		if strings.EqualFold(t, hooks.CanonicalTool(k)) {
			return k
		}
	}
	return hooks.KindOther
}

func binds(m Memory, c subjectCall) bool {
	var tools, commands, files, systems []string
	for _, e := range m.Entities {
		kind, v, ok := strings.Cut(strings.ToLower(e), ":")
		if !ok || v == "" {
			continue
		}
		switch kind {
		case "tool":
			tools = append(tools, v)
		case "command":
			commands = append(commands, v)
		case "file":
			files = append(files, v)
		case "system":
			systems = append(systems, v)
		}
	}
	words := tokens(m.Summary + " " + m.Content)
	// the tool
	if len(tools) > 0 {
		ok := false
		for _, t := range tools {
			if t == c.tool || t == c.alias && c.alias != "" {
				ok = true
				break
			}
			if k := kindOfName(t); k == c.kind && k != hooks.KindMCP && k != hooks.KindOther {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	} else if c.kind != hooks.KindShell && !words[c.tool] && !(c.alias != "" && words[c.alias]) {
		// a lesson written in words binds a shell call by the commands it
		// names (below), whatever the runtime calls its shell tool
		return false
	}
	switch {
	case c.kind == hooks.KindShell && len(commands) > 0:
		// a lesson about a command line binds calls that run every
		// command of it, with at least its flags: "approve and merge" is
		// not about a plain merge, a force push not about a push
		for _, mc := range commands {
			found := false
			for i, k := range c.commands {
				key := strings.Join(k, " ")
				if mc != key && !strings.HasPrefix(mc, key+" ") {
					continue
				}
				found = true
				for _, w := range strings.Fields(mc[len(key):]) {
					found = found && c.flags[i][w]
				}
				if found {
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	case c.kind == hooks.KindShell:
		for _, k := range c.commands {
			all := true
			for _, w := range k {
				all = all && words[w]
			}
			if all {
				return true
			}
		}
		return false
	case c.kind.Writes() || c.kind == hooks.KindRead || c.kind == hooks.KindSearch:
		for _, t := range c.targets {
			if len(files) > 0 {
				for _, f := range files {
					if f == t {
						return true
					}
				}
				continue
			}
			if words[t] {
				return true
			}
		}
		return false
	}
	// an MCP, fetch or other tool: its name says what it does; a lesson
	// that names a system binds only that system
	if len(systems) > 0 && c.system != "" {
		for _, s := range systems {
			if s == c.system {
				return true
			}
		}
		return false
	}
	return true
}

// tokens splits text into lowercased words: runs of anything but space
// and the punctuation prose puts around words.
func tokens(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || strings.ContainsRune("()[]{},;\"'`|&<>", r)
	}) {
		w = strings.TrimRight(w, ".:!?")
		if w != "" {
			out[w] = true
		}
	}
	return out
}
