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
	eachSegment(p, func(s Segment, dir string) {
		files, applies := patchFiles(s)
		if applies && s.Stdin != "" {
			// the patch given on the line: git apply <<EOF … EOF
			for _, t := range diffTargets(s.Stdin) {
				p.Context.Applies = append(p.Context.Applies, filepath.Join(dir, t))
			}
		}
		for _, f := range files {
			if f = under(dir, f); f == "" {
				continue
			}
			b, err := regular.ReadFile(open, f, maxPatchFile)
			if err != nil {
				continue
			}
			for _, t := range diffTargets(string(b)) {
				p.Context.Applies = append(p.Context.Applies, filepath.Join(dir, t))
			}
		}
	})
}

// eachSegment calls fn with each segment of a shell call and the
// directory it runs in (its line's cd's, else the call's cwd).
func eachSegment(p *ActionProposal, fn func(s Segment, dir string)) {
	if p.Context.Shell == nil {
		return
	}
	for _, s := range p.Context.Shell.Segments {
		dir := s.Cwd
		if dir == "" {
			dir = p.Context.Cwd
		}
		fn(s, dir)
	}
}

// under is f as an absolute path, relative ones taken from dir; "" when
// f is relative and dir unknown.
func under(dir, f string) string {
	switch {
	case filepath.IsAbs(f):
		return f
	case dir == "":
		return ""
	}
	return filepath.Join(dir, f)
}

// patchFiles are the patch files a segment applies: git apply's and git
// am's operands, patch's -i file and second operand, and what either
// reads from a < redirection; applies is whether it applies patches at
// all.
func patchFiles(s Segment) (files []string, applies bool) {
	files = append(files, s.Inputs...)
	switch s.Name() {
	case "git":
		sub, rest := subcommand(s.Argv, map[string]bool{"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true})
		if sub != "apply" && sub != "am" {
			return nil, false
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
		return nil, false
	}
	return files, true
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

// archiveTargets adds to a shell call's Context.Applies the files the
// archives it extracts write (tar -x, unzip), listed from the archives
// with open: an archive that holds a hook's wiring is judged as a write
// to it. Entries past maxArchiveRead of a tar are not listed.
func archiveTargets(p *ActionProposal, open func(string) (*os.File, error)) {
	if open == nil {
		open = regular.Open
	}
	eachSegment(p, func(s Segment, dir string) {
		archive, dest, kind := extraction(s)
		if archive == "" {
			return // none, or a tar read from its input
		}
		if archive = under(dir, archive); archive == "" {
			return
		}
		if dest = under(dir, dest); dest == "" {
			dest = dir
		}
		f, err := open(archive)
		if err != nil {
			return
		}
		defer f.Close()
		for _, name := range archiveNames(f, kind) {
			p.Context.Applies = append(p.Context.Applies, filepath.Join(dest, name))
		}
	})
}

// extraction returns the archive a segment extracts, the directory it
// extracts into ("" for the working directory) and its kind ("tar",
// "zip"); archive is "" for any other segment.
func extraction(s Segment) (archive, dest, kind string) {
	args := s.Argv[1:]
	switch s.Name() {
	case "unzip":
		for i := 0; i < len(args); i++ {
			switch a := args[i]; {
			case a == "-l" || a == "-v" || a == "-t" || a == "-p" || a == "-Z" || a == "-z":
				return "", "", "" // lists, tests or prints: writes nothing
			case a == "-d" && i+1 < len(args):
				dest = args[i+1]
				i++
			case !strings.HasPrefix(a, "-") && archive == "":
				archive = a
			}
		}
		return archive, dest, "zip"
	case "7z", "7za", "7zz":
		// 7z x|e ARCHIVE [-oDIR]: a zip is listed; other formats are not
		if len(args) < 2 || args[0] != "x" && args[0] != "e" {
			return "", "", ""
		}
		for _, a := range args[1:] {
			if d, ok := strings.CutPrefix(a, "-o"); ok {
				dest = d
			} else if !strings.HasPrefix(a, "-") && archive == "" {
				archive = a
			}
		}
		return archive, dest, "zip"
	case "tar", "bsdtar", "gtar":
		if len(args) == 0 {
			return "", "", ""
		}
		extract := false
		for _, a := range args {
			if a == "--extract" || a == "--get" || len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a, 'x') {
				extract = true
			}
		}
		archive, _ = optionValue(args, 'f', "--file")
		dest, _ = optionValue(args, 'C', "--directory")
		// the old form: tar xzf F, its letters without a dash
		if old := args[0]; !strings.HasPrefix(old, "-") {
			extract = extract || strings.ContainsRune(old, 'x')
			if strings.ContainsRune(old, 'f') && archive == "" && len(args) > 1 {
				archive = args[1]
			}
		}
		if !extract {
			return "", "", ""
		}
		return archive, dest, "tar"
	}
	return "", "", ""
}
