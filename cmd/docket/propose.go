package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
)

const proposeUsage = `usage: docket propose --tool T (--args JSON | --args-digest D) [--authorization TEXT]
                      [--evidence REF]... [--consequence TEXT] [--rollback TEXT] [--session S]

The actor's side channel to the judge. States, before the call, who
authorized the next tool call and what evidence supports it. The
statement is bound to the next PreToolUse call with the same tool name
and arguments digest (canonical JSON SHA-256 of the tool input); a call
that does not match is recorded as unbound, two matching statements as
duplicate, and neither is applied. A statement can only add
authorization and evidence: the tool, arguments, risk class and binding
are always derived by the framework. Statements expire after 10 minutes.

Flags:
  --tool T            the tool name of the next call, e.g. Bash
  --args JSON         the next call's tool input; its digest is computed
  --args-digest D     or the digest itself, "sha256:<hex>"
  --authorization T   the user's authorization, quoted or summarized
  --evidence REF      a file, URL or ticket supporting the call (repeatable)
  --consequence T     what the call is expected to change
  --rollback T        how to undo it
  --session S         the session (default: the session the hooks last
                      saw in the working directory)

Example:
  docket propose --tool Bash --args '{"command":"git push origin main"}' \
      --authorization "user: 'ship it to main'" --evidence ci/run/4211

Exit codes: 0 stored (the digest is printed), 2 usage error, 1 could
not store (no session known, unwritable state root).
`

func init() {
	commands["propose"] = command{summary: "state authorization and evidence for the next tool call", run: runPropose}
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runPropose(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var (
		st       judge.Statement
		argsJSON string
		evidence multiFlag
	)
	fs := flag.NewFlagSet("propose", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, proposeUsage) }
	fs.StringVar(&st.Tool, "tool", "", "")
	fs.StringVar(&argsJSON, "args", "", "")
	fs.StringVar(&st.ArgsDigest, "args-digest", "", "")
	fs.StringVar(&st.Authorization, "authorization", "", "")
	fs.Var(&evidence, "evidence", "")
	fs.StringVar(&st.Consequence, "consequence", "", "")
	fs.StringVar(&st.Rollback, "rollback", "", "")
	fs.StringVar(&st.Session, "session", "", "")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return exitCode(2, nil)
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("unexpected argument %q", fs.Arg(0)), "quote the --args JSON as one shell word")
	}
	if st.Tool == "" {
		return usageError("--tool is required", "name the tool of the next call, e.g. --tool Bash")
	}
	if (argsJSON == "") == (st.ArgsDigest == "") {
		return usageError("give exactly one of --args and --args-digest", "--args '{\"command\":\"…\"}' computes the digest for you")
	}
	if argsJSON != "" {
		if !json.Valid([]byte(argsJSON)) || !strings.HasPrefix(strings.TrimSpace(argsJSON), "{") {
			return usageError("--args is not a JSON object", "pass the tool input exactly as the call will send it")
		}
		d, err := canonjson.Digest([]byte(argsJSON))
		if err != nil {
			return usageError("--args: "+err.Error(), "")
		}
		st.ArgsDigest = d
	}
	if st.Authorization == "" && len(evidence) == 0 {
		return usageError("nothing to state", "give --authorization and/or --evidence")
	}
	st.Evidence = evidence
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	if st.Session == "" {
		cwd, _ := os.Getwd()
		s, err := h.SessionForDir(cwd)
		if err != nil {
			return err
		}
		if s == "" {
			return exitCode(1, fmt.Errorf("no session known for %s\nhint: pass --session, or run this from inside the agent session", cwd))
		}
		st.Session = s
	}
	if _, err := judge.WriteStatement(h, st); err != nil {
		if strings.Contains(err.Error(), "digest") {
			return usageError(err.Error(), "--args-digest takes sha256:<64 hex>")
		}
		return err
	}
	fmt.Fprintln(stdout, st.ArgsDigest)
	return nil
}
