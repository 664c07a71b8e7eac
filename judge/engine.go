package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/trust"
)

// Enforcement actions: what the hook did with the outcome.
const (
	EnforceNone            = "none"  // allow, no decision emitted: the user's rules apply
	EnforceAllow           = "allow" // allow emitted (policy auto-approves)
	EnforceDeny            = "deny"  // deny emitted
	EnforceRevisionNeeded  = "deny_revision_required"
	EnforceUpdatedInput    = "updated_input" // the amended input replaces the call's
	EnforceAsk             = "ask"           // interactive escalation
	EnforceApprovalGranted = "approval_granted"
	EnforceApprovalDenied  = "approval_denied"
	EnforceApprovalExpired = "approval_expired"
	EnforceAuditBypass     = "audit_bypass" // read-audit: decided and recorded, not enforced
)

// Defaults for the store deadlines: a hook runs on every tool call and
// must not stall on a slow store.
const (
	DefaultRecallTimeout    = 250 * time.Millisecond
	DefaultWriteBackTimeout = 500 * time.Millisecond
)

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// MaxReason bounds an answer's reason (Claude Code caps strings at 10,000).
const MaxReason = 8000

// ReasonReviseLoopExhausted is the reason a second revise becomes a block.
const ReasonReviseLoopExhausted = "revise_loop_exhausted"

// Decision is one judgment as recorded: the judge_decision ledger entry's
// body and the source of the store write-back.
type Decision struct {
	Outcome            Outcome     `json:"outcome"`
	RawOutcome         Outcome     `json:"raw_outcome"`
	EnforcementAction  string      `json:"enforcement_action"`
	Mode               string      `json:"mode"`
	JudgeID            string      `json:"judge_id"`
	Judges             []string    `json:"judges"`
	PolicyVersion      string      `json:"policy_version"`
	ToolDefinitionHash string      `json:"tool_definition_hash"`
	ArgumentsHash      string      `json:"arguments_hash"`
	AmendedArgsHash    string      `json:"amended_arguments_hash,omitempty"`
	ToolUseID          string      `json:"tool_use_id,omitempty"`
	ActionID           string      `json:"action_id"`
	IdempotencyKey     string      `json:"idempotency_key"`
	RiskClass          RiskClass   `json:"risk_class"`
	AmendedRiskClass   RiskClass   `json:"amended_risk_class,omitempty"`
	ClassReasons       []string    `json:"class_reasons,omitempty"`
	Reason             string      `json:"reason"`
	RequiredRevision   string      `json:"required_revision,omitempty"`
	RuleIDs            []string    `json:"rule_ids,omitempty"`
	MemoriesUsed       []MemoryUse `json:"memories_used"`
	Recall             string      `json:"recall"`
	CostSource         string      `json:"cost_source"`
	Cost               Cost        `json:"cost"`
	ProposalDigest     string      `json:"proposal_digest"`
	SideChannel        string      `json:"side_channel"`
	FailureKind        string      `json:"failure_kind,omitempty"`
	EscalationID       string      `json:"escalation_id,omitempty"`
	Approval           string      `json:"approval,omitempty"`
	Headless           bool        `json:"headless"`
	DurationMicros     int64       `json:"duration_us"`
	// Warnings lists recording problems (ledger or store unavailable).
	Warnings []string `json:"-"`
	// Proposal is the judged proposal (nil when assembly failed).
	Proposal *ActionProposal `json:"-"`
	// Tags are the R-Tag, O-Tag, V-Pol and trust level (trust.go).
	Tags

	recalled []Memory
}

// Engine runs the judge chain for PreToolUse events. Set its fields
// before the first Decide; Decide is safe for concurrent use.
type Engine struct {
	Home home.Home
	// LLM is the optional second judge; nil when no model is configured.
	LLM JudgeBackend
	// OpenRecall opens the recall store lazily, only for classes whose
	// policy asks for recall; nil means no store.
	OpenRecall func(ctx context.Context) (Recaller, error)
	Writer     DecisionWriter // store write-back; nil to skip
	Approvals  Approvals      // headless escalation; nil fails closed
	Ledger     Recorder       // judge_decision entries; nil to skip
	// RecallTimeout bounds recall (store open included); past it recall
	// is recorded as unavailable and the judges decide without it.
	// WriteBackTimeout bounds the write-back. Zero means the defaults.
	RecallTimeout, WriteBackTimeout time.Duration
	// WriteBackAll writes every decision back to the store; by default
	// plain allows that needed no recall are left to the ledger.
	WriteBackAll bool
	// Headless forces headless escalation regardless of judges.md.
	Headless bool
	// SideChannel enables binding `docket propose` statements.
	SideChannel bool
	Now         func() time.Time
	// Protector overrides the policy judge's protector (tests).
	Protector *Protector
	// RecheckApproval checks the policy approval (policies.CheckApproval)
	// on every decision instead of once at load: for a long-running
	// engine (docket serve), whose files may be approved or changed after
	// it loaded them. It costs a few small file reads per decision.
	RecheckApproval bool
	// Trust applies monitoring levels and reads the session's origin
	// (trust.go); nil leaves levels out (tags are still set).
	Trust *Trust
	// Open opens the files a proposal names that the judge reads (a body
	// file a command sends out); nil is regular.Open. docket serve sets
	// one that reads only what the calling uid could read itself.
	Open func(path string) (*os.File, error)
	// Interrupt, when set, derives the context of each wait that can be
	// long (recall, the model judge, a headless approval, the store
	// write-back): docket-judge cancels it on SIGINT. It is called only
	// when such a wait begins, so a call that waits on nothing never sets
	// up signal handling.
	Interrupt func(context.Context) (context.Context, context.CancelFunc)

	state atomic.Pointer[engineState]

	recallOnce sync.Once
	recaller   Recaller
	recallErr  error
}

type engineState struct {
	set    *PolicySet
	policy *PolicyJudge
	// err is a policy error from the last reload: every decision fails
	// closed (policy_invalid) until a valid policy is loaded.
	err error
}

// SetPolicyError puts the engine in the fail-closed state after a reload
// found the policy invalid; the last valid set stays for the record.
func (e *Engine) SetPolicyError(err error) {
	old := e.state.Load()
	e.state.Store(&engineState{set: old.set, policy: old.policy, err: err})
}

// NewEngine returns an engine deciding under set.
func NewEngine(h home.Home, set *PolicySet) *Engine {
	e := &Engine{Home: h, SideChannel: true}
	e.SetPolicy(set)
	return e
}

// SetPolicy atomically replaces the policy snapshot; decisions in flight
// finish under the snapshot they started with.
func (e *Engine) SetPolicy(set *PolicySet) {
	pj := NewPolicyJudge(set, e.Home)
	if e.Protector != nil {
		pj = pj.WithProtector(*e.Protector)
	}
	e.state.Store(&engineState{set: set, policy: pj})
}

// Policy returns the policy snapshot in force.
func (e *Engine) Policy() *PolicySet { return e.state.Load().set }

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// interruptible returns the context for a wait that can be long (see
// Interrupt) and its release.
func (e *Engine) interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	if e.Interrupt == nil {
		return ctx, func() {}
	}
	return e.Interrupt(ctx)
}

func (e *Engine) recall(ctx context.Context) (Recaller, error) {
	if e.OpenRecall == nil {
		return nil, errors.New("no store configured")
	}
	e.recallOnce.Do(func() { e.recaller, e.recallErr = e.OpenRecall(ctx) })
	return e.recaller, e.recallErr
}

// current returns the policy state to decide with. With RecheckApproval
// a long-running engine sees an approval (or a change) made since its
// policy was loaded.
func (e *Engine) current() *engineState {
	st := e.state.Load()
	if !e.RecheckApproval {
		return st
	}
	why := ""
	if err := policies.CheckApproval(e.Home); err != nil {
		why = err.Error()
	}
	if why == st.policy.prot.Unapproved {
		return st
	}
	prot := st.policy.prot
	prot.Unapproved = why
	return &engineState{set: st.set, policy: &PolicyJudge{set: st.set, prot: prot}, err: st.err}
}

// Decide judges one PreToolUse event and returns the runtime answer and
// the recorded decision. It never fails: every failure is mapped through
// the failure policy, and recording problems are listed in Warnings.
func (e *Engine) Decide(ctx context.Context, ev *hooks.Event) (hooks.Answer, *Decision) {
	start := e.now()
	st := e.current()
	set := st.set
	js := set.Judges
	d := &Decision{Mode: js.Mode, PolicyVersion: set.Version, CostSource: "judge", Cost: Cost{Source: "judge"}, MemoriesUsed: []MemoryUse{}, Recall: "not_needed", SideChannel: SideChannelMissing}
	if ev != nil {
		d.ToolUseID = ev.ToolUseID
	}
	ans := hooks.Answer{Event: hooks.PreToolUse}
	p, err := Assemble(ev, set.Tools)
	if err == nil && st.err != nil {
		err = &Error{Kind: KindPolicyInvalid, Judge: "framework", Err: st.err}
		d.Proposal = p
	}
	if err != nil {
		d.JudgeID = "framework"
		e.fail(d, err, js)
		e.enforce(ctx, d, &ans, nil, ev, js)
		ans.Reason = Truncate(ans.Reason, MaxReason)
		e.record(ctx, ev, d)
		return ans, d
	}
	d.Proposal = p
	patchTargets(p, e.Open)
	archiveTargets(p, e.Open)
	scriptRuns(p, e.Open)
	if e.SideChannel && e.Home.Root != "" {
		b, err := BindStatement(e.Home, ev.SessionID, p.Tool.Name, p.Binding.ArgumentsHash, e.now())
		if err != nil {
			d.Warnings = append(d.Warnings, err.Error())
		}
		ApplyStatement(p, b)
	}
	d.SideChannel = p.Binding.SideChannel
	d.ToolDefinitionHash = p.Binding.ToolDefinitionHash
	d.ArgumentsHash = p.Binding.ArgumentsHash
	d.ActionID, d.IdempotencyKey = p.ActionID, p.IdempotencyKey
	d.RiskClass = p.Action.RiskClass
	d.ClassReasons = p.Context.ClassReasons
	d.ProposalDigest = p.Digest()
	d.Headless = e.headless(ev, js)

	jm, err := e.chain(ctx, st, p, d, false)
	var amended json.RawMessage
	if err == nil && jm.Outcome == Revise && jm.Amendment != nil {
		amended = jm.Amendment
		p2, aerr := e.amend(p, jm.Amendment, set)
		if aerr != nil {
			err = aerr
		} else {
			d.AmendedArgsHash = p2.Binding.ArgumentsHash
			d.AmendedRiskClass = p2.Action.RiskClass
			first := jm
			jm, err = e.chain(ctx, st, p2, d, true)
			if err == nil {
				jm.Reason = "revised (" + first.Reason + "); then: " + jm.Reason
				jm.RuleIDs = append(first.RuleIDs, jm.RuleIDs...)
				if jm.Outcome == Revise {
					jm = Judgment{Outcome: Block, Reason: ReasonReviseLoopExhausted + ": the revised call still needs revision (" + jm.Reason + ")", RuleIDs: jm.RuleIDs}
					d.RawOutcome = Revise
					amended = nil
				} else {
					p = p2
					d.RawOutcome = Revise
				}
			}
		}
	}
	if err != nil {
		e.fail(d, err, js)
		amended = nil
	} else {
		if d.RawOutcome == "" {
			d.RawOutcome = jm.Outcome
		}
		d.Outcome = jm.Outcome
		d.Reason = jm.Reason
		d.RequiredRevision = jm.RequiredRevision
		d.RuleIDs = jm.RuleIDs
		if jm.Outcome == Block && d.RawOutcome == Revise {
			d.RawOutcome = Revise
		}
		for _, u := range jm.MemoriesUsed {
			if !hasMemory(d.MemoriesUsed, u.MemoryID) {
				d.MemoriesUsed = append(d.MemoriesUsed, u)
			}
		}
		cr := js.Classes[p.Action.RiskClass]
		if d.Outcome == Allow && cr.Human && !jm.AutoApprove {
			d.Outcome = Escalate
			why := ""
			if len(p.Context.ClassReasons) > 0 {
				why = " (" + strings.Join(p.Context.ClassReasons, "; ") + ")"
			}
			prev := ""
			if strings.HasPrefix(jm.Reason, "revised (") || len(jc0(jm)) > 0 {
				prev = "; " + jm.Reason
			}
			d.Reason = fmt.Sprintf("%s is %s%s and needs human approval (class policy)%s", p.Tool.Name, p.Action.RiskClass, why, prev)
		}
		if d.Outcome == Allow && (jm.AutoApprove || cr.AutoApprove) {
			d.EnforcementAction = EnforceAllow
		}
	}
	e.tag(ctx, d, p, trust.AgentName(string(ev.Runtime), ev.AgentType), ev.SessionID)
	d.addPrecedent()
	d.Proposal = p
	e.enforce(ctx, d, &ans, amended, ev, js)
	ans.Reason = Truncate(ans.Reason, MaxReason)
	d.DurationMicros = e.now().Sub(start).Microseconds()
	if !e.record(ctx, ev, d) && js.AuditRequired && d.EnforcementAction != EnforceAuditBypass && ans.Decision != hooks.Deny {
		// audit_required: a decision that cannot be recorded does not run
		ans = hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny,
			Reason: "docket could not record its decision in the ledger and policy requires an audit trail (audit_required); run `docket doctor`"}
	}
	return ans, d
}

// chain runs the policy judge, then recall and the LLM judge when the
// class asks for them.
func (e *Engine) chain(ctx context.Context, st *engineState, p *ActionProposal, d *Decision, revised bool) (Judgment, error) {
	js := st.set.Judges
	cr := js.Classes[p.Action.RiskClass]
	jc := &JudgmentContext{
		Policy:  PolicyContext{Class: p.Action.RiskClass, ClassPolicy: cr, PolicyText: js.Prose, DelegateChain: st.set.Delegates, Revised: revised},
		Runtime: RuntimeConfig{StateRoot: e.Home.Root, Headless: d.Headless},
	}
	d.JudgeID = st.policy.JudgeID()
	d.Judges = appendOnce(d.Judges, d.JudgeID)
	jm, err := e.directivesFirst(ctx, st, p, jc, d)
	if err != nil {
		return Judgment{}, err
	}
	if err := ValidJudgment(jm, st.policy.SupportedOutcomes()); err != nil {
		return Judgment{}, &Error{Kind: KindUnavailable, Judge: d.JudgeID, Err: err}
	}
	if jm.Outcome == Block {
		return jm, nil
	}
	if cr.Recall {
		ictx, release := ctx, context.CancelFunc(func() {})
		if e.OpenRecall != nil {
			ictx, release = e.interruptible(ctx)
		}
		defer release()
		rctx, cancel := context.WithTimeout(ictx, orDefault(e.RecallTimeout, DefaultRecallTimeout))
		defer cancel()
		if r, err := e.recall(rctx); err != nil {
			d.Recall = "unavailable: " + err.Error()
		} else if rec, err := r.Recall(rctx, recallQuery(p)); err != nil {
			d.Recall = "unavailable: " + err.Error()
		} else {
			d.Recall = fmt.Sprintf("ok: %d memories", len(rec.Memories))
			// a lesson about another call is background, never an
			// instruction: neither judge sees it as a policy hit
			rec = BindingHits(rec, p)
			jc.Policy.Recall = rec
			// instruction-grade hits bind the policy judge too
			var uses []MemoryUse
			jm, uses = ApplyPolicyHits(jm, rec, p)
			jm.MemoriesUsed = append(jm.MemoriesUsed, uses...)
		}
	}
	if jm.Outcome == Allow && !jm.AutoApprove && cr.LLM && e.LLM != nil && slicesContainsStr(js.Chain, policies.JudgeLLM) {
		id := e.LLM.JudgeID()
		d.JudgeID = id
		d.Judges = appendOnce(d.Judges, id)
		lctx, release := e.interruptible(ctx)
		lj, err := e.LLM.Evaluate(lctx, p, jc)
		release()
		d.Cost.Calls += lj.Cost.Calls
		d.Cost.InputTokens += lj.Cost.InputTokens
		d.Cost.OutputTokens += lj.Cost.OutputTokens
		if err != nil {
			return Judgment{}, err
		}
		lj.RuleIDs = append(jm.RuleIDs, lj.RuleIDs...)
		for _, u := range jm.MemoriesUsed {
			if !hasMemory(lj.MemoriesUsed, u.MemoryID) {
				lj.MemoriesUsed = append(lj.MemoriesUsed, u)
			}
		}
		jm = lj
	} else {
		// the policy judge decided with every injectable memory in view
		for _, m := range jc.Policy.Recall.Memories {
			if m.Injectable() && !hasMemory(jm.MemoriesUsed, m.ID) {
				jm.MemoriesUsed = append(jm.MemoriesUsed, MemoryUse{MemoryID: m.ID, UsedAs: "background"})
			}
		}
	}
	d.recalled = jc.Policy.Recall.Memories
	return jm, nil
}

// addPrecedent shows the human (and the agent) the closest injectable
// precedent of an escalation or a block.
func (d *Decision) addPrecedent() {
	if d.Outcome != Escalate && d.Outcome != Block {
		return
	}
	for _, m := range d.recalled {
		if m.Injectable() {
			d.Reason += fmt.Sprintf(" — precedent [%s]: %s", m.ID, Truncate(m.Summary, 200))
			if !hasMemory(d.MemoriesUsed, m.ID) {
				d.MemoriesUsed = append(d.MemoriesUsed, MemoryUse{MemoryID: m.ID, UsedAs: "background"})
			}
			return
		}
	}
}

func hasMemory(us []MemoryUse, id string) bool {
	for _, u := range us {
		if u.MemoryID == id {
			return true
		}
	}
	return false
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func slicesContainsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// amend applies a judge's amendment: the tool input is replaced and the
// framework re-derives everything else. The amended class is the
// stricter of the original and the recomputed class.
func (e *Engine) amend(p *ActionProposal, amendment json.RawMessage, set *PolicySet) (*ActionProposal, error) {
	if err := ValidateAmendment(p.Tool.Name, p.Input, amendment); err != nil {
		return nil, &Error{Kind: KindAmendedRejected, Judge: "framework", Err: err}
	}
	p2 := p.Clone()
	p2.Input = append(json.RawMessage(nil), amendment...)
	canon, _ := canonjson.Canonical(amendment)
	p2.Binding.ArgumentsHash = canonjson.SHA256(canon)
	p2.Action.ArgumentsDigest = p2.Binding.ArgumentsHash
	Classify(p2, set.Tools)
	p2.Context.Applies = nil
	patchTargets(p2, e.Open)
	archiveTargets(p2, e.Open)
	scriptRuns(p2, e.Open)
	p2.setClass(policies.Stricter(p.Action.RiskClass, p2.Action.RiskClass))
	return p2, nil
}

// toolSchemas gives the required string fields and the allowed fields of
// the runtime's built-in tools; amendments to them are checked against it.
var toolSchemas = []toolSchema{
	{"Bash", []string{"command"}, []string{"description", "timeout", "run_in_background", "dangerouslyDisableSandbox"}},
	{"Write", []string{"file_path", "content"}, nil},
	{"Edit", []string{"file_path", "old_string", "new_string"}, []string{"replace_all"}},
	{"MultiEdit", []string{"file_path"}, []string{"edits"}},
	{"Read", []string{"file_path"}, []string{"offset", "limit", "pages"}},
	{"NotebookEdit", []string{"notebook_path", "new_source"}, []string{"cell_id", "cell_type", "edit_mode"}},
	{"WebFetch", []string{"url", "prompt"}, nil},
}

type toolSchema struct {
	tool               string
	required, optional []string
}

// schemaOf returns the schema of a built-in tool.
func schemaOf(tool string) (toolSchema, bool) {
	for _, sc := range toolSchemas {
		if sc.tool == tool {
			return sc, true
		}
	}
	return toolSchema{}, false
}

// ValidateAmendment checks a judge's replacement tool input: one JSON
// object, different from the original, and for known tools schema-valid
// (required string fields present, no fields the tool does not take).
func ValidateAmendment(tool string, original, amended json.RawMessage) error {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(amended))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return errors.New("amendment is not a JSON object")
	}
	if dec.More() {
		return errors.New("amendment has trailing data")
	}
	a, _ := canonjson.Canonical(amended)
	o, _ := canonjson.Canonical(original)
	if bytes.Equal(a, o) {
		return errors.New("amendment does not change the call")
	}
	sc, ok := schemaOf(tool)
	if !ok {
		var om map[string]any
		_ = json.Unmarshal(original, &om)
		for k := range m {
			if _, ok := om[k]; !ok {
				return fmt.Errorf("amendment adds field %q the original call did not have", k)
			}
		}
		return nil
	}
	for _, f := range sc.required {
		if s, ok := m[f].(string); !ok || (s == "" && f != "content" && f != "new_string") {
			return fmt.Errorf("amendment: %s.%s must be a non-empty string", tool, f)
		}
	}
	for k := range m {
		if !slicesContainsStr(sc.required, k) && !slicesContainsStr(sc.optional, k) {
			return fmt.Errorf("amendment: %s takes no field %q", tool, k)
		}
	}
	return nil
}

func (e *Engine) fail(d *Decision, err error, js *policies.Judges) {
	kind := FailureKind(err)
	o := FailureOutcome(err, js.FailurePolicy)
	d.FailureKind = kind
	d.RawOutcome = o
	d.Outcome = o
	d.Reason = fmt.Sprintf("judge failure (%s): %v; failure policy: %s", kind, err, o)
}

func (e *Engine) headless(ev *hooks.Event, js *policies.Judges) bool {
	switch {
	case e.Headless:
		return true
	case js.Headless == policies.HeadlessAlways:
		return true
	case js.Headless == policies.HeadlessNever:
		return false
	}
	if ev == nil {
		return false
	}
	return ev.PermissionMode == "dontAsk" || ev.PermissionMode == "bypassPermissions"
}

// enforce maps the decision onto the runtime answer.
func (e *Engine) enforce(ctx context.Context, d *Decision, ans *hooks.Answer, amended json.RawMessage, ev *hooks.Event, js *policies.Judges) {
	readAudit := js.Mode == policies.ModeReadAudit
	if d.Proposal != nil && d.Proposal.Context.SpecFound && d.Proposal.Context.Spec.Validation == policies.ValidateMonitor {
		readAudit = true
	}
	if readAudit && !builtinBlock(d) {
		// read-audit never lifts the built-in protections: no policy
		// (judges.md mode, a registry monitor entry) can remove them
		d.Mode = policies.ModeReadAudit
		d.EnforcementAction = EnforceAuditBypass
		return
	}
	switch d.Outcome {
	case Allow:
		if amended != nil {
			ans.Decision, ans.Reason, ans.UpdatedInput = hooks.Allow, "docket revised the call: "+d.Reason, amended
			d.EnforcementAction = EnforceUpdatedInput
			return
		}
		if d.EnforcementAction == EnforceAllow {
			ans.Decision, ans.Reason = hooks.Allow, "docket: "+d.Reason
			return
		}
		d.EnforcementAction = EnforceNone
	case Block:
		ans.Decision, ans.Reason = hooks.Deny, "docket blocked this call: "+d.Reason
		d.EnforcementAction = EnforceDeny
	case Revise:
		ans.Decision = hooks.Deny
		ans.Reason = "docket requires a revision before this call can run: " + nonEmpty(d.RequiredRevision, d.Reason)
		d.EnforcementAction = EnforceRevisionNeeded
	case Escalate:
		if !d.Headless {
			ans.Decision, ans.Reason, ans.UpdatedInput = hooks.Ask, "docket asks for your approval: "+d.Reason, amended
			d.EnforcementAction = EnforceAsk
			return
		}
		e.approve(ctx, d, ans, amended, js)
	default:
		ans.Decision, ans.Reason = hooks.Deny, "docket: unknown outcome; failing closed"
		d.EnforcementAction = EnforceDeny
	}
}

// builtinBlock reports whether d is a block by a built-in protection.
func builtinBlock(d *Decision) bool {
	if d.Outcome != Block {
		return false
	}
	for _, id := range d.RuleIDs {
		if strings.HasPrefix(id, "builtin:") || strings.HasPrefix(id, DirectiveRulePrefix) {
			return true
		}
	}
	return false
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// approve submits a headless escalation to the approval queue and waits
// a bounded time; anything but an explicit approval denies.
func (e *Engine) approve(ctx context.Context, d *Decision, ans *hooks.Answer, amended json.RawMessage, js *policies.Judges) {
	deny := func(action, why string) {
		how := "ask the user to approve it (`docket approvals approve " + nonEmpty(d.EscalationID, "ID") + "`), then retry"
		ans.Decision, ans.Reason, ans.UpdatedInput = hooks.Deny, "docket: this call needs human approval and "+why+"; "+how+" ("+d.Reason+")", nil
		d.EnforcementAction = action
	}
	if e.Approvals == nil || d.Proposal == nil {
		deny(EnforceApprovalExpired, "no approval queue is available (failing closed)")
		d.Approval = "unavailable"
		return
	}
	ctx, release := e.interruptible(ctx)
	defer release()
	wire, _ := json.Marshal(d.Proposal)
	timeout := js.EscalationTimeout
	id, err := e.Approvals.Submit(ctx, ApprovalItem{
		SessionID: d.Proposal.Binding.SessionID, ActionID: d.Proposal.ActionID, ToolName: d.Proposal.Tool.Name,
		RiskClass: d.Proposal.Action.RiskClass, Summary: d.Proposal.Action.Description, Reason: d.Reason, Proposal: wire,
		ArgumentsDigest: d.Proposal.Binding.ArgumentsHash, ExpiresAt: e.now().Add(timeout),
	})
	if err != nil {
		deny(EnforceApprovalExpired, "the approval queue failed: "+err.Error())
		d.Approval = "unavailable"
		return
	}
	d.EscalationID = id
	res, err := e.Approvals.Wait(ctx, id, timeout)
	if err != nil {
		res = Resolution{Status: ApprovalExpired}
	}
	d.Approval = res.Status
	switch res.Status {
	case ApprovalApproved:
		if res.Arguments != nil {
			if err := ValidateAmendment(d.Proposal.Tool.Name, d.Proposal.Input, res.Arguments); err != nil {
				deny(EnforceApprovalDenied, "the human's edited arguments are invalid ("+err.Error()+")")
				return
			}
			amended = res.Arguments
			// the human modified the call: recorded (trust rates it neutral)
			canon, _ := canonjson.Canonical(amended)
			d.AmendedArgsHash = canonjson.SHA256(canon)
		}
		ans.Decision, ans.Reason, ans.UpdatedInput = hooks.Allow, "docket: approved by "+nonEmpty(res.By, "a human")+" ("+d.Reason+")", amended
		d.EnforcementAction = EnforceApprovalGranted
	case ApprovalDenied:
		deny(EnforceApprovalDenied, "a human denied it"+noteSuffix(res.Note))
	default:
		deny(EnforceApprovalExpired, fmt.Sprintf("no approval arrived within %s (failing closed)", timeout))
	}
}

func noteSuffix(n string) string {
	if n == "" {
		return ""
	}
	return ": " + n
}

// record appends the judge_decision entry and writes the decision back.
// It reports whether the ledger entry was written.
func (e *Engine) record(ctx context.Context, ev *hooks.Event, d *Decision) bool {
	if ev == nil {
		return false
	}
	recorded := false
	if e.Ledger != nil {
		// the arguments the runtime sent (an amendment's are in the body)
		args := ev.ToolInput
		agent := ev.AgentID
		_, err := e.Ledger.Append(ev.SessionID, ledger.Record{
			Kind: ledger.KindJudgeDecision, Runtime: string(ev.Runtime), Event: hooks.PreToolUse,
			Tool: ev.ToolName, ToolUseID: ev.ToolUseID, AgentID: agent, Args: args, Body: d.entryBody(),
		})
		if err != nil {
			d.Warnings = append(d.Warnings, "ledger: "+err.Error())
		} else {
			recorded = true
		}
	}
	// Plain allows of calls whose class needs no recall are not written
	// back one by one (that would open the store on every call); the
	// ledger has them and the store's projection picks them up.
	plain := d.Outcome == Allow && d.Recall == "not_needed" && !e.WriteBackAll
	if e.Writer != nil && d.Proposal != nil && !plain {
		p := d.Proposal
		ictx, release := e.interruptible(ctx)
		defer release()
		wctx, cancel := context.WithTimeout(ictx, orDefault(e.WriteBackTimeout, DefaultWriteBackTimeout))
		defer cancel()
		err := e.Writer.WriteDecision(wctx, DecisionRecord{
			DecisionID: "dec_" + strings.TrimPrefix(d.IdempotencyKey, "sha256:")[:24], IdempotencyKey: d.IdempotencyKey,
			WorkspaceID: p.WorkspaceID, ProjectID: deref(p.ProjectID), SessionID: p.Binding.SessionID, ActionID: p.ActionID,
			ToolName: p.Tool.Name, Target: Truncate(deref(p.Action.Target), 300), RiskClass: d.RiskClass, Decision: d.Outcome,
			EnforcementAction: d.EnforcementAction, ReasoningSummary: Truncate(d.Reason, 1000), JudgeID: d.JudgeID,
			PolicyVersion: d.PolicyVersion, ArgumentsDigest: d.ArgumentsHash, ProposalDigest: d.ProposalDigest,
			MemoryUsed: d.MemoriesUsed, Time: e.now().UTC().Format(time.RFC3339Nano), Provenance: "observed",
			Lessons: lessons(d), Human: d.EnforcementAction == EnforceApprovalGranted || d.EnforcementAction == EnforceApprovalDenied,
			Entities: SubjectEntities(p),
		})
		if err != nil {
			d.Warnings = append(d.Warnings, "store write-back: "+err.Error())
		}
	}
	return recorded
}

// lessons are the lesson candidates a decision leaves for review: a
// block, revise or escalation by policy, recall or a model, and a human's
// answer to an approval. Built-in protections and judge failures teach
// nothing new, and a decision that followed a confirmed lesson does not
// propose it again.
func lessons(d *Decision) []string {
	if d.Proposal == nil || d.FailureKind != "" || builtinBlock(d) {
		return nil
	}
	for _, id := range d.RuleIDs {
		if strings.HasPrefix(id, "memory:") {
			return nil
		}
	}
	what := Truncate(d.Proposal.Action.Description, 200)
	why := nonEmpty(d.RequiredRevision, d.Reason)
	why, _, _ = strings.Cut(why, " — precedent [")
	why = Truncate(why, 300)
	switch {
	case d.EnforcementAction == EnforceApprovalGranted:
		return []string{fmt.Sprintf("A human approved %s (%s): %s", what, d.RiskClass, why)}
	case d.EnforcementAction == EnforceApprovalDenied:
		return []string{fmt.Sprintf("A human denied %s (%s): %s", what, d.RiskClass, why)}
	case d.Outcome == Block:
		return []string{fmt.Sprintf("Do not run %s (%s): %s", what, d.RiskClass, why)}
	case d.Outcome == Revise:
		return []string{fmt.Sprintf("Revise %s (%s) before it runs: %s", what, d.RiskClass, why)}
	case d.Outcome == Escalate:
		return []string{fmt.Sprintf("Ask a human before %s (%s): %s", what, d.RiskClass, why)}
	}
	return nil
}

// jc0 returns the rule ids of a judgment that matched a policy rule.
func jc0(j Judgment) []string {
	var out []string
	for _, id := range j.RuleIDs {
		if !strings.HasPrefix(id, "registry:") {
			out = append(out, id)
		}
	}
	return out
}
