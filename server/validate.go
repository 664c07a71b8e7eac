package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/store"
)

// The enums of the v1 schemas.
var (
	riskClasses   = []string{"read_only", "reversible_write", "external_side_effect", "high_risk"}
	outcomes      = []string{"allow", "block", "revise", "escalate"}
	checkResults  = []string{"pass", "fail", "uncertain", "not_applicable"}
	confidences   = []string{"high", "medium", "low"}
	judgeKinds    = []string{"llm", "rule", "hybrid", "human"}
	usedAs        = []string{"instruction", "evidence", "background"}
	candStatuses  = []string{"observed", "inferred", "generated", "user_confirmed"}
	toolKinds     = []string{"function_tool", "hosted_tool", "shell", "browser", "api", "message", "file", "workflow", "handoff"}
	authRefKinds  = []string{"user_message", "task", "ticket", "memory", "policy", "manual_approval"}
	sourceKinds   = []string{"file", "message", "doc", "ticket", "memory", "log", "web", "api", "policy"}
	persistences  = []string{"none", "temporary", "durable", "external"}
	reviewActions = store.ReviewActions
	approvalActs  = map[string]store.ApprovalStatus{"approve": store.ApprovalApproved, "reject": store.ApprovalRejected, "modify": store.ApprovalModified, "escalate": store.ApprovalEscalated}
)

func enum(field, v string, allowed []string, optional bool) error {
	if v == "" && optional {
		return nil
	}
	if !slices.Contains(allowed, v) {
		return badRequest(field, "unknown value %q; want one of %s", v, strings.Join(allowed, ", "))
	}
	return nil
}

// decodedWorkspace checks the workspace_id a body decoded to, as decode
// checks the required key: encoding/json also fills the field from a key
// in another letter case ("WORKSPACE_ID", "workſpace_id"), which decode's
// required check, by exact key, does not see. A blank workspace would be
// the judge's "default".
func decodedWorkspace(ws string) error {
	if strings.TrimSpace(ws) == "" {
		return badRequest("workspace_id", "required")
	}
	return nil
}

func schema(got, want string) error {
	if got != want {
		return badRequest("schema_version", "unknown schema_version %q; want %s", got, want)
	}
	return nil
}

// parseRecall decodes and validates openbrain.judge.recall.v1.
func parseRecall(body []byte) (store.RecallRequest, error) {
	var req store.RecallRequest
	if err := decode(body, &req, "schema_version", "request_id", "workspace_id", "action_id", "query", "query.summary"); err != nil {
		return req, err
	}
	if err := decodedWorkspace(req.Workspace); err != nil {
		return req, err
	}
	if err := schema(req.SchemaVersion, store.RecallSchema); err != nil {
		return req, err
	}
	if err := enum("query.action_type", req.Query.ActionType, riskClasses, true); err != nil {
		return req, err
	}
	if v := req.Scope.Visibility; v != "" && !v.Valid() {
		return req, badRequest("scope.visibility", "unknown value %q; want personal, project, workspace or org", v)
	}
	for i, p := range req.Policy.AllowedUsePolicies {
		if !p.Valid() {
			return req, badRequest(fmt.Sprintf("policy.allowed_use_policies.%d", i), "unknown use policy %q", p)
		}
	}
	if req.Limits.MaxItems < 0 || req.Limits.MaxTokens < 0 || req.Limits.RecencyDays < 0 {
		return req, badRequest("limits", "negative limit")
	}
	req, err := store.ValidateRecall(req)
	return req, err
}

// parseDecision decodes and validates openbrain.judge.decision.v1.
func parseDecision(body []byte) (store.Decision, error) {
	var d store.Decision
	if err := decode(body, &d, "schema_version", "workspace_id", "action_id", "idempotency_key", "decision", "reasoning_summary", "confidence", "judge", "judge.kind"); err != nil {
		return d, err
	}
	if err := decodedWorkspace(d.Workspace); err != nil {
		return d, err
	}
	if err := schema(d.SchemaVersion, store.DecisionSchema); err != nil {
		return d, err
	}
	if gjson.GetBytes(body, "creator").Exists() {
		return d, badRequest("creator", "set by the server: the decision's creator is the token that writes it")
	}
	checks := []struct{ f, v string }{
		{"decision", string(d.Decision)}, {"confidence", d.Confidence}, {"judge.kind", d.Judge.Kind},
	}
	allowed := [][]string{outcomes, confidences, judgeKinds}
	for i, c := range checks {
		if err := enum(c.f, c.v, allowed[i], false); err != nil {
			return d, err
		}
	}
	for _, c := range []struct{ f, v string }{
		{"checks.authorization_check", d.Checks.Authorization}, {"checks.evidence_check", d.Checks.Evidence},
		{"checks.policy_check", d.Checks.Policy}, {"checks.sensitivity_check", d.Checks.Sensitivity},
		{"checks.reversibility_check", d.Checks.Reversibility}, {"checks.quality_check", d.Checks.Quality},
	} {
		if err := enum(c.f, c.v, checkResults, true); err != nil {
			return d, err
		}
	}
	for i, u := range d.MemoryUsed {
		if u.MemoryID == "" {
			return d, badRequest(fmt.Sprintf("memory_used.%d.memory_id", i), "required")
		}
		if err := enum(fmt.Sprintf("memory_used.%d.used_as", i), u.UsedAs, usedAs, false); err != nil {
			return d, err
		}
	}
	if err := enum("memory_to_write.provenance.default_status", string(d.MemoryToWrite.Provenance.DefaultStatus), candStatuses, true); err != nil {
		return d, err
	}
	// the rest of the shape and the firewall are the store's (PlanWrite)
	return d, nil
}

// evaluateRequest is openbrain.judge.action_proposal.v1 plus docket's
// optional tool_input (never stored; its canonical digest must be
// action.arguments_digest).
type evaluateRequest struct {
	judge.ActionProposal
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
}

// parseProposal decodes and validates an action proposal and names the
// ledger session it is recorded under: flow_id, else task_id.
func parseProposal(body []byte) (*judge.ActionProposal, json.RawMessage, string, error) {
	var r evaluateRequest
	err := decode(body, &r, "schema_version", "workspace_id", "action_id", "idempotency_key", "runtime", "runtime.name",
		"actor", "actor.agent_id", "tool", "tool.name", "tool.kind", "action", "action.risk_class", "action.description", "action.arguments_digest")
	if err != nil {
		return nil, nil, "", err
	}
	p := &r.ActionProposal
	if err := decodedWorkspace(p.WorkspaceID); err != nil {
		return nil, nil, "", err
	}
	if err := schema(p.SchemaVersion, judge.ProposalSchema); err != nil {
		return nil, nil, "", err
	}
	if b := r.Binding; b != (judge.Binding{}) {
		return nil, nil, "", badRequest("binding", "framework-derived; a runtime does not send it")
	}
	if err := enum("tool.kind", p.Tool.Kind, toolKinds, false); err != nil {
		return nil, nil, "", err
	}
	if err := enum("action.risk_class", string(p.Action.RiskClass), riskClasses, false); err != nil {
		return nil, nil, "", err
	}
	for i, a := range p.Authorization.UserAuthorizationRefs {
		if err := enum(fmt.Sprintf("authorization.user_authorization_refs.%d.kind", i), a.Kind, authRefKinds, false); err != nil {
			return nil, nil, "", err
		}
	}
	for i, s := range p.Evidence.SourceRefs {
		if err := enum(fmt.Sprintf("evidence.source_refs.%d.kind", i), s.Kind, sourceKinds, false); err != nil {
			return nil, nil, "", err
		}
	}
	if err := enum("expected_consequence.persistence", p.ExpectedConsequence.Persistence, persistences, true); err != nil {
		return nil, nil, "", err
	}
	if !strings.HasPrefix(p.Action.ArgumentsDigest, "sha256:") || len(p.Action.ArgumentsDigest) != len("sha256:")+64 {
		return nil, nil, "", badRequest("action.arguments_digest", "want sha256:<64 hex digits> of the canonical arguments")
	}
	if len(r.ToolInput) > 0 {
		canon, err := canonjson.Canonical(r.ToolInput)
		if err != nil || len(canon) == 0 || canon[0] != '{' {
			return nil, nil, "", badRequest("tool_input", "not a JSON object")
		}
		if canonjson.SHA256(canon) != p.Action.ArgumentsDigest {
			return nil, nil, "", badRequest("tool_input", "its canonical sha256 is not action.arguments_digest")
		}
	}
	session, field := "", "flow_id"
	switch {
	case p.FlowID != nil && *p.FlowID != "":
		session = *p.FlowID
	case p.TaskID != nil && *p.TaskID != "":
		session, field = *p.TaskID, "task_id"
	default:
		return nil, nil, "", badRequest("flow_id", "a proposal needs a flow_id or a task_id: its decision is recorded under that session")
	}
	if !home.ValidSessionID(session) {
		return nil, nil, "", badRequest(field, "must be 1-128 characters from [A-Za-z0-9._-], not starting with a dot")
	}
	if !policies.RiskClass(p.Action.RiskClass).Valid() {
		return nil, nil, "", badRequest("action.risk_class", "unknown")
	}
	return p, r.ToolInput, session, nil
}

// reviewBody is POST /v1/review-queue/{item_id}/actions.
type reviewBody struct {
	Action     string           `json:"action"`
	Note       string           `json:"note,omitempty"`
	As         store.UsePolicy  `json:"as,omitempty"`
	Summary    string           `json:"summary,omitempty"`
	Content    string           `json:"content,omitempty"`
	Visibility store.Visibility `json:"visibility,omitempty"`
	Project    string           `json:"project_id,omitempty"`
	Other      string           `json:"other_memory_id,omitempty"`
}

func parseReview(body []byte, id, actor string) (store.ReviewAction, error) {
	var b reviewBody
	if err := decode(body, &b, "action"); err != nil {
		return store.ReviewAction{}, err
	}
	if err := enum("action", b.Action, reviewActions, false); err != nil {
		return store.ReviewAction{}, err
	}
	if b.As != "" && b.As != store.Instruction && b.As != store.Evidence {
		return store.ReviewAction{}, badRequest("as", "confirm grants can_use_as_instruction or can_use_as_evidence, not %q", b.As)
	}
	if b.Visibility != "" && !b.Visibility.Valid() {
		return store.ReviewAction{}, badRequest("visibility", "unknown value %q", b.Visibility)
	}
	a := store.ReviewAction{ID: id, Action: b.Action, Actor: actor, Note: b.Note, As: b.As, Summary: b.Summary,
		Content: b.Content, Visibility: b.Visibility, Project: b.Project, Other: b.Other}
	if err := store.ValidateReview(a); err != nil {
		var ve *store.ValidationError
		if errors.As(err, &ve) && ve.Field == "other" {
			ve.Field = "other_memory_id"
		}
		return a, err
	}
	return a, nil
}

// approvalBody is POST /v1/approvals/{id}/actions.
type approvalBody struct {
	Action    string          `json:"action"`
	Note      string          `json:"note,omitempty"`
	Owner     string          `json:"owner,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

func parseApproval(body []byte, actor string) (store.Resolution, error) {
	var b approvalBody
	if err := decode(body, &b, "action"); err != nil {
		return store.Resolution{}, err
	}
	st, ok := approvalActs[b.Action]
	if !ok {
		return store.Resolution{}, badRequest("action", "unknown value %q; want approve, reject, modify or escalate", b.Action)
	}
	if st == store.ApprovalModified {
		var obj map[string]json.RawMessage
		if len(b.Arguments) == 0 || json.Unmarshal(b.Arguments, &obj) != nil || obj == nil {
			return store.Resolution{}, badRequest("arguments", "modify needs the edited arguments as a JSON object")
		}
	} else if len(b.Arguments) > 0 {
		return store.Resolution{}, badRequest("arguments", "only modify carries arguments")
	}
	return store.Resolution{Status: st, By: actor, Note: b.Note, Owner: b.Owner, Arguments: b.Arguments}, nil
}
