// Package gatehook is docket-gate's work as a function: the binary runs
// it in-process, `docket serve --socket` runs it for a thin client. It
// reads the agent's final message and blocks the stop when the message
// claims done, fixed, tests passing, shipped, blocked or a delegation that
// the session's ledger cannot back with fresh, signed validator evidence.
package gatehook

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/docket/docket/gate"
	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/ledgerhook"
)

// Version is set by the linker in docket-gate.
var Version = ""

// Usage is docket-gate's usage text.
const Usage = `usage: docket-gate [--runtime claude] [--timeout 30s] [--socket PATH]

Reads one Stop or SubagentStop payload on stdin. The final message is
last_assistant_message when the payload has it, else the last assistant
message of the transcript (agent_transcript_path for SubagentStop); the
turn's earlier assistant messages come from the transcript. After a block,
only what follows the blocked text is judged. Every claim in them (done,
fixed, tests_pass, shipped, blocked, delegation; lexicon
in $DOCKET_HOME/policies/claims.yaml) needs a validator_pass in the
session's verified ledger from a validator that
$DOCKET_HOME/policies/claim_binding.yaml allows for the claim, made inside
the project the session runs in (the payload's cwd, up to its .git), whose
recorded working-tree digest still matches the tree. With
--socket PATH (or DOCKET_SOCKET) the docket daemon on PATH decides (sealed
mode); if it does not answer within --timeout, the stop is blocked.

Exit codes:
  0  the answer is on stdout: nothing to allow the stop, or
     {"decision":"block","reason":"…"} naming each unsupported claim and the
     docket validate command that would back it. A payload, policy or
     ledger that cannot be read, a timeout or an internal error also
     blocks (fail closed) and is reported on stderr as docket: error: …
  2  usage error; nothing is decided
`

// Main runs one invocation and returns the exit code, writing exactly
// what docket-gate writes.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainWith(ctx, args, stdin, stdout, stderr, Options{})
}

// Options are what differs between the binary and the daemon.
type Options struct {
	// NewGate, when set, replaces gate.New (the daemon keeps the lexicon,
	// binding and ledger warm, and records the caller).
	NewGate func(h home.Home) (*gate.Gate, error)
	// Decided, when set, hears of every gate run that got as far as a
	// result (the daemon publishes the session's checkpoint).
	Decided func(ev *hooks.Event, r *gate.Result)
	// Admit, when set, vets the decoded payload before the gate reads
	// anything it names (the daemon: a transcript the caller could not
	// read); an error blocks, unchecked.
	Admit func(*hooks.Event) error
	// Open, when set, is the gate's opener for the files the payload
	// names (gate.Gate.Open; the daemon: it refuses a file the caller
	// could not read, checked on the file it opened).
	Open func(path string) (*os.File, error)
}

// MainWith is Main with options.
func MainWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o Options) int {
	err := RunWith(ctx, args, stdin, stdout, stderr, o)
	var ue UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "docket: error: %v\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "docket: error: %v\n", err)
	}
	return 0
}

// UsageError is a usage problem: nothing was written to stdout.
type UsageError struct{ error }

// Run answers one payload. A returned UsageError means nothing was
// written to stdout; any other error was already turned into a block
// answer on stdout and is returned for stderr only.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return RunWith(ctx, args, stdin, stdout, stderr, Options{})
}

// RunWith is Run with options.
func RunWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o Options) error {
	fs := flag.NewFlagSet("docket-gate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rt := fs.String("runtime", "", "runtime whose payload is on stdin (default: detect)")
	timeout := fs.Duration("timeout", 30*time.Second, "block if no decision within this time")
	showVersion := fs.Bool("version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		fmt.Fprint(stderr, Usage)
		return UsageError{err}
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, Usage)
		return UsageError{fmt.Errorf("unexpected argument %q\nhint: the payload goes on stdin", fs.Arg(0))}
	}
	if *showVersion {
		fmt.Fprintln(stderr, "docket-gate", buildVersion())
		return nil
	}
	if *timeout <= 0 {
		return UsageError{fmt.Errorf("--timeout must be positive")}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	type done struct {
		ans hooks.Answer
		rt  hooks.Runtime
		err error
	}
	ch := make(chan done, 1)
	go func() {
		var d done
		defer func() {
			if r := recover(); r != nil {
				d.ans = BlockAnswer(hooks.Stop, fmt.Sprintf("docket-gate: internal error (%v); the final message was not checked. Report this to a human.", r))
				d.err = fmt.Errorf("internal error: %v", r)
			}
			ch <- d
		}()
		d.ans, d.rt, d.err = decide(stdin, hooks.Runtime(*rt), o)
	}()
	var d done
	select {
	case d = <-ch:
	case <-ctx.Done():
		d.ans = BlockAnswer(hooks.Stop, fmt.Sprintf("docket-gate: no decision within %v; the final message was not checked. Stop again; if this repeats, a human should run `docket verify`.", *timeout))
		d.err = fmt.Errorf("timed out after %v", *timeout)
	}
	out, _, err := hooks.Encode(d.rt, d.ans)
	if err != nil {
		out, _, _ = hooks.EncodeClaude(BlockAnswer(hooks.Stop, "docket-gate: cannot encode its answer: "+err.Error()))
	}
	if _, werr := stdout.Write(out); werr != nil && d.err == nil {
		d.err = werr
	}
	return d.err
}

// decide reads the payload and runs the gate. Failures come back as a
// block answer plus the error.
func decide(stdin io.Reader, rt hooks.Runtime, o Options) (hooks.Answer, hooks.Runtime, error) {
	payload, err := hooks.ReadPayload(stdin)
	if err != nil {
		return BlockAnswer(hooks.Stop, "docket-gate: cannot read the hook payload: "+err.Error()), rt, err
	}
	ev, err := hooks.Decode(payload, rt)
	if err != nil {
		return BlockAnswer(hooks.Stop, "docket-gate: cannot decode the hook payload ("+err.Error()+"); the final message was not checked"), rt, err
	}
	if o.Admit != nil {
		if err := o.Admit(ev); err != nil {
			return BlockAnswer(hooks.Stop, "docket-gate: "+err.Error()+"; the final message was not checked"), ev.Runtime, err
		}
	}
	// A wiring error is named before any policy is loaded or state written.
	if !ev.IsStop() {
		err := fmt.Errorf("event %q is not Stop or SubagentStop: wire docket-gate to Stop and SubagentStop", ev.RawName)
		return BlockAnswer(hooks.Stop, "docket-gate: "+err.Error()), ev.Runtime, err
	}
	h, err := home.Resolve()
	if err != nil {
		return BlockAnswer(ev.Name, "docket-gate: "+err.Error()+"; the final message was not checked"), ev.Runtime, err
	}
	_ = h.RecordSessionForDir(ev.Cwd, ev.SessionID) // for `docket validate` without --session
	newGate := gate.New
	if o.NewGate != nil {
		newGate = o.NewGate
	}
	g, err := newGate(h)
	if err != nil {
		return BlockAnswer(ev.Name, "docket-gate: "+err.Error()+". A human must fix the policy file under $DOCKET_HOME/policies (or remove it to use the default)."), ev.Runtime, err
	}
	if o.Open != nil {
		gg := *g // this call's own copy: NewGate may hand out a shared one
		gg.Open = o.Open
		g = &gg
	}
	recordUnhooked(ev, g)
	res := g.Stop(ev)
	if o.Decided != nil {
		o.Decided(ev, res)
	}
	if res.Outcome == gate.Fail {
		return res.Answer, ev.Runtime, res.Err
	}
	return res.Answer, ev.Runtime, nil
}

// recordUnhooked records the MCP calls of a Codex session that failed
// after its last PostToolUse (ledgerhook.RecordUnhooked), so a session
// whose last call failed ends with it in the ledger. Best effort: the
// gate's answer does not depend on it.
func recordUnhooked(ev *hooks.Event, g *gate.Gate) {
	calls := hooks.CodexUnhookedFailures(ev, g.Open)
	if len(calls) == 0 {
		return
	}
	if l, err := g.OpenLedger(); err == nil {
		ledgerhook.RecordUnhooked(ev, calls, l)
	}
}

// BlockAnswer blocks the stop (event Stop or SubagentStop) with reason.
func BlockAnswer(event, reason string) hooks.Answer {
	if event != hooks.SubagentStop {
		event = hooks.Stop
	}
	return hooks.Answer{Event: event, Decision: hooks.Block, Reason: reason}
}

func buildVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
