// Command docket-judge is docket's PreToolUse hook: it reads one PreToolUse
// payload on stdin, judges the proposed tool call (allow, block, revise or
// escalate) and prints the runtime's answer on stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/ledger"
)

const usage = `usage: docket-judge [-runtime claude] [-headless] [-no-store] < payload.json

Reads one PreToolUse hook payload on stdin and answers on stdout:
  allow     nothing (the user's own permission rules apply), or
            permissionDecision "allow" where policy auto-approves
  block     permissionDecision "deny" with the reason
  revise    updatedInput when the amendment is mechanical, else "deny"
            naming the required revision
  escalate  "ask" in interactive sessions; in headless sessions an
            approval item the hook waits on, denying on expiry

Policies: $DOCKET_HOME/policies/{tools.yaml,judges.md} (else the embedded
defaults), tightened by .docket/judges.md files in the project.

Flags:
  -runtime R   the runtime whose payload this is (default: detect; claude)
  -headless    treat the session as headless (also DOCKET_HEADLESS=1)
  -no-store    do not open the recall store

Environment: DOCKET_HOME (state root), DOCKET_HEADLESS=1, DOCKET_STORE_DSN
(store backend), DOCKET_JUDGE_TRACE=1 (phase timings on stderr).

Exit codes:
  0  answered: one JSON object on stdout, or nothing for no opinion
  2  usage error, or a payload that cannot be read; Claude Code treats
     exit 2 as a block with stderr as the reason, so a broken hook fails
     closed
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ue *usageErr
		if !errors.As(err, &ue) || ue.msg != "" {
			fmt.Fprintf(os.Stderr, "docket-judge: error: %v\n", err)
		}
		os.Exit(2)
	}
}

type usageErr struct{ msg string }

func (e *usageErr) Error() string { return e.msg }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("docket-judge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rt := fs.String("runtime", "", "")
	headless := fs.Bool("headless", false, "")
	noStore := fs.Bool("no-store", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprint(stderr, usage)
		if errors.Is(err, flag.ErrHelp) {
			return &usageErr{}
		}
		return &usageErr{msg: err.Error() + "\nhint: docket-judge takes the payload on stdin, not as an argument"}
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, usage)
		return &usageErr{msg: fmt.Sprintf("unexpected argument %q\nhint: pipe the payload on stdin", fs.Arg(0))}
	}
	payload, err := hooks.ReadPayload(stdin)
	if err != nil {
		return err
	}
	ev, err := hooks.Decode(payload, hooks.Runtime(*rt))
	if err != nil {
		return err
	}
	if ev.Name != hooks.PreToolUse {
		fmt.Fprintf(stderr, "docket-judge: warning: %s is not a PreToolUse event; no answer\n", ev.Name)
		return nil
	}
	// From here on every failure is an answer: a hook never panics and
	// never fails open by accident.
	defer func() {
		if r := recover(); r != nil {
			err = answer(stdout, ev.Runtime, hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny,
				Reason: fmt.Sprintf("docket-judge failed internally (%v); failing closed", r)})
		}
	}()
	a, warnings := decide(ctx, ev, *headless || os.Getenv("DOCKET_HEADLESS") == "1", *noStore)
	for _, w := range warnings {
		fmt.Fprintf(stderr, "docket-judge: warning: %s\n", w)
	}
	return answer(stdout, ev.Runtime, a)
}

func answer(stdout io.Writer, rt hooks.Runtime, a hooks.Answer) error {
	out, _, err := hooks.Encode(rt, a)
	if err != nil {
		return err
	}
	if len(out) > 0 {
		_, err = stdout.Write(out)
	}
	return err
}

// decide loads the policies for the event's project, wires the engine
// and judges. Policy errors become the failure policy's default (block).
func decide(ctx context.Context, ev *hooks.Event, headless, noStore bool) (hooks.Answer, []string) {
	h, err := home.Resolve()
	if err != nil {
		return hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny, Reason: "docket-judge: " + err.Error() + "; failing closed"}, nil
	}
	_ = h.RecordSessionForDir(ev.Cwd, ev.SessionID) // for `docket validate` without --session
	trace := os.Getenv("DOCKET_JUDGE_TRACE") != ""
	t0 := time.Now()
	root := judge.ProjectRoot(ev.Cwd)
	set, err := judge.LoadPolicySet(h, judge.DelegatePaths(root, ev.Cwd, ev.AgentType)...)
	if err != nil {
		return hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny,
			Reason: "docket-judge: policy invalid (" + err.Error() + "); failing closed until the policy is fixed"}, nil
	}
	tLoad := time.Since(t0)
	e := judge.NewEngine(h, set)
	e.Headless = headless
	var warnings []string
	if set.Judges.Model.Provider != "" && set.Judges.Model.Provider != "none" {
		llm := judge.NewLLMJudge(judge.LLMConfigFrom(set, os.Getenv))
		defer llm.Close()
		e.LLM = llm
	}
	if l, err := ledger.Open(h); err == nil {
		e.Ledger = l
	} else {
		warnings = append(warnings, "ledger unavailable, decision not recorded: "+err.Error())
	}
	if l := wireStore(e, h, noStore); l != nil {
		defer l.close()
	}
	timeout := set.Judges.EscalationTimeout + set.Judges.ModelTimeout + 10*time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tSetup := time.Since(t0)
	a, d := e.Decide(ctx, ev)
	if trace {
		warnings = append(warnings, fmt.Sprintf("trace: policy load %s, setup %s, decide+record %s (judging %dµs), recall %q",
			tLoad, tSetup-tLoad, time.Since(t0)-tSetup, d.DurationMicros, d.Recall))
	}
	return a, append(warnings, d.Warnings...)
}
