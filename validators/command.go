package validators

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
)

// commandClass implements command_zero_exit and, with keywords set,
// command_must_match_objective_keywords.
//
// command_zero_exit {command, timeout, objective_keywords?}: runs the
// command (an argv list, or a string run with `/bin/sh -c`) in the
// working directory; PASS when it exits 0 within the timeout. Refused:
// an empty command; a command whose status is 0 whatever the work's
// state (see shell.go: true, :, echo, printf, test, exit 0, pipelines
// ending in tee or cat, `… || true`, `sh -c true`, backgrounded commands,
// --version/--help probes, git status/log/diff without --exit-code, …);
// shell the analysis cannot follow (if/for/subshells/here-documents/
// computed command names); a command that runs `go test` or pytest
// itself (they exit 0 when a filter matches no test: use go_test_pass or
// pytest_pass, which check that tests ran); objective keywords that the
// command's real (non-trivial) words do not mention.
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

// commandVerdict analyzes the command argument.
func commandVerdict(a Args) (verdict, string, error) {
	switch cmd := a["command"].(type) {
	case string:
		if strings.TrimSpace(cmd) == "" {
			return verdict{}, "", errors.New("command is empty")
		}
		v, err := analyzeScript(cmd)
		return v, cmd, err
	case []string:
		if len(cmd) == 0 || cmd[0] == "" {
			return verdict{}, "", errors.New("command is empty")
		}
		v, err := analyzeArgv(cmd)
		return v, strings.Join(cmd, " "), err
	}
	return verdict{}, "", errors.New("command is missing")
}

func (c commandClass) check(a Args, d *Definition) error {
	if a.dur("timeout") <= 0 {
		return errors.New("timeout must be positive")
	}
	v, text, err := commandVerdict(a)
	if err != nil {
		return fmt.Errorf("command %q: %w", clip(text), err)
	}
	if v.st == stOK || v.st == stPass {
		return fmt.Errorf("command %q always exits 0 (%s), so it proves nothing; run the check that would fail if the work were wrong", clip(text), v.why)
	}
	if v.runner != "" {
		dedicated := map[string]string{"go test": "go_test_pass", "pytest": "pytest_pass"}[v.runner]
		return fmt.Errorf("command %q runs %s directly, which exits 0 even when no test ran; use the %s validator, which checks that tests actually ran", clip(text), v.runner, dedicated)
	}
	kws, hasKw := a["objective_keywords"]
	if c.keywords || hasKw {
		list, _ := kws.([]string)
		if len(list) == 0 {
			return errors.New("objective_keywords is empty")
		}
		words := strings.ToLower(strings.Join(v.words, " "))
		for _, k := range list {
			k = strings.TrimSpace(k)
			if utf8.RuneCountInString(k) < 3 {
				return fmt.Errorf("objective keyword %q is shorter than 3 characters", k)
			}
			if !strings.Contains(words, strings.ToLower(k)) {
				return fmt.Errorf("command %q does not mention the objective keyword %q in a command that decides its status", clip(text), k)
			}
		}
	}
	return nil
}

func (commandClass) run(ctx context.Context, x *execution) (*outcome, error) {
	var argv []string
	switch cmd := x.args["command"].(type) {
	case string:
		argv = []string{"/bin/sh", "-c", cmd}
	case []string:
		argv = cmd
	}
	timeout := x.args.dur("timeout")
	p, err := x.runProc(ctx, argv, nil, timeout, "run1", nil)
	if err != nil {
		return nil, err
	}
	out := &outcome{runs: 1, detail: map[string]any{"exit_code": p.exitCode}}
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
