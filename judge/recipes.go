package judge

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/docket/docket/internal/regular"
)

// maxRecipeFile bounds a makefile or package.json the judge reads.
const maxRecipeFile = 1 << 20

// recipesOf returns the command lines a build tool runs for s, read
// from the project's own files: make's recipes for its targets (and
// their prerequisites), npm's, yarn's, pnpm's or bun's script (with its
// pre and post scripts). name is the file and target for the reasons,
// files the files read (absolute).
// The line names only the target, and the agent may have written the
// recipe: `make test` whose recipe pushes is judged by the push.
func recipesOf(s Segment, dir string, open func(string) (*os.File, error)) (name string, files, lines []string) {
	switch s.Name() {
	case "make", "gmake":
		return makeRecipes(s, dir, open)
	case "npm", "yarn", "pnpm", "bun":
		return packageScripts(s.Argv, dir, open)
	}
	return "", nil, nil
}

// makeRecipes reads the makefile make would (-f, -C, else GNUmakefile,
// makefile, Makefile) and returns the recipes of the goals make is given
// (the first target when none), with their prerequisites' first.
// Variables stay as written: a recipe's computed commands are its
// author's idiom (script mode). Included makefiles are not read.
func makeRecipes(s Segment, dir string, open func(string) (*os.File, error)) (name string, files, lines []string) {
	argv := s.Argv
	var file string
	var goals []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-f" || a == "--file" || a == "--makefile":
			if i+1 < len(argv) {
				file = argv[i+1]
				i++
			}
		case strings.HasPrefix(a, "--file=") || strings.HasPrefix(a, "--makefile="):
			file = a[strings.IndexByte(a, '=')+1:]
		case a == "-C" || a == "--directory":
			if i+1 < len(argv) {
				dir = under(dir, argv[i+1])
				i++
			}
		case strings.HasPrefix(a, "-C") && len(a) > 2:
			dir = under(dir, a[2:])
		case a == "-I" || a == "-o" || a == "-W" || a == "-j" && i+1 < len(argv) && isDigits(argv[i+1]):
			i++
		case strings.HasPrefix(a, "-") || isAssignment(a):
		default:
			goals = append(goals, a)
		}
	}
	if dir == "" || strings.ContainsAny(file, "$`~") {
		return "", nil, nil
	}
	var b []byte
	switch {
	case (file == "-" || file == "/dev/stdin") && s.Here:
		b = []byte(s.Stdin) // make -f - <<EOF
	case file != "":
		b, _ = regular.ReadFile(open, under(dir, file), maxRecipeFile)
		files = append(files, under(dir, file))
	default:
		for _, f := range []string{"GNUmakefile", "makefile", "Makefile"} {
			var err error
			if b, err = regular.ReadFile(open, filepath.Join(dir, f), maxRecipeFile); err == nil {
				file = f
				files = append(files, filepath.Join(dir, f))
				break
			}
		}
	}
	if len(b) == 0 {
		return "", nil, nil
	}
	text := string(b)
	// a plain-named include (one level: what the validators hold to HEAD)
	for _, inc := range makeIncludes(text) {
		if ib, err := regular.ReadFile(open, under(dir, inc), maxRecipeFile); err == nil {
			text += "\n" + string(ib)
			files = append(files, under(dir, inc))
		}
	}
	rules, first := parseMakefile(text)
	if len(goals) == 0 {
		if first == "" {
			return "", nil, nil
		}
		goals = []string{first}
	}
	seen := map[string]bool{}
	var walk func(t string, depth int)
	walk = func(t string, depth int) {
		if seen[t] || depth > 16 {
			return
		}
		seen[t] = true
		r, ok := rules[t]
		if !ok {
			return
		}
		for _, p := range r.prereqs {
			walk(p, depth+1)
		}
		lines = append(lines, r.recipe...)
	}
	for _, g := range goals {
		walk(g, 0)
	}
	// $(shell …) runs as make reads the makefile, whatever the goal
	lines = append(makeShellCalls(text), lines...)
	if file == "" || file == "-" {
		file = "makefile"
	}
	return filepath.Base(file) + " " + strings.Join(goals, " "), files, lines
}

// makeIncludes are the files a makefile's include, -include and
// sinclude lines name plainly (no variable).
func makeIncludes(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "include" && f[0] != "-include" && f[0] != "sinclude" {
			continue
		}
		for _, name := range f[1:] {
			if !strings.ContainsAny(name, "$*?[") && len(out) < 16 {
				out = append(out, name)
			}
		}
	}
	return out
}

// makeShellCalls are the command lines of a makefile's $(shell …) and
// ${shell …} calls (parentheses balanced).
func makeShellCalls(text string) []string {
	var out []string
	for _, start := range []string{"$(shell ", "${shell "} {
		closeCh := byte(')')
		if start[1] == '{' {
			closeCh = '}'
		}
		rest := text
		for {
			i := strings.Index(rest, start)
			if i < 0 {
				break
			}
			rest = rest[i+len(start):]
			depth, end := 1, -1
			for j := 0; j < len(rest) && end < 0; j++ {
				switch rest[j] {
				case start[1]:
					depth++
				case closeCh:
					if depth--; depth == 0 {
						end = j
					}
				}
			}
			if end < 0 {
				break
			}
			out = append(out, strings.ReplaceAll(rest[:end], "$$", "$"))
			rest = rest[end:]
		}
	}
	return out
}

// makeRule is a makefile rule's prerequisites and recipe lines.
type makeRule struct {
	prereqs []string
	recipe  []string
}

// parseMakefile reads a makefile's explicit rules: "targets: prereqs"
// lines (";" starts a recipe on the line, "|" order-only prerequisites)
// and the tab-indented recipe lines after them, "\" continuations
// joined, make's own prefixes (@, -, +) dropped and $$ read as $. first
// is the default goal: the first target that does not start with ".".
func parseMakefile(text string) (rules map[string]*makeRule, first string) {
	rules = map[string]*makeRule{}
	var cur []*makeRule
	text = strings.ReplaceAll(text, "\\\n", " ")
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "\t") {
			for _, r := range cur {
				r.recipe = append(r.recipe, recipeLine(line))
			}
			continue
		}
		cur = nil
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || strings.HasPrefix(line[colon:], ":=") || strings.HasPrefix(line[colon:], "::=") || strings.ContainsAny(line[:colon], "=$(") {
			continue // an assignment, a directive, or a computed target
		}
		rest := strings.TrimLeft(line[colon+1:], ":")
		var inline string
		if i := strings.IndexByte(rest, ';'); i >= 0 {
			rest, inline = rest[:i], rest[i+1:]
		}
		if strings.Contains(rest, "=") {
			continue // a target-specific variable
		}
		prereqs := strings.Fields(strings.ReplaceAll(rest, "|", " "))
		for _, t := range strings.Fields(line[:colon]) {
			r := rules[t]
			if r == nil {
				r = &makeRule{}
				rules[t] = r
			}
			r.prereqs = append(r.prereqs, prereqs...)
			if strings.TrimSpace(inline) != "" {
				r.recipe = append(r.recipe, recipeLine(inline))
			}
			cur = append(cur, r)
			if first == "" && !strings.HasPrefix(t, ".") && !strings.Contains(t, "%") {
				first = t
			}
		}
	}
	return rules, first
}

// recipeLine is a recipe line as the shell gets it.
func recipeLine(l string) string {
	l = strings.TrimLeft(strings.TrimSpace(l), "@-+")
	return strings.ReplaceAll(l, "$$", "$")
}

// packageScripts returns the script a package manager runs from
// package.json (npm test, npm run build, yarn build, pnpm lint, bun run
// x) with its pre and post scripts, or the project's own install
// scripts for an install of its dependencies (npm install, npm ci);
// name is "package.json NAME".
func packageScripts(argv []string, dir string, open func(string) (*os.File, error)) (name string, files, lines []string) {
	var words []string
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			break
		}
		if a == "--prefix" || a == "-C" || a == "--cwd" || a == "--dir" {
			if i+1 < len(argv) {
				dir = under(dir, argv[i+1])
				i++
			}
			continue
		}
		if !strings.HasPrefix(a, "-") {
			words = append(words, a)
		}
	}
	if len(words) == 0 || dir == "" {
		return "", nil, nil
	}
	script := ""
	var lifecycle []string
	switch words[0] {
	case "install", "i", "ci", "add":
		if len(words) > 1 && words[0] != "ci" {
			return "", nil, nil // packages named: their scripts are theirs
		}
		script = "install"
		lifecycle = []string{"preinstall", "install", "postinstall", "prepare"}
	case "run", "run-script", "rum", "urn":
		if len(words) > 1 {
			script = words[1]
		}
	case "test", "t", "tst", "start", "stop", "restart":
		script = words[0]
		switch script {
		case "t", "tst":
			script = "test"
		}
	default:
		if argv[0] == "npm" || strings.HasSuffix(argv[0], "/npm") {
			return "", nil, nil // npm's own commands (install, publish, …)
		}
		script = words[0] // yarn build, pnpm lint, bun x: a script when package.json has one
	}
	if script == "" {
		return "", nil, nil
	}
	pj := filepath.Join(dir, "package.json")
	b, err := regular.ReadFile(open, pj, maxRecipeFile)
	if err != nil {
		return "", nil, nil
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return "", nil, nil
	}
	if script != "install" {
		lifecycle = []string{"pre" + script, script, "post" + script}
	}
	for _, k := range lifecycle {
		if l, ok := pkg.Scripts[k]; ok {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "", nil, nil
	}
	return "package.json " + script, []string{pj}, lines
}
