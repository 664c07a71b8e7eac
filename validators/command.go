package validators

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
)

// commandClass implements command_zero_exit and, with keywords set,
// command_must_match_objective_keywords.
//
// command_zero_exit {command, timeout, objective_keywords?}: runs the
// command in the working directory, as an argv (a string is split at
// white space; no shell), with the harness's environment (fixed PATH,
// GOENV=off, GOFLAGS=, GOTOOLCHAIN=local, a private TMPDIR); PASS when it
// exits 0 within the timeout. The command must be on the claim binding's
// allow list for the claim and the project (e.g. make test, npm test,
// cargo test): a command whose status says nothing about
// the work (expr 1, python3 -c 0, go vet, git rev-parse HEAD) cannot be
// listed by accident, because nothing is allowed unless a human listed
// it. In a git repository what the command runs is held to HEAD
// (cmdBase): a makefile or package.json script changed since, a test
// file gone, or a skip added to one, fails the run; so does a git
// ls-remote whose remote is this machine (localRemote). Refused: an
// empty command, a command not on the list, objective keywords the
// command's words do not mention.
//
// command_must_match_objective_keywords is the same class with
// objective_keywords required: it composes with command_zero_exit by
// being command_zero_exit plus the keyword check, so one run yields both
// properties. A policy can also demand keywords of command_zero_exit
// itself with min_args {objective_keywords: true}.
type commandClass struct {
	keywords bool // objective_keywords required
}

func init() {
	classes["command_zero_exit"] = commandClass{}
	classes["command_must_match_objective_keywords"] = commandClass{keywords: true}
}

func (c commandClass) params() map[string]paramSpec {
	return map[string]paramSpec{
		"command":            {typ: "command", required: true},
		"timeout":            {typ: "duration"},
		"objective_keywords": {typ: "strings", required: c.keywords},
	}
}

func (commandClass) config(raw yaml.RawMessage) (any, error) { return noConfig(raw) }

// commandArgv returns the command argument as an argv: a list as is, a
// string split at white space.
func commandArgv(a Args) ([]string, error) {
	var argv []string
	switch cmd := a["command"].(type) {
	case string:
		argv = strings.Fields(cmd)
	case []string:
		argv = cmd
	default:
		return nil, errors.New("command is missing")
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("command is empty")
	}
	return argv, nil
}

func (c commandClass) check(a Args, d *Definition) error {
	if a.dur("timeout") <= 0 {
		return errors.New("timeout must be positive")
	}
	argv, err := commandArgv(a)
	if err != nil {
		return err
	}
	text := strings.Join(argv, " ")
	kws, hasKw := a["objective_keywords"]
	if c.keywords || hasKw {
		list, _ := kws.([]string)
		if len(list) == 0 {
			return errors.New("objective_keywords is empty")
		}
		words := strings.ToLower(text)
		for _, k := range list {
			k = strings.TrimSpace(k)
			if utf8.RuneCountInString(k) < 3 {
				return fmt.Errorf("objective keyword %q is shorter than 3 characters", k)
			}
			if !strings.Contains(words, strings.ToLower(k)) {
				return fmt.Errorf("command %q does not mention the objective keyword %q", clip(text), k)
			}
		}
	}
	return nil
}

// checkAllowed refuses a command that is not on the allow list.
func checkAllowed(a Args, allowed []string, claim string) error {
	argv, err := commandArgv(a)
	if err != nil {
		return err
	}
	text := strings.Join(argv, " ")
	for _, c := range allowed {
		if sameArgv(argv, strings.Fields(c)) {
			return nil
		}
	}
	if len(allowed) == 0 {
		return fmt.Errorf("command %q: the claim binding policy allows no command for %s in this project; a human adds one to its commands list", clip(text), claim)
	}
	return fmt.Errorf("command %q is not on the claim binding policy's allow list for %s in this project (allowed: %s); a command's exit status proves something only if a human chose it", clip(text), claim, strings.Join(allowed, "; "))
}

// sameArgv compares word by word: ["make", "-C sub", "test"] joins to
// the listed "make -C sub test" but hands make the directory " sub".
func sameArgv(argv, want []string) bool {
	if len(argv) != len(want) {
		return false
	}
	for i := range argv {
		if argv[i] != want[i] {
			return false
		}
	}
	return true
}

func (commandClass) run(ctx context.Context, x *execution) (*outcome, error) {
	argv, err := commandArgv(x.args)
	if err != nil {
		return nil, err
	}
	base, err := x.cmdBaseOf(ctx, argv)
	if err != nil {
		return nil, err
	}
	if base != nil {
		out := &outcome{detail: map[string]any{"base": base.commit}}
		switch {
		case len(base.removed) > 0:
			return out.goneSinceBase("removed_since_base", "test file(s) HEAD has", base.removed), nil
		case len(base.skips) > 0:
			out.detail["skips_since_base"] = clipList(base.skips, 20)
			out.reason = fmt.Sprintf("%d line(s) added to test files since HEAD skip or narrow tests: %s. A test that does not run proves nothing: make it run (a skip meant to stay is committed first)", len(base.skips), clipNames(base.skips))
			return out, nil
		case len(base.changed) > 0:
			return out.changedSinceBase("definition_changed_since_base", base.changed,
				fmt.Sprintf("it says what %q runs", strings.Join(argv, " "))), nil
		}
	}
	if why, err := x.localRemote(ctx, argv); err != nil || why != "" {
		if err != nil {
			return nil, err
		}
		return failf("%s", why), nil
	}
	path, err := x.tc.lookPath(argv[0], x.cwd)
	if err != nil {
		return failf("command not found: %v", err), nil
	}
	argv = append([]string{path}, argv[1:]...)
	timeout := x.args.dur("timeout")
	// The go settings too, so a `make test` that runs go is as hermetic
	// as go_test_pass; HOME stays the user's (npm, cargo and rustup find
	// their toolchains there).
	env := append(x.goEnv(), "HOME="+userHome())
	p, err := x.runProc(ctx, argv, env, timeout, "run1", nil)
	if err != nil {
		return nil, err
	}
	out := &outcome{runs: 1, detail: map[string]any{"exit_code": p.exitCode, "path": path}}
	if base != nil {
		out.detail["base"] = base.commit
	}
	if p.exitCode != 0 || p.timedOut {
		out.reason = "command failed: " + p.describe(timeout)
		return out, nil
	}
	out.pass = true
	return out, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// userHome is the user's home directory: command validators keep it
// (npm, cargo and rustup find their toolchains and caches there).
func userHome() string {
	if h, err := os.UserHomeDir(); err == nil {
		return h
	}
	return "/"
}

// localRemote refuses `git ls-remote REMOTE …` (what shipped is backed
// by) when REMOTE resolves, with every url.*.insteadOf rewrite git
// applies, to a repository on this machine or to a command (a path, a
// file:// URL, a transport::address form such as ext::): a remote the
// agent points at a repository of its own has the ref without anything
// being shipped. Its reason, or "" for any other command.
func (x *execution) localRemote(ctx context.Context, argv []string) (string, error) {
	if path.Base(argv[0]) != "git" || len(argv) < 3 || argv[1] != "ls-remote" {
		return "", nil
	}
	remote := ""
	for _, a := range argv[2:] {
		if !strings.HasPrefix(a, "-") {
			remote = a
			break
		}
	}
	if remote == "" {
		return "", nil
	}
	git, err := x.gitRunner(ctx)
	if err != nil {
		return "", nil // the command itself will say git is missing
	}
	var out bytes.Buffer
	p, err := git("remote-url", &out, "ls-remote", "--get-url", remote)
	if err != nil {
		return "", err
	}
	url := strings.TrimSpace(out.String())
	if p.exitCode != 0 || url == "" {
		return "", nil // the command itself will fail
	}
	scheme, _, hasScheme := strings.Cut(url, "://")
	switch {
	case strings.Contains(url, "::"):
		return fmt.Sprintf("remote %s resolves to %q, a remote helper's address: it can answer anything", remote, url), nil
	case hasScheme && scheme == "file", !hasScheme && !strings.Contains(url, ":"), filepath.IsAbs(url):
		return fmt.Sprintf("remote %s resolves to %q, a repository on this machine: its refs say nothing of what was shipped", remote, url), nil
	}
	return "", nil
}
