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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/regular"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/trust"
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
	// Open opens the files the payload names (transcript_path,
	// agent_transcript_path); nil is regular.Open (a FIFO or a device is
	// refused, never waited on). The sealed-mode daemon's opener also
	// refuses a file its caller could not read itself.
	Open func(path string) (*os.File, error)
}

// open opens a file the payload names with g.Open.
func (g *Gate) open(path string) (*os.File, error) {
	if g.Open != nil {
		return g.Open(path)
	}
	return regular.Open(path)
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
	start := time.Now()
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

	msg, anomaly := g.message(ev)
	r.Source = msg.source
	if anomaly != "" {
		r.Anomaly = anomaly
		return g.anomaly(ev, r, anomaly)
	}
	text := msg.text(blockedText{})
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
	entries, err := readEvidence(l, ev.SessionID, r.Claims, g.Binding)
	if err != nil {
		r.Err = fmt.Errorf("read ledger: %w", err)
		return block(Fail, failReason(ev.SessionID, err), "docket: stop gate cannot read evidence: "+oneLine(err.Error()))
	}
	// After a block, only what the agent wrote after the blocked text is
	// judged: the text is found from the signed gate_decision, never from
	// state the agent could write.
	if bt := lastBlocked(entries, ev); bt.sum != "" {
		if t := msg.text(bt); t != text {
			text = t
			r.Claims = Extract(text, g.Lexicon)
		}
	}
	r.Decision = g.decide(ev, l, r.Claims, entries)

	msgSum := sha256.Sum256([]byte(text))
	body := func(decision string, blocks int) map[string]any {
		b := map[string]any{
			"decision":           decision,
			"claims":             verdictBodies(r.Decision),
			"message_source":     msg.source,
			"message_sha256":     hex.EncodeToString(msgSum[:]),
			"stop_hook_active":   ev.StopHookActive,
			"consecutive_blocks": blocks,
			"lexicon_version":    g.LexiconVersion,
			"binding_version":    g.BindingVersion,
			// the time the gate took so far, for `docket report metrics`
			"duration_us": time.Since(start).Microseconds(),
		}
		if decision == "block" {
			b["blocked_length"] = len(msg.final)
			b["blocked_sha256"] = TextDigest(msg.final)
		}
		return b
	}
	oTag := g.originTag(l, ev.SessionID)
	rec := func(b map[string]any) ledger.Record {
		if oTag != "" {
			b["o_tag"] = oTag
		}
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

// turnMessage is what the gate judges at a stop: every assistant text of
// the turn.
type turnMessage struct {
	// msgs are the turn's assistant messages in order, each its text
	// blocks; the final message is the last.
	msgs [][]string
	// final is the final message as the runtime sent it (or the
	// transcript's); a block records its length and digest.
	final string
	// accumulated: final holds all text of the turn across retries
	// (Gemini's prompt_response); retry: this stop follows a block.
	accumulated, retry bool
	source             string
}

// blockedText is the text the gate last blocked, from the signed
// gate_decision entry: its length and hex SHA-256.
type blockedText struct {
	len int
	sum string
}

// text returns what is judged: with nothing blocked, every message of
// the turn; on the stop that follows a block (stop hook active), the
// messages after the blocked one, or, for an accumulated message, what
// follows the blocked text. When nothing follows it, the final message
// is judged again: a claim left standing is still a claim.
func (m turnMessage) text(bt blockedText) string {
	if !m.retry {
		bt = blockedText{}
	}
	if m.accumulated {
		if bt.sum == "" || bt.len <= 0 || bt.len >= len(m.final) || TextDigest(m.final[:bt.len]) != bt.sum {
			return m.final
		}
		if rest := m.final[bt.len:]; strings.TrimSpace(rest) != "" {
			return rest
		}
		return m.final
	}
	msgs := m.msgs
	if bt.sum != "" {
		for i := len(msgs) - 1; i >= 0; i-- {
			if matchesMarker(msgs[i], bt.sum) {
				msgs = msgs[i+1:]
				break
			}
		}
	}
	if len(msgs) == 0 {
		return m.final
	}
	texts := make([]string, len(msgs))
	for i, b := range msgs {
		texts[i] = strings.Join(b, "\n\n")
	}
	return strings.Join(texts, "\n\n")
}

// lastBlocked returns the text of the last gate decision of this session
// (or subagent) for this event when that decision was a block.
func lastBlocked(entries []*ledger.Entry, ev *hooks.Event) blockedText {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind != ledger.KindGateDecision || e.Event != ev.Name || e.AgentID != ev.AgentID {
			continue
		}
		var b struct {
			Decision string `json:"decision"`
			Length   int    `json:"blocked_length"`
			Sum      string `json:"blocked_sha256"`
		}
		if json.Unmarshal(e.Body, &b) != nil || b.Decision != "block" || len(b.Sum) != sha256.Size*2 {
			return blockedText{}
		}
		return blockedText{len: b.Length, sum: b.Sum}
	}
	return blockedText{}
}

// message reads the turn: the final message from stdin when the payload
// has it, else from the transcript; the turn's earlier messages from the
// transcript (Claude Code, or a Codex rollout). Gemini's prompt_response
// already holds all text of the turn, accumulated across retries. anomaly
// is non-empty when the final message could not be read.
func (g *Gate) message(ev *hooks.Event) (m turnMessage, anomaly string) {
	path, chain := ev.TranscriptPath, MainChain
	if ev.Name == hooks.SubagentStop {
		chain = Sidechain
		if ev.AgentTranscriptPath != "" {
			path = ev.AgentTranscriptPath
		}
	}
	m.retry = ev.StopHookActive
	if ev.HasLastAssistantMessage && strings.TrimSpace(ev.LastAssistantMessage) != "" {
		last := ev.LastAssistantMessage
		m.final, m.source = last, "stdin"
		m.msgs = [][]string{{last}}
		if ev.Runtime == hooks.Gemini {
			m.accumulated = true
			return m, ""
		}
		if path == "" || (ev.Runtime != hooks.Claude && ev.Runtime != hooks.Codex) {
			return m, ""
		}
		// The final message is known: the transcript is read only as far
		// as a turn is (MaxTurnBytes), never to its start.
		t, err := readTurnFile(g.open, path, chain, MaxTurnBytes)
		if err != nil || len(t.Messages) == 0 {
			return m, "" // no transcript: the final message alone
		}
		m.msgs = t.Messages
		if t.Text != last {
			m.msgs = append(m.msgs, []string{last}) // not yet in the transcript
		}
		return m, ""
	}
	m.source = "transcript"
	if path == "" {
		return m, "the payload has neither last_assistant_message nor a transcript path"
	}
	t, err := readTurnFile(g.open, path, chain, MaxScanBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return m, fmt.Sprintf("transcript %s does not exist", path)
	case errors.Is(err, ErrScanLimit):
		return m, fmt.Sprintf("no assistant text in the last %d bytes of transcript %s", t.Scanned, path)
	case err != nil:
		return m, fmt.Sprintf("cannot read transcript: %v", err)
	}
	if t.Text == "" && t.Size >= g.Lexicon.AnomalyMinBytes {
		return m, fmt.Sprintf("no assistant text found in %d-byte transcript %s (%d lines read, %d oversized lines skipped)", t.Size, path, t.Lines, t.Skipped)
	}
	m.final, m.msgs = t.Text, t.Messages
	return m, ""
}

// originTag is the O-Tag of the session's current chain
// (trust.CurrentOTag), read with the keys of the ledger l when it has
// them.
func (g *Gate) originTag(l Evidence, session string) string {
	k, ok := l.(interface{ Keys() *ledger.Keys })
	if !ok || g.Home.Root == "" {
		return ""
	}
	return trust.CurrentOTag(g.Home, k.Keys(), session)
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
		body := map[string]any{"decision": decision, "anomaly": what, "stop_hook_active": ev.StopHookActive, "consecutive_blocks": n,
			"lexicon_version": g.LexiconVersion, "binding_version": g.BindingVersion}
		if t := g.originTag(l, ev.SessionID); t != "" {
			body["o_tag"] = t
		}
		e, _ := l.Append(ev.SessionID, ledger.Record{Kind: ledger.KindGateDecision, Runtime: string(ev.Runtime), Event: ev.Name, AgentID: ev.AgentID,
			Body: body})
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
	agent := ""
	if ev.Name == hooks.SubagentStop && home.ValidSessionID(ev.AgentID) {
		agent = ev.AgentID
	}
	return g.Home.GateBlocksPath(ev.SessionID, agent)
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
	if writeCounter(p, n, false) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	writeCounter(p, n, true)
}

// writeCounter writes n to the counter at p, in place: truncating a
// file to zero and closing it makes ext4 write it back at once, and
// creating one costs more than rewriting it, so a reset writes 0 rather
// than removing the file. Not evidence: no fsync. A torn or lost counter
// reads as zero, which costs at most a few more blocks, never a bypass.
func writeCounter(p string, n int, create bool) bool {
	flag := os.O_WRONLY
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(p, flag, 0o600)
	if err != nil {
		return false
	}
	defer f.Close()
	data := []byte(strconv.Itoa(n) + "\n")
	if _, err := f.WriteAt(data, 0); err != nil {
		return false
	}
	if st, err := f.Stat(); err == nil && st.Size() > int64(len(data)) {
		_ = f.Truncate(int64(len(data)))
	}
	return true
}

func (g *Gate) resetBlocks(ev *hooks.Event) {
	writeCounter(g.counterPath(ev), 0, false) // no counter: nothing to reset
}

// New returns the gate for state root h: the claim lexicon and claim
// binding in force there (file or embedded default), and the ledger
// under h, opened only when a message has claims.
func New(h home.Home) (*Gate, error) {
	// approval, lexicon and binding in one pass, from the compiled-policy
	// cache when it is current (policies/compiled.go)
	lex, b, err := policies.LoadGate(h)
	if err != nil {
		return nil, err
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
