package judge

import (
	"bytes"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/docket/docket/internal/regular"
	"github.com/docket/docket/policies"
)

// maxScript bounds a shell script the judge reads to classify (a
// generated configure is about 1 MiB, classified in about 0.1 s); a
// larger one is high_risk.
const maxScript = 4 << 20

// maxScriptDepth bounds scripts that run scripts.
const maxScriptDepth = 2

// scriptRuns classifies the shell scripts a shell call runs (bash s.sh,
// source s.sh, ./s.sh with a shell's #! or none, bash < s.sh), and the
// recipes make and npm run for it (recipes.go), read with
// open (nil: regular.Open; the daemon's opener reads as the caller), as
// the lines they are: the line names only the script, and `echo 'git
// push --force origin main' > s.sh`, then `bash s.sh`, would otherwise
// be judged by its name. A script's findings raise the call's class,
// each reason naming the script, and its commands join the line's
// segments, so that rules and protections see them too.
//
// A script on disk may be the project's own: its commands computed at
// run time ($JAVACMD, eval) are its author's idiom, and do not raise the
// class, nor does a quoting the lexer cannot follow. A script the same
// line writes is the agent's: written by a here-document, its body is
// classified in full; written any other way (a download, a copy), it
// cannot be read before it runs, and the call is high_risk.
func scriptRuns(p *ActionProposal, open func(string) (*os.File, error)) {
	sh := p.Context.Shell
	if sh == nil {
		return
	}
	class := p.Action.RiskClass
	segs := sh.Segments
	for depth := 0; depth < maxScriptDepth && len(segs) > 0; depth++ {
		var found []Segment
		for _, s := range segs {
			dir := s.Cwd
			if dir == "" {
				dir = p.Context.Cwd
			}
			for _, r := range runsOf(sh.Segments, s, dir, open, p.Context.Branch) {
				class = policies.Stricter(class, r.cc.Class)
				for _, why := range r.cc.Reasons {
					p.Context.ClassReasons = append(p.Context.ClassReasons, r.name+": "+why)
				}
				p.Context.Acts = append(p.Context.Acts, r.cc.Actions...)
				found = append(found, r.cc.Segments...)
			}
		}
		sh.Segments = append(sh.Segments, found...)
		segs = found
	}
	p.setClass(class)
}

// fileRun is what a file a segment runs gives: the file's name for the
// reasons, and its classification.
type fileRun struct {
	name string
	cc   CommandClass
}

// runsOf classifies what s runs from files: a shell script or a
// program, the recipes of a makefile's targets or a package.json's
// scripts (recipes.go), the Go program go run builds, or the hooks a git
// command runs (githooks.go).
func runsOf(segs []Segment, s Segment, dir string, open func(string) (*os.File, error), branch string) []fileRun {
	if script, lang := scriptOf(s); script != "" {
		if cc, ok := readScript(segs, script, lang, dir, open, branch); ok {
			return []fileRun{{path.Base(script), cc}}
		}
		return nil
	}
	ctx := ShellContext{Cwd: dir, Branch: branch, script: true}
	if name, files, lines := recipesOf(s, dir, open); name != "" {
		if r, changed := changedRun(segs, name, files); changed {
			return []fileRun{r}
		}
		return []fileRun{{name, ClassifyCommand(strings.Join(lines, "\n"), ctx)}}
	}
	if name, files, code := goRunSource(s, dir, open); name != "" {
		if r, changed := changedRun(segs, name, files); changed {
			return []fileRun{r}
		}
		return []fileRun{{name, classifyProgram("go", code, ctx)}}
	}
	var out []fileRun
	for _, h := range gitHooks(s, dir, open) {
		if r, changed := changedRun(segs, h.name+" hook", []string{h.path}); changed {
			out = append(out, r)
		} else if lang := runsAs(h.text); lang != "" {
			out = append(out, fileRun{h.name + " hook", classifyProgram(lang, string(h.text), ctx)})
		}
	}
	return out
}

// changedRun is a high_risk run for files the segment runs that a
// segment of the same line writes or changes: what is read now is not
// what runs.
func changedRun(segs []Segment, name string, files []string) (fileRun, bool) {
	for _, f := range files {
		if _, changed := changedOnLine(segs, f); changed {
			var cc CommandClass
			cc.raise(policies.HighRisk, "runs "+filepath.Base(f)+", which this line writes or changes: what it runs is not on the line")
			return fileRun{name, cc}, true
		}
	}
	return fileRun{}, false
}

// scriptOf returns the script file s runs, "" for none, and the
// language that runs it: "sh" for a shell's, an interpreter's name
// (python3 deploy.py, node x.js), or "" when the script is s's command
// itself (./deploy), whose #! names it.
func scriptOf(s Segment) (script, lang string) {
	if len(s.Argv) == 0 {
		return "", ""
	}
	name := s.Name()
	switch {
	case name == "source" || name == ".":
		if len(s.Argv) > 1 && s.Argv[1] != "/dev/stdin" {
			return s.Argv[1], "sh"
		}
	case isShellName(name):
		if runsStdin(s) {
			if len(s.Inputs) > 0 && !s.Here {
				return s.Inputs[0], "sh" // bash < s.sh
			}
			return "", ""
		}
		_, script := shellInvocation(s.Argv) // a -c string is classified as a line
		return script, "sh"
	case strings.Contains(s.Argv[0], "/") && !computed(s.Argv[0]):
		return s.Argv[0], ""
	default:
		if flag, _ := interpreterCode(name); flag != "" {
			return interpreterScript(s.Argv, flag), name
		}
	}
	return "", ""
}

// readScript classifies the script at script (relative to dir) in lang
// (scriptOf), which a segment of segs runs: a shell script as its lines,
// another program by the commands its code starts (codeCommands). ok is
// false when there is nothing to judge: no such file, or a program no
// shell or known interpreter runs. A script whose name is computed when
// the line runs, or one the line itself writes or changes, is judged
// before any file is read (changedOnLine).
func readScript(segs []Segment, script, lang, dir string, open func(string) (*os.File, error), branch string) (cc CommandClass, ok bool) {
	if computed(script) {
		cc.raise(policies.HighRisk, "runs a script whose name is computed when the line runs ("+script+")")
		return cc, true
	}
	full := under(dir, script)
	if full == "" || strings.ContainsAny(script, "$`~") {
		return cc, false // a path only the shell knows ($NVM_DIR/nvm.sh)
	}
	ctx := ShellContext{Cwd: dir, Branch: branch}
	if w, changed := changedOnLine(segs, full); changed {
		if w.Here && lang != "" {
			// the agent's own script, whole on the line
			return classifyProgram(lang, w.Stdin, ctx), true
		}
		cc.raise(policies.HighRisk, "runs a script this line writes or changes: what it runs is not on the line")
		return cc, true
	}
	b, err := regular.ReadFile(open, full, maxScript)
	switch {
	case errors.Is(err, regular.ErrTooLarge):
		cc.raise(policies.HighRisk, "runs a script too large to judge (over 4 MiB)")
		return cc, true
	case errors.Is(err, regular.ErrNotRegular):
		// a FIFO another command fills, a device: read only as it runs
		cc.raise(policies.HighRisk, "runs a script that is no regular file: what it runs is not on the line")
		return cc, true
	case err != nil:
		return cc, false // no such file, or unreadable: the shell cannot run it either
	}
	if lang == "" {
		if lang = runsAs(b); lang == "" {
			return cc, false
		}
	}
	ctx.script = true
	return classifyProgram(lang, string(b), ctx), true
}

// classifyProgram classifies a program's text in lang: a shell's as
// the lines it is, another's by the commands its code starts.
func classifyProgram(lang, text string, ctx ShellContext) CommandClass {
	if lang == "sh" {
		return ClassifyCommand(text, ctx)
	}
	return ClassifyCommand(strings.Join(codeCommands(lang, text), "\n"), ctx)
}

// changedOnLine reports whether a segment of segs writes or changes
// the file at full (an absolute path), which another segment of the
// same line then runs: the file read now is not the one that runs. w is
// the segment that writes it by a redirection (its here-document is the
// new file); a file maker or changer that names it (cp, curl -o, tee,
// sed -i, an interpreter) changes it too. Words are resolved from each
// segment's directory, so ./s.sh and s.sh are one file.
func changedOnLine(segs []Segment, full string) (w Segment, changed bool) {
	for _, s := range segs {
		dir := s.Cwd
		for _, r := range s.Redirects {
			if under(dir, r) == full {
				return s, true
			}
		}
	}
	for _, s := range segs {
		if !fileChangers.has(s.Name()) && !isInterpreterName(s.Name()) {
			continue
		}
		if script, _ := scriptOf(s); script != "" && under(s.Cwd, script) == full {
			continue // it runs the file (bash s.sh), which changes nothing
		}
		for _, a := range s.Argv[1:] {
			if _, v, ok := strings.Cut(a, "="); ok {
				a = v // --output=FILE, of=FILE
			}
			if under(s.Cwd, a) == full {
				return Segment{}, true
			}
		}
	}
	return Segment{}, false
}

// fileChangers write or change a file their words name: a copy, a link,
// a download, an edit in place.
var fileChangers = words{"cp", "mv", "install", "ln", "tee", "curl", "wget", "rsync", "scp", "sftp", "dd", "rclone", "gsutil", "aws", "unzip", "tar", "base64", "xxd", "openssl", "gpg",
	"sed", "gsed", "ed", "ex", "vi", "vim", "nvim", "patch", "truncate", "sponge"}

// runsAs returns what runs a file run as a program: "sh" for a #!
// naming a shell (directly or through env) or for no #! and text
// (execve refuses it, and the shell that asked runs it itself), the
// interpreter a #! names, or "" (a binary, another program).
func runsAs(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.HasPrefix(line, []byte("#!")) {
		head := b[:min(len(b), 1024)]
		if len(line) > 0 && !bytes.HasPrefix(b, []byte("\x7fELF")) && bytes.IndexByte(head, 0) < 0 {
			return "sh"
		}
		return ""
	}
	f := strings.Fields(string(line[2:]))
	if len(f) == 0 {
		return ""
	}
	prog := path.Base(f[0])
	if prog == "env" {
		prog = ""
		for _, a := range f[1:] {
			if !strings.HasPrefix(a, "-") && !strings.Contains(a, "=") {
				prog = path.Base(a)
				break
			}
		}
	}
	switch flag, _ := interpreterCode(prog); {
	case isShellName(prog):
		return "sh"
	case flag != "":
		return prog
	}
	return ""
}
