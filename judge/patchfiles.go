package judge

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/docket/docket/internal/regular"
)

// maxPatchFile bounds a patch file the judge reads for its targets.
const maxPatchFile = 1 << 20

// patchTargets adds to a shell call's Context.Applies the files the
// patches it applies write (git apply, git am, patch), read with open
// (nil: regular.Open; the daemon's opener reads as the caller): the line
// names only the patch, and a patch that writes a hook's wiring or a git
// hook is judged as a write to it. A patch that cannot be read adds
// nothing (the command will not read it either, or it is a pipe).
func patchTargets(p *ActionProposal, open func(string) (*os.File, error)) {
	sh := p.Context.Shell
	if sh == nil {
		return
	}
	for _, s := range sh.Segments {
		dir := s.Cwd
		if dir == "" {
			dir = p.Context.Cwd
		}
		for _, f := range patchFiles(s) {
			if !filepath.IsAbs(f) {
				if dir == "" {
					continue
				}
				f = filepath.Join(dir, f)
			}
			b, err := regular.ReadFile(open, f, maxPatchFile)
			if err != nil {
				continue
			}
			for _, t := range diffTargets(string(b)) {
				p.Context.Applies = append(p.Context.Applies, filepath.Join(dir, t))
			}
		}
	}
}

// patchFiles are the patch files a segment applies: git apply's and git
// am's operands, patch's -i file and second operand, and what either
// reads from a < redirection.
func patchFiles(s Segment) []string {
	files := append([]string(nil), s.Inputs...)
	switch s.Name() {
	case "git":
		sub, rest := subcommand(s.Argv, map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true})
		if sub != "apply" && sub != "am" {
			return nil
		}
		for _, a := range rest[1:] {
			if !strings.HasPrefix(a, "-") {
				files = append(files, a)
			}
		}
	case "patch":
		var operands []string
		for i := 1; i < len(s.Argv); i++ {
			switch a := s.Argv[i]; {
			case a == "-i" || a == "--input":
				if i+1 < len(s.Argv) {
					files = append(files, s.Argv[i+1])
					i++
				}
			case strings.HasPrefix(a, "--input="):
				files = append(files, strings.TrimPrefix(a, "--input="))
			case strings.HasPrefix(a, "-i") && len(a) > 2:
				files = append(files, a[2:])
			case !strings.HasPrefix(a, "-"):
				operands = append(operands, a)
			}
		}
		if len(operands) > 1 {
			files = append(files, operands[1])
		}
	default:
		return nil
	}
	return files
}

// diffTargets are the files a unified or git diff (or an apply_patch
// text) writes: its +++ and diff --git names, renames and copies, each
// as written and without git's a/ or b/ prefix (as -p1 strips it).
func diffTargets(patch string) []string {
	var out []string
	add := func(name string) {
		name = strings.TrimSpace(name)
		if i := strings.IndexByte(name, '\t'); i >= 0 {
			name = name[:i] // a timestamp after the name
		}
		if name == "" || name == "/dev/null" {
			return
		}
		out = append(out, name)
		if rest, ok := strings.CutPrefix(name, "b/"); ok {
			out = append(out, rest)
		} else if rest, ok := strings.CutPrefix(name, "a/"); ok {
			out = append(out, rest)
		}
	}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimRight(line, "\r")
		switch {
		case strings.HasPrefix(line, "+++ "):
			add(line[4:])
		case strings.HasPrefix(line, "--- "):
			add(line[4:]) // deleted or renamed away: written too
		case strings.HasPrefix(line, "diff --git "):
			for _, f := range strings.Fields(line[len("diff --git "):]) {
				add(f)
			}
		case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "copy to "):
			_, name, _ := strings.Cut(line, " to ")
			add(name)
		}
	}
	return append(out, PatchPaths(patch)...)
}
