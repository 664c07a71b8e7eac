package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/validators"
)

const validateUsage = `usage: docket validate --claim C --validator V --args JSON [--session S] [--cwd DIR] [--json]

Backs a claim with evidence. Checks that the claim binding policy allows
validator V for claim C with these arguments, runs the validator itself
(it never trusts a report of an earlier run), stores its outputs as
artifacts and appends a signed validator_pass entry (or validator_fail)
to the session's ledger. The Stop gate accepts the claim only with a
fresh validator_pass.

Claims: done, fixed, tests_pass, shipped, blocked, delegation.

Flags:
  --claim C          the claim type to back
  --validator V      a validator the policy allows for C
  --args JSON        the validator's arguments, a JSON object
  --args-file FILE   read the arguments from FILE ("-" for stdin) instead
  --session S        session to record in (default: the session the hooks
                     last saw in the working directory)
  --cwd DIR          working directory the validator runs in (default: .);
                     it must lie inside the session's project (the git
                     work tree the hooks first saw the session in)
  --json             print the result as JSON

Example:
  docket validate --claim tests_pass --validator go_test_pass \
      --args '{"package":"./...","required_runs":2}'

Validators run with the toolchains 'docket init' recorded (or the policy
names), a fixed PATH, GOENV=off, GOFLAGS= and GOTOOLCHAIN=local, never
the caller's PATH, go env file or GOFLAGS.

With --socket PATH (or DOCKET_SOCKET) the docket daemon on PATH runs the
validator as the caller's user and signs the result (sealed mode); --cwd
and --args-file are resolved here, by the caller. If the daemon does not
answer, nothing is recorded and validate exits 1.

Exit codes: 0 PASS (validator_pass appended), 2 FAIL (validator_fail
appended), 3 REFUSED (validator not allowed for the claim, unknown
validator, weak arguments, a command not on the allow list, or evidence
from outside the session's project; nothing appended), 1 could not run
(bad flags, no keys: run 'docket init', unreadable ledger or policy).
`

func init() {
	commands["validate"] = command{summary: "run a validator and record signed evidence for a claim", run: runValidate}
}

type validateFlags struct {
	session, claim, validator, args, argsFile, cwd string
	asJSON                                         bool
	argsSet                                        bool
}

// validateError is a validate usage problem: exit 1, because 2 and 3
// mean FAIL and REFUSED here.
func validateError(msg, hint string) error {
	if hint != "" {
		msg += "\nhint: " + hint
	}
	return exitCode(1, errors.New(msg))
}

func runValidate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if sock, rest, ok := hookclient.Socket(args, "session", "claim", "validator", "args", "args-file", "cwd"); ok {
		return validateViaSocket(sock, rest, stdin, stdout, stderr)
	}
	return validateLocal(ctx, args, stdin, stdout, stderr, nil)
}

// validateLocal validates in this process. peer is the caller when the
// daemon runs it for a thin client: the validator then runs as the
// caller's uid (validatorRunAs), never as the daemon's.
func validateLocal(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, peer *hookclient.Peer) error {
	var f validateFlags
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, validateUsage) }
	fs.StringVar(&f.session, "session", "", "")
	fs.StringVar(&f.claim, "claim", "", "")
	fs.StringVar(&f.validator, "validator", "", "")
	fs.StringVar(&f.args, "args", "", "")
	fs.StringVar(&f.argsFile, "args-file", "", "")
	fs.StringVar(&f.cwd, "cwd", "", "")
	fs.BoolVar(&f.asJSON, "json", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitCode(1, nil)
	}
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "args" {
			f.argsSet = true
		}
	})
	switch {
	case fs.NArg() > 0:
		return validateError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)), `quote the JSON as one argument: --args '{"package":"./...","required_runs":1}'`)
	case f.claim == "":
		return validateError("--claim is required", "one of: done, fixed, tests_pass, shipped, blocked, delegation")
	case f.validator == "":
		return validateError("--validator is required", "run 'docket validate -h'; the gate's block reason names the validators it accepts")
	case f.argsSet && f.argsFile != "":
		return validateError("--args and --args-file are mutually exclusive", "pass the JSON inline with --args or in a file with --args-file, not both")
	case !f.argsSet && f.argsFile == "":
		return validateError("--args is required", `pass the validator's arguments as a JSON object, e.g. --args '{"package":"./..."}'`)
	}
	rawArgs := []byte(f.args)
	if f.argsFile != "" {
		var r io.Reader = stdin
		if f.argsFile != "-" {
			file, err := os.Open(f.argsFile)
			if err != nil {
				return fmt.Errorf("read --args-file: %w", err)
			}
			defer file.Close()
			r = file
		}
		b, err := io.ReadAll(io.LimitReader(r, validators.MaxArgsSize+1))
		if err != nil {
			return fmt.Errorf("read --args-file: %w", err)
		}
		rawArgs = b
	}
	cwd, err := resolveCwd(f.cwd)
	if err != nil {
		return validateError(err.Error(), "--cwd must name an existing directory")
	}
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	session := f.session
	if session == "" {
		if session, err = defaultSession(h, cwd); err != nil {
			return err
		}
		if session == "" {
			return validateError("no --session given and the hooks have recorded no session for "+cwd,
				"pass --session S (the session id from the hook payload), or run this from the directory the agent works in")
		}
	}
	if !home.ValidSessionID(session) {
		return validateError(fmt.Sprintf("invalid session id %q", session), "session ids are 1-128 characters of [A-Za-z0-9._-]")
	}
	l, err := ledger.Open(h)
	if err != nil {
		return fmt.Errorf("run validator: %w", err)
	}
	// Only an approved policy may produce evidence: checked before and
	// after the runner loads it, so a definition swapped in for one run
	// and restored before the stop backs nothing.
	if err := policies.CheckApproval(h); err != nil {
		return fmt.Errorf("run validator: %w", err)
	}
	var vl validators.Ledger = l
	if peer != nil {
		vl = evidenceLedger{Ledger: l, peer: peer} // the caller, recorded in the validator's entry
	}
	r, err := validators.NewRunner(h, vl)
	if err != nil {
		return fmt.Errorf("run validator: %w", err)
	}
	if err := policies.CheckApproval(h); err != nil {
		return fmt.Errorf("run validator: %w", err)
	}
	if peer != nil {
		if r.RunAs, err = validatorRunAs(*peer); err != nil {
			return fmt.Errorf("run validator: %w", err)
		}
	}
	root, err := sessionProject(h, l, session)
	if err != nil {
		return fmt.Errorf("run validator: %w", err)
	}
	res, err := r.Run(ctx, validators.Request{Session: session, Claim: f.claim, Validator: f.validator, Args: rawArgs, Cwd: cwd, ProjectRoot: root})
	if err != nil {
		return err
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(stdout, resultLine(res))
	}
	switch res.Outcome {
	case validators.Pass:
		return nil
	case validators.Fail:
		return exitCode(2, nil)
	}
	if res.Hint != "" && !f.asJSON {
		fmt.Fprintln(stderr, "hint: "+res.Hint)
	}
	return exitCode(3, nil)
}

func resolveCwd(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve --cwd: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("--cwd %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("--cwd %s is not a directory", dir)
	}
	return abs, nil
}

// defaultSession is the session the hooks last saw in cwd, or in the
// process's working directory when --cwd points elsewhere.
func defaultSession(h home.Home, cwd string) (string, error) {
	s, err := h.SessionForDir(cwd)
	if err != nil || s != "" {
		return s, err
	}
	if wd, err := os.Getwd(); err == nil && filepath.Clean(wd) != cwd {
		return h.SessionForDir(wd)
	}
	return "", nil
}

// sessionProject is the project the session runs in: the project the
// hooks recorded when they first saw the session, else the git work tree
// of the working directory its first recorded tool call ran in, else of
// the process's working directory (a session no hook has seen yet).
func sessionProject(h home.Home, l *ledger.Ledger, session string) (string, error) {
	_, root, err := h.SessionDir(session)
	if err != nil || root != "" {
		return root, err
	}
	dir := ""
	if entries, err := l.ReadVerified(session); err == nil {
		for _, e := range entries {
			var b struct {
				Cwd string `json:"cwd"`
			}
			if (e.Kind == ledger.KindToolCall || e.Kind == ledger.KindToolFailure) && json.Unmarshal(e.Body, &b) == nil && filepath.IsAbs(b.Cwd) {
				dir = b.Cwd
				break
			}
		}
	}
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return "", fmt.Errorf("locate the session's project: %w", err)
		}
	}
	return policies.ProjectRoot(dir), nil
}

// resultLine is the one-line human result.
func resultLine(res *validators.Result) string {
	head := fmt.Sprintf("%s %s %s", strings.ToUpper(string(res.Outcome)), res.Claim, res.Validator)
	dur := (time.Duration(res.DurationMS) * time.Millisecond).Round(time.Millisecond)
	switch res.Outcome {
	case validators.Pass:
		what := fmt.Sprintf("%d run(s)", res.Runs)
		if res.TestsRun > 0 {
			what = fmt.Sprintf("%d test(s) ran, %d run(s), all passed", res.TestsRun, res.Runs)
		}
		return fmt.Sprintf("%s: %s in %v; validator_pass seq %d in session %s", head, what, dur, *res.Seq, res.Session)
	case validators.Fail:
		return fmt.Sprintf("%s: %s (%v); validator_fail seq %d in session %s", head, res.Reason, dur, *res.Seq, res.Session)
	}
	return fmt.Sprintf("%s: %s", head, res.Reason)
}
