package validators

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// fileDiffClass implements file_diff_present {path, base}: PASS when the
// path differs from the git revision base (default HEAD) in more than
// white space — committed since base, staged or unstaged (`git diff -w
// --ignore-blank-lines base -- path` shows a hunk or a binary change), or
// an untracked, not ignored file under path with non-white-space content.
// White-space-only edits, mode-only changes and empty new files do not
// count. Pathspecs are literal; git's environment variables are removed.
// Refused: an empty path, a path naming the whole tree ("." or "/"), a
// path leaving the working directory, a path or base starting with "-",
// a base containing white space or a range ("..").
type fileDiffClass struct{}

func init() { classes["file_diff_present"] = fileDiffClass{} }

func (fileDiffClass) params() map[string]paramSpec {
	return map[string]paramSpec{
		"path": {typ: "string", required: true},
		"base": {typ: "string"},
	}
}

func (fileDiffClass) config(raw yaml.RawMessage) (any, error) { return noConfig(raw) }

func (fileDiffClass) check(a Args, d *Definition) error {
	p, base := a.str("path"), a.str("base")
	clean := filepath.Clean(p)
	switch {
	case strings.TrimSpace(p) == "":
		return errors.New("path is empty")
	case strings.HasPrefix(p, "-"):
		return fmt.Errorf("path %q looks like a flag", p)
	case clean == "." || clean == "/":
		return fmt.Errorf("path %q names the whole tree; name the file or directory you changed", p)
	case !filepath.IsAbs(clean) && (clean == ".." || strings.HasPrefix(clean, "../")):
		return fmt.Errorf("path %q leaves the working directory", p)
	case base == "":
		return errors.New("base is empty")
	case strings.HasPrefix(base, "-"):
		return fmt.Errorf("base %q looks like a flag", base)
	case strings.ContainsAny(base, " \t\n") || strings.Contains(base, ".."):
		return fmt.Errorf("base %q: give one revision, not a range", base)
	}
	return nil
}

const gitTimeout = time.Minute

// gitFunc runs git with args in the working directory, its output
// captured as the artifacts prefix.stdout and prefix.stderr and also
// written to onStdout (may be nil).
type gitFunc func(prefix string, onStdout io.Writer, args ...string) (*proc, error)

// gitRunner finds git on the toolchain's PATH (recorded as a tool the
// run used) and returns a gitFunc that runs it in the harness's
// environment: no git variables of the caller, literal pathspecs,
// unquoted paths, no optional locks, no prompt.
func (x *execution) gitRunner(ctx context.Context) (gitFunc, error) {
	gitPath, err := x.tc.lookPath("git", x.cwd)
	if err != nil {
		return nil, err
	}
	x.useTool("git", &Tool{Path: gitPath, Source: "system"})
	env := append(x.tc.baseEnv(x.tmp), "HOME="+userHome(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
	return func(prefix string, onStdout io.Writer, args ...string) (*proc, error) {
		argv := append([]string{gitPath, "--literal-pathspecs", "-c", "core.quotePath=false"}, args...)
		return x.runProc(ctx, argv, env, gitTimeout, prefix, onStdout)
	}, nil
}

func (fileDiffClass) run(ctx context.Context, x *execution) (*outcome, error) {
	git, err := x.gitRunner(ctx)
	if err != nil {
		return nil, fmt.Errorf("file_diff_present: %w", err)
	}
	path, base := x.args.str("path"), x.args.str("base")
	out := &outcome{runs: 1}
	p, err := git("rev-parse", nil, "rev-parse", "--verify", "--quiet", base+"^{commit}")
	if err != nil {
		return nil, err
	}
	if p.exitCode != 0 {
		out.reason = fmt.Sprintf("base %q is not a commit here (or %s is not in a git repository): %s", base, x.cwd, x.firstLine("rev-parse.stderr"))
		return out, nil
	}
	hunks, binary := 0, 0
	lw := &lineWriter{fn: func(b []byte) {
		switch {
		case bytes.HasPrefix(b, []byte("@@")):
			hunks++
		case bytes.HasPrefix(b, []byte("Binary files ")):
			binary++
		}
	}}
	p, err = git("diff", lw, "diff", "--no-ext-diff", "--no-textconv", "--no-color", "-w", "--ignore-blank-lines", base, "--", path)
	if err != nil {
		return nil, err
	}
	lw.Flush()
	if p.exitCode != 0 {
		out.reason = fmt.Sprintf("git diff failed (%s): %s", p.describe(gitTimeout), x.firstLine("diff.stderr"))
		return out, nil
	}
	var untracked []string
	p, err = git("untracked", &lineWriter{fn: func(b []byte) { untracked = append(untracked, string(b)) }},
		"ls-files", "--others", "--exclude-standard", "--", path)
	if err != nil {
		return nil, err
	}
	if p.exitCode != 0 {
		out.reason = fmt.Sprintf("git ls-files failed (%s): %s", p.describe(gitTimeout), x.firstLine("untracked.stderr"))
		return out, nil
	}
	newFiles := 0
	for _, f := range untracked {
		if f != "" && hasContent(filepath.Join(x.cwd, f)) {
			newFiles++
		}
	}
	out.detail = map[string]any{"hunks": hunks, "binary_changes": binary, "new_files": newFiles}
	if hunks+binary+newFiles == 0 {
		out.reason = fmt.Sprintf("no change to %q versus %s beyond white space", path, base)
		return out, nil
	}
	out.pass = true
	return out, nil
}

// hasContent reports whether the file holds anything but white space
// (binary content counts).
func hasContent(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := f.Read(buf)
		if len(bytes.TrimSpace(buf[:n])) > 0 {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// firstLine returns the first line of a captured artifact, for reasons.
func (x *execution) firstLine(name string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(x.readArtifact(name)), "\n")
	return clip(line)
}

// readArtifact returns up to 64 KiB of a captured artifact.
func (x *execution) readArtifact(name string) string {
	f, err := os.Open(filepath.Join(x.tmp, x.prefix+name))
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	return string(b)
}
