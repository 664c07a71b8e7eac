package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/trust"
)

// EnforceApprovalPending is the enforcement action of an evaluated
// escalation: an approval item was queued and the caller waits for it
// (Evaluate never blocks on a human).
const EnforceApprovalPending = "approval_pending"

// EvaluationKey is the idempotency key under which Evaluate records the
// decision for a runtime's proposal: the runtime's key scoped to its
// workspace, hashed so that it has the shape the store write-back needs.
func EvaluationKey(workspace, runtimeKey string) string {
	return canonjson.SHA256([]byte("evaluate\x00" + workspace + "\x00" + runtimeKey))
}

// EvaluationDecisionID is the store decision id Evaluate writes for an
// evaluation key (the id the hook path derives from any key).
func EvaluationDecisionID(key string) string {
	return "dec_" + strings.TrimPrefix(key, "sha256:")[:24]
}

// Evaluation is the answer to an evaluated proposal.
type Evaluation struct {
	*Decision
	// DecisionID is the id of the decision written back to the store.
	DecisionID string
	// Amendment is a judge's mechanical revision (revise only): the tool
	// input the runtime may run instead.
	Amendment json.RawMessage
}

// Evaluate judges an action proposal that did not come from a hook event:
// a runtime without hooks sent it (docket serve, POST /v1/judge/evaluate).
// The chain is Decide's — policy judge, recall when the class asks for it,
// the optional LLM judge, the failure policy, the class's human-approval
// rule — and the decision is recorded the same way: a judge_decision
// ledger entry under session and a store write-back (plain allows only
// with WriteBackAll, which a server sets so that runtimes can read every
// decision back).
//
// The framework still owns the risk class: the proposal's class is only
// ever made stricter by the tools registry's class for the tool (and, when
// input is given, the shell classifier). input is the tool input when the
// runtime sends it (its canonical digest must be the proposal's
// arguments_digest; the caller checks); nil otherwise.
//
// An escalation is queued as an approval and returned at once
// (EnforceApprovalPending, EscalationID set); the caller polls the
// approval. A revise with an amendment is returned as revise with the
// amendment; the runtime resubmits the amended call, which is judged
// afresh.
func (e *Engine) Evaluate(ctx context.Context, in *ActionProposal, input json.RawMessage, session string) *Evaluation {
	start := e.now()
	st := e.current()
	set := st.set
	js := set.Judges
	d := &Decision{Mode: js.Mode, PolicyVersion: set.Version, CostSource: "judge", Cost: Cost{Source: "judge"},
		MemoriesUsed: []MemoryUse{}, Recall: "not_needed", SideChannel: SideChannelMissing, Headless: true}
	p := in.Clone()
	p.Input = append(json.RawMessage(nil), input...)
	if len(p.Input) == 0 {
		p.Input = json.RawMessage("{}")
	}
	if p.Context.MCPName == "" {
		p.Context.MCPName = ProposalMCPName(p)
	}
	if p.Context.ToolKind == "" {
		// a runtime's own shell tool (run_shell, kind shell) is a shell:
		// the classifier and Bash's protections apply to it
		p.Context.ToolKind = ProposalToolKind(p)
	}
	// the registry and the classifier may only make the runtime's class stricter
	probe := p.Clone()
	Classify(probe, set.Tools)
	p.Context = probe.Context
	claimed := in.Action.RiskClass
	if !claimed.Valid() {
		claimed = policies.HighRisk
	}
	p.Action.RiskClass = policies.Stricter(claimed, probe.Action.RiskClass)
	if p.Tool.Kind == "" {
		p.Tool.Kind = probe.Tool.Kind
	}
	if p.Tool.TargetSystem == nil {
		p.Tool.TargetSystem = probe.Tool.TargetSystem
	}
	if p.Action.Target == nil {
		p.Action.Target = probe.Action.Target
	}
	if p.Action.Description == "" {
		p.Action.Description = probe.Action.Description
	}
	p.Sensitivity = orSensitivity(p.Sensitivity, probe.Sensitivity)
	p.Binding = Binding{SessionID: session, ToolUseID: p.ActionID, ToolDefinitionHash: probe.Binding.ToolDefinitionHash,
		ArgumentsHash: p.Action.ArgumentsDigest, SideChannel: SideChannelMissing}

	d.ToolUseID = p.ActionID
	d.ToolDefinitionHash = p.Binding.ToolDefinitionHash
	d.ArgumentsHash = p.Action.ArgumentsDigest
	d.ActionID = p.ActionID
	d.IdempotencyKey = EvaluationKey(p.WorkspaceID, in.IdempotencyKey)
	d.RiskClass = p.Action.RiskClass
	d.ClassReasons = p.Context.ClassReasons
	d.ProposalDigest = p.Digest()
	d.Proposal = p
	ev := &Evaluation{Decision: d, DecisionID: EvaluationDecisionID(d.IdempotencyKey)}

	var jm Judgment
	var err error
	if st.err != nil {
		d.JudgeID = "framework"
		err = &Error{Kind: KindPolicyInvalid, Judge: "framework", Err: st.err}
	} else {
		jm, err = e.chain(ctx, st, p, d, false)
	}
	if err != nil {
		e.fail(d, err, js)
	} else {
		d.RawOutcome, d.Outcome = jm.Outcome, jm.Outcome
		d.Reason, d.RequiredRevision, d.RuleIDs = jm.Reason, jm.RequiredRevision, jm.RuleIDs
		d.MemoriesUsed = append(d.MemoriesUsed, jm.MemoriesUsed...)
		if jm.Outcome == Revise && jm.Amendment != nil {
			ev.Amendment = append(json.RawMessage(nil), jm.Amendment...)
			if d.RequiredRevision == "" {
				d.RequiredRevision = "run the call with the revised arguments"
			}
		}
		cr := js.Classes[p.Action.RiskClass]
		if d.Outcome == Allow && cr.Human && !jm.AutoApprove {
			d.Outcome = Escalate
			d.Reason = fmt.Sprintf("%s is %s and needs human approval (class policy)", p.Tool.Name, p.Action.RiskClass)
			if jm.Reason != "" {
				d.Reason += "; " + jm.Reason
			}
		}
	}
	e.tag(ctx, d, p, trust.AgentName(p.Runtime.Name, p.Actor.AgentID), "")
	d.addPrecedent()
	e.enforceEvaluation(ctx, d, js)
	d.Reason = Truncate(d.Reason, MaxReason)
	d.DurationMicros = e.now().Sub(start).Microseconds()

	hev := &hooks.Event{Runtime: hooks.Runtime(p.Runtime.Name), Name: hooks.PreToolUse, SessionID: session,
		ToolName: p.Tool.Name, ToolUseID: p.ActionID, AgentID: p.Actor.AgentID}
	if len(input) > 0 {
		hev.ToolInput = input
	}
	e.recordEvaluation(ctx, hev, d)
	return ev
}

func (e *Engine) recordEvaluation(ctx context.Context, ev *hooks.Event, d *Decision) {
	if !e.record(ctx, ev, d) && e.Ledger != nil {
		d.Warnings = append(d.Warnings, "decision not recorded in the ledger")
	}
}

// enforceEvaluation sets the enforcement action of an evaluated decision;
// an escalation is queued without waiting.
func (e *Engine) enforceEvaluation(ctx context.Context, d *Decision, js *policies.Judges) {
	if js.Mode == policies.ModeReadAudit || (d.Proposal.Context.SpecFound && d.Proposal.Context.Spec.Validation == policies.ValidateMonitor) {
		d.Mode = policies.ModeReadAudit
		d.EnforcementAction = EnforceAuditBypass
		return
	}
	switch d.Outcome {
	case Allow:
		d.EnforcementAction = EnforceAllow
	case Block:
		d.EnforcementAction = EnforceDeny
	case Revise:
		d.EnforcementAction = EnforceRevisionNeeded
	case Escalate:
		if e.Approvals == nil {
			d.EnforcementAction, d.Approval = EnforceApprovalExpired, "unavailable"
			return
		}
		p := d.Proposal
		wire, _ := json.Marshal(p)
		id, err := e.Approvals.Submit(ctx, ApprovalItem{
			SessionID: p.Binding.SessionID, ActionID: p.ActionID, ToolName: p.Tool.Name, RiskClass: p.Action.RiskClass,
			Summary: p.Action.Description, Reason: d.Reason, Proposal: wire, ArgumentsDigest: p.Binding.ArgumentsHash,
			ExpiresAt: e.now().Add(js.EscalationTimeout),
		})
		if err != nil {
			d.EnforcementAction, d.Approval = EnforceApprovalExpired, "unavailable"
			d.Warnings = append(d.Warnings, "approval queue: "+err.Error())
			return
		}
		d.EscalationID, d.Approval, d.EnforcementAction = id, ApprovalPending, EnforceApprovalPending
	default:
		d.EnforcementAction = EnforceDeny
	}
}

func orSensitivity(a, b Sensitivity) Sensitivity {
	return Sensitivity{
		ContainsSecretLikeData:         a.ContainsSecretLikeData || b.ContainsSecretLikeData,
		ContainsCustomerData:           a.ContainsCustomerData || b.ContainsCustomerData,
		ContainsPrivatePersonalData:    a.ContainsPrivatePersonalData || b.ContainsPrivatePersonalData,
		ContainsFinancialOrLegalData:   a.ContainsFinancialOrLegalData || b.ContainsFinancialOrLegalData,
		ContainsProductionSystemAccess: a.ContainsProductionSystemAccess || b.ContainsProductionSystemAccess,
	}
}

// ProposalToolKind is the kind of a proposal's tool: mcp for an MCP
// server's (ProposalMCPName), the kind its name maps to, else a shell
// when the runtime says the tool is one (Tool.Kind "shell", whatever the
// runtime calls it).
func ProposalToolKind(p *ActionProposal) hooks.ToolKind {
	if ProposalMCPName(p) != "" {
		return hooks.KindMCP
	}
	k := hooks.KindOf(p.Tool.Name)
	if k == hooks.KindOther && strings.EqualFold(p.Tool.Kind, "shell") {
		return hooks.KindShell
	}
	return k
}

// ProposalMCPName is the MCP tool a proposal's call goes to, as
// mcp__<server>__<tool> (ProposalContext.MCPName): its name when it has
// that form, or, from OpenClaw, whose tools of bundled MCP servers are
// named <server>__<tool>, that name as hooks.OpenClawMCPName reads it.
func ProposalMCPName(p *ActionProposal) string {
	if m := p.mcpName(); m != "" {
		return m
	}
	if p.Runtime.Name == "openclaw" {
		return hooks.OpenClawMCPName(p.Tool.Name)
	}
	return ""
}
