package validators

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/docket/docket/policies"
)

// refusal is a prepare-time finding that refuses the request (exit 3,
// nothing appended), as opposed to an error (could not run).
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refusef(format string, a ...any) error { return &refusal{msg: fmt.Sprintf(format, a...)} }

// preparer is implemented by classes that inspect the project before
// running (with the toolchain, not the agent's tools): a request the
// inspection rules out is refused, and what it found is kept in x.state.
type preparer interface {
	prepare(ctx context.Context, x *execution) error
}

// checkProject resolves the session's project root and refuses a
// working directory outside it. It updates req.Cwd to its real path.
func (r *Runner) checkProject(req *Request, res *Result) (string, *Result) {
	cwd := req.Cwd
	if real, err := filepath.EvalSymlinks(cwd); err == nil {
		cwd = real
	}
	root := req.ProjectRoot
	if root == "" {
		root = policies.ProjectRoot(cwd)
	} else if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	if !within(root, cwd) {
		res.Outcome = Refused
		res.Reason = fmt.Sprintf("working directory %s is outside the session's project %s: evidence must come from the project the session works in", cwd, root)
		res.Hint = "run docket validate from the project (or pass --cwd inside it)"
		return "", res
	}
	req.Cwd, req.ProjectRoot = cwd, root
	return root, nil
}

// within reports whether path is dir or inside it (both clean, absolute).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// execution builds one run's context.
func (r *Runner) execution(req Request, def *Definition, args Args, rule policies.ValidatorRule, root, tmp, prefix string) *execution {
	arts := []string{}
	return &execution{args: args, def: def, cwd: req.Cwd, session: req.Session, ledger: r.Ledger, binding: r.Binding,
		tmp: tmp, arts: &arts, claim: req.Claim, rule: rule, root: root, tc: r.Toolchain, prefix: prefix, runAs: r.RunAs}
}

// prepareAndRun runs the class's prepare (when it has one), then the
// class. refused is non-empty when prepare refused the request.
func (x *execution) prepareAndRun(ctx context.Context) (*outcome, string, error) {
	if err := os.MkdirAll(filepath.Join(x.tmp, "home"), 0o700); err != nil {
		return nil, "", err
	}
	if p, ok := x.def.cls.(preparer); ok {
		if err := p.prepare(ctx, x); err != nil {
			var rf *refusal
			if errors.As(err, &rf) {
				return nil, rf.msg, nil
			}
			return nil, "", err
		}
	}
	out, err := x.def.cls.run(ctx, x)
	return out, "", err
}

// useTool notes that the run used a toolchain, for the pass body.
func (x *execution) useTool(name string, t *Tool) {
	if x.tools == nil {
		x.tools = map[string]*Tool{}
	}
	x.tools[name] = t
}

func (x *execution) toolRecords() map[string]any {
	out := map[string]any{}
	for n, t := range x.tools {
		out[n] = t.record()
	}
	return out
}

// runCompanion runs the test-class validator a rule's "with" requires,
// after the main validator passed, in the same validation: the first
// one listed that fits the project, with the binding's example for the
// project. The pass stands only if the companion passes too.
func (r *Runner) runCompanion(ctx context.Context, req Request, x *execution, main *outcome) (*outcome, string, error) {
	var pick *policies.ValidatorRule
	fitted := r.Binding.ForProject(x.root).Validators(req.Claim)
	for _, name := range x.rule.With {
		for i := range fitted {
			if fitted[i].Name == name && len(fitted[i].With) == 0 {
				pick = &fitted[i]
				break
			}
		}
		if pick != nil {
			break
		}
	}
	if pick == nil {
		return nil, fmt.Sprintf("%s cannot back %s alone, and none of %s fits the project %s (no go.mod, no Python tests, no allowed command that fits)",
			req.Validator, req.Claim, strings.Join(x.rule.With, ", "), x.root), nil
	}
	sub := req
	sub.Validator, sub.Args = pick.Name, json.RawMessage(pick.Example)
	var subRes Result
	def, args, rule, refused := r.check(sub, &subRes)
	if refused != nil {
		return nil, fmt.Sprintf("%s cannot back %s alone, and its companion %s was refused: %s", req.Validator, req.Claim, pick.Name, refused.Reason), nil
	}
	y := r.execution(sub, def, args, rule, x.root, x.tmp, "with-"+pick.Name+".")
	y.arts = x.arts
	out, refusedMsg, err := y.prepareAndRun(ctx)
	if err != nil || refusedMsg != "" {
		if refusedMsg != "" {
			refusedMsg = fmt.Sprintf("%s cannot back %s alone, and its companion %s was refused: %s", req.Validator, req.Claim, pick.Name, refusedMsg)
		}
		return nil, refusedMsg, err
	}
	for n, t := range y.tools {
		x.useTool(n, t)
	}
	main.with = map[string]any{"validator": pick.Name, "args": jsonArgs(args), "cwd": y.cwd,
		"result": map[bool]string{true: "pass", false: "fail"}[out.pass], "runs": out.runs, "tests_run": out.testsRun}
	if out.reason != "" {
		main.with["reason"] = out.reason
	}
	if !out.pass {
		main.pass = false
		main.reason = fmt.Sprintf("%s passed, but its companion %s failed: %s", req.Validator, pick.Name, out.reason)
		return main, "", nil
	}
	return main, "", nil
}
