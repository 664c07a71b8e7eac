// Package gate is docket's Stop gate: it reads the agent's final message
// (from the hook payload, or backwards from the transcript), finds every
// claim in it with the claim lexicon, and allows the stop only when the
// session's verified ledger holds a fresh validator_pass, from a validator
// the claim binding allows, for each claimed type. Fresh means made in
// the session's project on the working tree as it is now: the pass's
// recorded tree digest (internal/worktree) equals the tree's digest at
// the stop. Every decision on a
// message with claims is itself a gate_decision ledger entry.
package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

// Gate decides Stop and SubagentStop events.
type Gate struct {
	Home    home.Home
	Lexicon *policies.Claims
	Binding Binding
	// OpenLedger opens the evidence store; called only for messages with
	// claims, so a state root without keys does not block claim-free
	// stops. Its error (e.g. ledger.ErrNoKey) blocks.
	OpenLedger func() (Evidence, error)
	// LexiconVersion and BindingVersion go into gate_decision entries.
	LexiconVersion string
	BindingVersion string
}

// Outcome is what the gate decided, for callers and tests.
type Outcome string

const (
	Allow   Outcome = "allow"   // no claims, or every claim supported
	Block   Outcome = "block"   // unsupported claims or an extraction anomaly
	Release Outcome = "release" // unsupported, but the block cap was reached
	Fail    Outcome = "fail"    // the evidence could not be read: blocked
)

// Result is one gate run: the answer for the runtime and what led to it.
type Result struct {
	Outcome  Outcome
	Answer   hooks.Answer
	Claims   []Claim
	Decision Decision
	// Source is "stdin" or "transcript"; Anomaly is set when the message
	// could not be read.
	Source  string
	Anomaly string
	// Entry is the gate_decision appended, if any.
	Entry *ledger.Entry
	// Err is why evidence could not be used (Outcome Fail).
	Err error
}

// Stop decides one Stop or SubagentStop event. It never returns an error:
// every failure becomes a block whose reason says what is wrong.
func (g *Gate) Stop(ev *hooks.Event) *Result {
	r := &Result{}
	block := func(outcome Outcome, reason, sys string) *Result {
		r.Outcome = outcome
		r.Answer = hooks.Answer{Event: ev.Name, Decision: hooks.Block, Reason: capReason(reason), SystemMessage: sys}
		return r
	}
	if !ev.IsStop() {
		r.Err = fmt.Errorf("event %q is not Stop or SubagentStop", ev.Name)
		return block(Fail, fmt.Sprintf("docket-gate: event %q is not Stop or SubagentStop; wire docket-gate to Stop and SubagentStop only", ev.Name), "")
	}
	if !home.ValidSessionID(ev.SessionID) {
		r.Err = fmt.Errorf("malformed session id %q", truncate(ev.SessionID, 80))
		return block(Fail, fmt.Sprintf("docket-gate: session id %q cannot name a ledger; the final message was not checked", truncate(ev.SessionID, 80)), "docket: the stop gate received a malformed session id")
	}

	text, source, anomaly := g.message(ev)
	r.Source = source
	if anomaly != "" {
		r.Anomaly = anomaly
		return g.anomaly(ev, r, anomaly)
	}
	r.Claims = Extract(text, g.Lexicon)
	if len(r.Claims) == 0 {
		g.resetBlocks(ev)
		r.Outcome, r.Answer = Allow, hooks.Answer{Event: ev.Name}
		return r
	}

	l, err := g.OpenLedger()
	if err != nil {
		r.Err = fmt.Errorf("open ledger: %w", err)
		return block(Fail, failReason(ev.SessionID, err), "docket: stop gate cannot read evidence: "+oneLine(err.Error()))
	}
	entries, err := l.ReadVerified(ev.SessionID)
	if err != nil {
		r.Err = fmt.Errorf("read ledger: %w", err)
		return block(Fail, failReason(ev.SessionID, err), "docket: stop gate cannot read evidence: "+oneLine(err.Error()))
	}
	r.Decision = g.decide(ev, l, r.Claims, entries)

	msgSum := sha256.Sum256([]byte(text))
	body := func(decision string, blocks int) map[string]any {
		return map[string]any{
			"decision":           decision,
			"claims":             verdictBodies(r.Decision),
			"message_source":     source,
			"message_sha256":     hex.EncodeToString(msgSum[:]),
			"stop_hook_active":   ev.StopHookActive,
			"consecutive_blocks": blocks,
			"lexicon_version":    g.LexiconVersion,
			"binding_version":    g.BindingVersion,
		}
	}
	rec := func(b map[string]any) ledger.Record {
		return ledger.Record{Kind: ledger.KindGateDecision, Runtime: string(ev.Runtime), Event: ev.Name, AgentID: ev.AgentID, Body: b}
	}

	if r.Decision.Allowed() {
		e, err := l.Append(ev.SessionID, rec(body("allow", 0)))
		if err != nil {
			r.Err = fmt.Errorf("record gate decision: %w", err)
			return block(Fail, failReason(ev.SessionID, r.Err), "docket: stop gate cannot record its decision")
		}
		g.resetBlocks(ev)
		r.Entry = e
		r.Outcome, r.Answer = Allow, hooks.Answer{Event: ev.Name}
		return r
	}

	prev := g.blocks(ev)
	if prev >= g.Lexicon.BlockCap {
		e, err := l.Append(ev.SessionID, rec(body("release", prev)))
		g.resetBlocks(ev)
		r.Entry = e
		sys := fmt.Sprintf("docket: let the stop through after %d consecutive blocks; these claims are UNSUPPORTED by evidence: %s", prev, claimList(r.Decision.Unsupported()))
		if err != nil {
			sys += " (and the release could not be recorded: " + oneLine(err.Error()) + ")"
		}
		r.Outcome, r.Answer = Release, hooks.Answer{Event: ev.Name, SystemMessage: capReason(sys)}
		return r
	}
	e, err := l.Append(ev.SessionID, rec(body("block", prev+1)))
	r.Entry = e
	g.setBlocks(ev, prev+1)
	reason := blockReason(ev.SessionID, r.Decision)
	if err != nil {
		reason += "\n(docket could not record this decision: " + oneLine(err.Error()) + ")"
	}
	return block(Block, reason, "")
}

// message finds the final message: stdin first, else the transcript.
// anomaly is non-empty when it could not be read.
func (g *Gate) message(ev *hooks.Event) (text, source, anomaly string) {
	if ev.HasLastAssistantMessage && strings.TrimSpace(ev.LastAssistantMessage) != "" {
		return ev.LastAssistantMessage, "stdin", ""
	}
	path, chain := ev.TranscriptPath, MainChain
	if ev.Name == hooks.SubagentStop {
		chain = Sidechain
		if ev.AgentTranscriptPath != "" {
			path = ev.AgentTranscriptPath
		}
	}
	if path == "" {
		return "", "transcript", "the payload has neither last_assistant_message nor a transcript path"
	}
	m, err := ReadLastAssistant(path, chain)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "transcript", fmt.Sprintf("transcript %s does not exist", path)
	case errors.Is(err, ErrScanLimit):
		return "", "transcript", fmt.Sprintf("no assistant text in the last %d bytes of transcript %s", m.Scanned, path)
	case err != nil:
		return "", "transcript", fmt.Sprintf("cannot read transcript: %v", err)
	}
	if m.Text == "" && m.Size >= g.Lexicon.AnomalyMinBytes {
		return "", "transcript", fmt.Sprintf("no assistant text found in %d-byte transcript %s (%d lines read, %d oversized lines skipped)", m.Size, path, m.Lines, m.Skipped)
	}
	return m.Text, "transcript", ""
}

// anomaly blocks a stop whose message could not be read, counting toward
// the block cap like any block.
func (g *Gate) anomaly(ev *hooks.Event, r *Result, what string) *Result {
	prev := g.blocks(ev)
	var l Evidence
	if g.OpenLedger != nil {
		l, _ = g.OpenLedger()
	}
	record := func(decision string, n int) *ledger.Entry {
		if l == nil {
			return nil
		}
		e, _ := l.Append(ev.SessionID, ledger.Record{Kind: ledger.KindGateDecision, Runtime: string(ev.Runtime), Event: ev.Name, AgentID: ev.AgentID,
			Body: map[string]any{"decision": decision, "anomaly": what, "stop_hook_active": ev.StopHookActive, "consecutive_blocks": n,
				"lexicon_version": g.LexiconVersion, "binding_version": g.BindingVersion}})
		return e
	}
	if prev >= g.Lexicon.BlockCap {
		r.Entry = record("release", prev)
		g.resetBlocks(ev)
		r.Outcome = Release
		r.Answer = hooks.Answer{Event: ev.Name, SystemMessage: capReason(fmt.Sprintf("docket: let the stop through after %d consecutive blocks, but the final message was never checked: %s", prev, what))}
		return r
	}
	r.Entry = record("block", prev+1)
	g.setBlocks(ev, prev+1)
	r.Outcome = Block
	r.Answer = hooks.Answer{Event: ev.Name, Decision: hooks.Block, Reason: capReason(
		"docket: extraction anomaly: " + what + ". The gate could not read your final message, so it cannot let it through unchecked. " +
			"Restate your final message; make no claim of done, fixed, tests passing, shipped, blocked or a request for something you cannot get, unless the ledger holds fresh validator evidence for it.")}
	return r
}

// failReason explains a failure to read or write evidence and how to fix it.
func failReason(session string, err error) string {
	var ve *ledger.VerifyError
	var b strings.Builder
	b.WriteString("docket: the stop gate blocked because it cannot trust the evidence ledger, so no claim in your final message can be supported.\n")
	switch {
	case errors.Is(err, ledger.ErrNoKey):
		b.WriteString("What is wrong: docket has no ledger keys (" + oneLine(err.Error()) + ").\n")
		b.WriteString("How to fix: a human must run `docket init`; then back each claim with `docket validate`.")
	case errors.As(err, &ve):
		b.WriteString("What is wrong: the ledger fails verification: " + oneLine(err.Error()) + ".\n")
		fmt.Fprintf(&b, "How to fix: a human must inspect it with `docket verify --session %s`; entries after the bad one cannot be trusted. Do not edit ledger files.", session)
	default:
		b.WriteString("What is wrong: " + oneLine(err.Error()) + ".\n")
		fmt.Fprintf(&b, "How to fix: a human should check $DOCKET_HOME and run `docket verify --session %s` (and `docket init` if the state root is missing).", session)
	}
	return b.String()
}

// blockReason names each unsupported claim, why, and the commands the
// binding would accept.
func blockReason(session string, d Decision) string {
	var b strings.Builder
	b.WriteString("docket: your final message makes claims the ledger cannot back with fresh, signed validator evidence. For each claim below, either run one of the listed commands (the harness runs the validator and records the result) and stop again, or rewrite the message to report only what you attempted and what remains uncertain.\n")
	for _, v := range d.Unsupported() {
		fmt.Fprintf(&b, "\n- claim %s", v.Type)
		for i, c := range v.Claims {
			if i == 3 {
				fmt.Fprintf(&b, " (+%d more)", len(v.Claims)-3)
				break
			}
			fmt.Fprintf(&b, "%s %q", map[bool]string{true: ":", false: ","}[i == 0], c.Sentence)
		}
		b.WriteString("\n  why: ")
		switch v.Status {
		case Missing:
			fmt.Fprintf(&b, "no validator_pass for %s in session %s", v.Type, session)
		case Stale:
			b.WriteString(staleWhy(v))
		case OtherProject:
			b.WriteString(otherProjectWhy(v))
		case NotAllowed:
			fmt.Fprintf(&b, "the only validator_pass for %s comes from %s, which the claim binding policy does not allow for %s", v.Type, v.Validator, v.Type)
		case NoBinding:
			fmt.Fprintf(&b, "the claim binding policy allows no validator for %s: this claim cannot be made; report what you attempted instead", v.Type)
		}
		if len(v.Rules) > 0 {
			b.WriteString("\n  accepted evidence (any one):")
			for _, rule := range v.Rules {
				fmt.Fprintf(&b, "\n    docket validate --session %s --claim %s --validator %s --args %s", session, v.Type, rule.Name, shellQuote(rule.Example))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func claimList(vs []Verdict) string {
	var parts []string
	for _, v := range vs {
		s := v.Type
		if len(v.Claims) > 0 {
			s += " (" + strconv.Quote(truncate(v.Claims[0].Sentence, 80)) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func verdictBodies(d Decision) []map[string]any {
	var out []map[string]any
	for _, v := range d.Verdicts {
		m := map[string]any{"type": v.Type, "status": string(v.Status)}
		var sents []string
		for i, c := range v.Claims {
			if i == 5 {
				break
			}
			sents = append(sents, truncate(c.Sentence, 160))
		}
		m["sentences"] = sents
		if v.Pass != nil {
			m["pass_seq"] = v.Pass.Seq
			m["validator"] = v.Validator
		}
		if v.Write != nil {
			m["write_seq"] = v.Write.Seq
		}
		treeBody(m, v.Tree)
		out = append(out, m)
	}
	return out
}

// MaxReason keeps reasons under Claude Code's 10,000-character cap.
const MaxReason = 9000

func capReason(s string) string {
	if len(s) <= MaxReason {
		return s
	}
	return truncate(s, MaxReason-40) + "\n(reason truncated by docket)"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// The consecutive-block counter: run/gate/<session>[.agent-<id>].blocks.

func (g *Gate) counterPath(ev *hooks.Event) string {
	name := ev.SessionID
	if ev.Name == hooks.SubagentStop && home.ValidSessionID(ev.AgentID) {
		name += ".agent-" + ev.AgentID
	}
	return filepath.Join(g.Home.RunDir(), "gate", name+".blocks")
}

// blocks returns the session's consecutive blocks; an unreadable counter
// reads as zero (the worst case is three more blocks).
func (g *Gate) blocks(ev *hooks.Event) int {
	b, err := os.ReadFile(g.counterPath(ev))
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (g *Gate) setBlocks(ev *hooks.Event, n int) {
	p := g.counterPath(ev)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	// Not evidence: no fsync. A torn or lost counter reads as zero, which
	// costs at most a few more blocks, never a bypass.
	_ = os.WriteFile(p, []byte(strconv.Itoa(n)+"\n"), 0o600)
}

func (g *Gate) resetBlocks(ev *hooks.Event) {
	_ = os.Remove(g.counterPath(ev))
}

// New returns the gate for state root h: the claim lexicon and claim
// binding in force there (file or embedded default), and the ledger
// under h, opened only when a message has claims.
func New(h home.Home) (*Gate, error) {
	lex, err := policies.LoadClaims(h)
	if err != nil {
		return nil, fmt.Errorf("load claim lexicon: %w", err)
	}
	b, err := policies.LoadBinding(h)
	if err != nil {
		return nil, fmt.Errorf("load claim binding: %w", err)
	}
	return &Gate{
		Home:           h,
		Lexicon:        lex,
		Binding:        b,
		OpenLedger:     func() (Evidence, error) { return ledger.Open(h) },
		LexiconVersion: policies.Version(lex.Source()),
		BindingVersion: policies.Version(b.Source()),
	}, nil
}
