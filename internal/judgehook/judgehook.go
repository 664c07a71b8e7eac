// Package judgehook is docket-judge's work as a function: the binary
// runs it in-process, `docket serve --socket` runs it for a thin client.
package judgehook

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/internal/ledgerhook"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/ledger"
)

// Usage is docket-judge's usage text.
const Usage = `usage: docket-judge [-runtime claude] [-headless] [-no-store] [-socket PATH] < payload.json

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
  -socket PATH sealed mode: ask the docket daemon on PATH (also
               DOCKET_SOCKET); if it does not answer, side-effecting
               calls are denied

Environment: DOCKET_HOME (state root), DOCKET_HEADLESS=1, DOCKET_STORE_DSN
(store backend), DOCKET_JUDGE_TRACE=1 (phase timings on stderr),
DOCKET_SOCKET (sealed mode).

Exit codes:
  0  answered: one JSON object on stdout, or nothing for no opinion
  2  usage error, or a payload that cannot be read; Claude Code treats
     exit 2 as a block with stderr as the reason, so a broken hook fails
     closed
`

// Options are what differs between the binary and the daemon.
// Ledger records decisions and holds the keys that sign the trust
// files; *ledger.Ledger is one.
type Ledger interface {
	judge.Recorder
	Keys() *ledger.Keys
	ReadVerified(session string) ([]*ledger.Entry, error)
}

type Options struct {
	// Getenv reads the hook's environment (DOCKET_HEADLESS,
	// DOCKET_JUDGE_TRACE); nil means os.Getenv.
	Getenv func(string) string
	// Peer, when set, is recorded in the judge_decision entries.
	Peer *hookclient.Peer
	// Wire, when set, connects the engine's store instead of opening
	// the store under the state root; it returns a closer (may be nil).
	Wire func(e *judge.Engine) func()
	// LoadPolicySet and OpenLedger, when set, replace judge.LoadPolicySet
	// and ledger.Open (the daemon keeps both warm).
	LoadPolicySet func(h home.Home, delegatePaths ...string) (*judge.PolicySet, error)
	OpenLedger    func(h home.Home) (Ledger, error)
	// Interrupt, when set, derives the context of each wait that can be
	// long (judge.Engine.Interrupt; the hand-over to `docket judge-hook`
	// too). docket-judge cancels it on SIGINT; a routine call waits on
	// nothing and never sets up signal handling.
	Interrupt func(context.Context) (context.Context, context.CancelFunc)
	// Admit, when set, vets the decoded payload before the hook acts on
	// it (the daemon: a transcript the caller could not read); an error
	// fails the call.
	Admit func(*hooks.Event) error
	// Open, when set, opens the files the proposal names that the judge
	// reads (judge.Engine.Open; the daemon: it refuses a file the caller
	// could not read itself).
	Open func(path string) (*os.File, error)
}

type usageErr struct{ msg string }

func (e *usageErr) Error() string { return e.msg }

// Main runs one invocation and returns the process's exit code, writing
// exactly what docket-judge writes.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o Options) int {
	err := Run(ctx, args, stdin, stdout, stderr, o)
	if err != nil {
		var ue *usageErr
		if !errors.As(err, &ue) || ue.msg != "" {
			fmt.Fprintf(stderr, "docket-judge: error: %v\n", err)
		}
		return 2
	}
	return 0
}

// Run is docket-judge's work: parse, read the payload, judge, answer.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o Options) (err error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	fs := flag.NewFlagSet("docket-judge", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rt := fs.String("runtime", "", "")
	headless := fs.Bool("headless", false, "")
	noStore := fs.Bool("no-store", false, "")
	if err := fs.Parse(args); err != nil {
		fmt.Fprint(stderr, Usage)
		if errors.Is(err, flag.ErrHelp) {
			return &usageErr{}
		}
		return &usageErr{msg: err.Error() + "\nhint: docket-judge takes the payload on stdin, not as an argument"}
	}
	if fs.NArg() > 0 {
		fmt.Fprint(stderr, Usage)
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
	if o.Admit != nil {
		if err := o.Admit(ev); err != nil {
			return err
		}
	}
	if ev.Name != hooks.PreToolUse {
		fmt.Fprintf(stderr, "docket-judge: warning: %s is not a PreToolUse event; no answer\n", ev.Name)
		return nil
	}
	// From here on every failure is an answer: a hook never panics and
	// never fails open by accident.
	defer func() {
		if r := recover(); r != nil {
			err = Answer(stdout, ev.Runtime, hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny,
				Reason: fmt.Sprintf("docket-judge failed internally (%v); failing closed", r)})
		}
	}()
	a, warnings, delegate := decide(ctx, ev, *headless || getenv("DOCKET_HEADLESS") == "1", *noStore, getenv("DOCKET_JUDGE_TRACE") != "", o)
	if delegate {
		if o.Interrupt != nil {
			var release context.CancelFunc
			ctx, release = o.Interrupt(ctx)
			defer release()
		}
		return delegateToDocket(ctx, args, payload, ev.Runtime, stdout, stderr)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "docket-judge: warning: %s\n", w)
	}
	return Answer(stdout, ev.Runtime, a)
}

// Answer encodes a for the runtime and writes it (nothing for no opinion).
func Answer(stdout io.Writer, rt hooks.Runtime, a hooks.Answer) error {
	out, _, err := hooks.Encode(rt, a)
	if err != nil {
		return err
	}
	if len(out) > 0 {
		_, err = stdout.Write(out)
	}
	return err
}

// NewModelJudge builds the model judge a policy set configures and
// returns it with its closer. The docket binary sets it; docket-judge
// does not link the model client (net/http and its package
// initialisation, paid on every call) and hands a call whose policy
// configures a model to `docket judge-hook` instead (delegate.go).
var NewModelJudge func(set *judge.PolicySet, getenv func(string) string) (judge.JudgeBackend, func())

// decide loads the policies for the event's project, wires the engine
// and judges. Policy errors become the failure policy's default (block).
// It reports delegate, and judges nothing, when the policy configures a
// model judge and this process cannot build one.
func decide(ctx context.Context, ev *hooks.Event, headless, noStore, trace bool, o Options) (a hooks.Answer, warns []string, delegate bool) {
	h, err := home.Resolve()
	if err != nil {
		return hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny, Reason: "docket-judge: " + err.Error() + "; failing closed"}, nil, false
	}
	_ = h.RecordSessionForDir(ev.Cwd, ev.SessionID) // for `docket validate` without --session
	t0 := time.Now()
	root := judge.ProjectRoot(ev.Cwd)
	loadSet := judge.LoadPolicySet
	openLedger := func(h home.Home) (Ledger, error) { return ledger.Open(h) }
	if o.LoadPolicySet != nil {
		loadSet = o.LoadPolicySet
	}
	if o.OpenLedger != nil {
		openLedger = o.OpenLedger
	}
	set, err := loadSet(h, judge.DelegatePaths(root, ev.Cwd, ev.AgentType)...)
	if err != nil {
		return hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny,
			Reason: "docket-judge: policy invalid (" + err.Error() + "); failing closed until the policy is fixed"}, nil, false
	}
	tLoad := time.Since(t0)
	if p := set.Judges.Model.Provider; p != "" && p != "none" && NewModelJudge == nil {
		return hooks.Answer{}, nil, true
	}
	e := judge.NewEngine(h, set)
	e.Headless = headless
	e.Interrupt = o.Interrupt
	e.Open = o.Open
	var warnings []string
	if p := set.Judges.Model.Provider; p != "" && p != "none" {
		// the model's key is read from this process's environment: the
		// daemon's in sealed mode, never the caller's
		llm, closeLLM := NewModelJudge(set, os.Getenv)
		if closeLLM != nil {
			defer closeLLM()
		}
		e.LLM = llm
	}
	var led Ledger
	if l, err := openLedger(h); err == nil {
		e.Ledger, led = l, l
		// monitoring levels and the session's origin: two small MAC'd files
		e.Trust = judge.LoadTrust(h, l.Keys())
		if o.Peer != nil {
			e.Ledger = peerRecorder{l, o.Peer}
		}
	} else {
		warnings = append(warnings, "ledger unavailable, decision not recorded: "+err.Error())
	}
	if o.Wire != nil {
		if c := o.Wire(e); c != nil {
			defer c()
		}
	} else if l := wireStore(e, h, noStore); l != nil {
		defer l.close()
	}
	timeout := set.Judges.EscalationTimeout + set.Judges.ModelTimeout + 10*time.Second
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tSetup := time.Since(t0)
	var unhookedErr error // written by the bounded call, read only when it returned
	a, d, ok := decideBounded(ctx, boundGrace, func() (hooks.Answer, *judge.Decision) {
		// a Codex MCP call that failed ran no PostToolUse: its failure is
		// recorded before the next call is judged, inside the decision's
		// bound (best effort: a failure left out only makes the evidence
		// shorter)
		if led != nil {
			if calls := hooks.CodexUnhookedFailures(ev, o.Open); len(calls) > 0 {
				_, unhookedErr = ledgerhook.RecordUnhooked(ev, calls, unhookedRecorder{e.Ledger, led})
			}
		}
		return e.Decide(ctx, ev)
	})
	if !ok {
		return a, warnings, false
	}
	if unhookedErr != nil {
		warnings = append(warnings, "the failed MCP calls in the rollout were not recorded: "+unhookedErr.Error())
	}
	if trace {
		warnings = append(warnings, fmt.Sprintf("trace: policy load %s, setup %s, decide+record %s (judging %dµs), recall %q",
			tLoad, tSetup-tLoad, time.Since(t0)-tSetup, d.DurationMicros, d.Recall))
	}
	return a, append(warnings, d.Warnings...), false
}

// boundGrace is how long past its deadline a decision may take before
// decideBounded answers for it: the engine fails closed at the deadline
// itself when it waits on something that observes it (recall, the model
// judge, an approval), and the runtime's timeout, 5 s past the deadline
// (docket install), must not be reached.
const boundGrace = 2 * time.Second

// decideBounded runs decide and, when it has not returned by ctx's
// deadline plus grace, answers deny in its place (ok false): a read stuck
// in a system call (a hung network file system, a device) does not
// observe ctx, and a runtime lets a call through when its hook times out.
// The stuck decision is left behind; the process exits after answering.
func decideBounded(ctx context.Context, grace time.Duration, decide func() (hooks.Answer, *judge.Decision)) (hooks.Answer, *judge.Decision, bool) {
	type result struct {
		a hooks.Answer
		d *judge.Decision
	}
	done := make(chan result, 1)
	go func() {
		a, d := decide()
		done <- result{a, d}
	}()
	var limit <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		t := time.NewTimer(time.Until(deadline) + grace)
		defer t.Stop()
		limit = t.C
	}
	select {
	case r := <-done:
		return r.a, r.d, true
	case <-limit:
		return hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny,
			Reason: "docket-judge: no decision within its deadline (a read did not return); failing closed. If this repeats, a human should look at the files the call names."}, nil, false
	}
}

// unhookedRecorder appends through the judge's recorder (which adds the
// peer) and reads the ledger it wraps.
type unhookedRecorder struct {
	judge.Recorder
	l Ledger
}

func (u unhookedRecorder) ReadVerified(session string) ([]*ledger.Entry, error) {
	return u.l.ReadVerified(session)
}

// peerRecorder adds the caller's uid, gid and pid ("peer") to the body of
// each entry it appends.
type peerRecorder struct {
	l    judge.Recorder
	peer *hookclient.Peer
}

func (p peerRecorder) Append(session string, r ledger.Record) (*ledger.Entry, error) {
	r.Body = WithPeer(r.Body, p.peer)
	return p.l.Append(session, r)
}

// WithPeer returns body as a JSON object with a "peer" member added,
// replacing any it had. It is written after the body's members, so a
// "peer" the body had is the first of two keys, and the ledger's
// canonical encoding keeps the last (encoding/json's rule).
func WithPeer(body any, peer *hookclient.Peer) any {
	b, err := canonjson.Marshal(body)
	if err == nil && string(b) == "null" {
		b = []byte("{}") // nothing but the peer
	}
	if err != nil || len(b) < 2 || b[0] != '{' {
		return body
	}
	pb, err := json.Marshal(peer)
	if err != nil {
		return body
	}
	out := make([]byte, 0, len(b)+len(pb)+9)
	out = append(out, b[:len(b)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	out = append(append(append(out, `"peer":`...), pb...), '}')
	return json.RawMessage(out)
}
