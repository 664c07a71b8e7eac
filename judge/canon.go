package judge

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/docket/docket/internal/canonjson"
)

// The canonical encodings of the two values every call hashes or
// records, the proposal's wire form (its digest) and the decision (the
// judge_decision entry's body), written field by field: object keys in
// bytewise order, no insignificant white space, strings as canonjson
// writes them. They are byte for byte canonjson.Canonical(json.Marshal(v))
// (canon_test.go compares them on generated values), without
// encoding/json's reflection: its per-type setup for these two large
// types was paid again by every hook process, on every call.

// appendCanonical appends the canonical encoding of p's wire form.
func (p *ActionProposal) appendCanonical(b []byte) []byte {
	b = append(b, `{"action":{"arguments_digest":`...)
	b = canonString(b, p.Action.ArgumentsDigest)
	b = append(b, `,"description":`...)
	b = canonString(b, p.Action.Description)
	b = append(b, `,"full_arguments_ref":`...)
	b = canonStringPtr(b, p.Action.FullArgumentsRef)
	b = append(b, `,"risk_class":`...)
	b = canonString(b, string(p.Action.RiskClass))
	b = append(b, `,"target":`...)
	b = canonStringPtr(b, p.Action.Target)

	b = append(b, `},"action_id":`...)
	b = canonString(b, p.ActionID)
	b = append(b, `,"actor":{"agent_id":`...)
	b = canonString(b, p.Actor.AgentID)
	b = append(b, `,"model":`...)
	b = canonStringPtr(b, p.Actor.Model)
	b = append(b, `,"provider":`...)
	b = canonStringPtr(b, p.Actor.Provider)
	b = append(b, `,"role":`...)
	b = canonStringPtr(b, p.Actor.Role)

	b = append(b, `},"authorization":{"claimed_user_authorization":`...)
	b = canonStringPtr(b, p.Authorization.ClaimedUserAuthorization)
	b = append(b, `,"user_authorization_refs":`...)
	if p.Authorization.UserAuthorizationRefs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range p.Authorization.UserAuthorizationRefs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"kind":`...)
			b = canonString(b, r.Kind)
			b = append(b, `,"quote_or_summary":`...)
			b = canonString(b, r.QuoteOrSummary)
			b = append(b, `,"timestamp":`...)
			b = canonStringPtr(b, r.Timestamp)
			b = append(b, `,"uri":`...)
			b = canonStringPtr(b, r.URI)
			b = append(b, '}')
		}
		b = append(b, ']')
	}

	b = append(b, `},"binding":{"arguments_hash":`...)
	b = canonString(b, p.Binding.ArgumentsHash)
	b = append(b, `,"session_id":`...)
	b = canonString(b, p.Binding.SessionID)
	b = append(b, `,"side_channel":`...)
	b = canonString(b, p.Binding.SideChannel)
	b = append(b, `,"tool_definition_hash":`...)
	b = canonString(b, p.Binding.ToolDefinitionHash)
	b = append(b, `,"tool_use_id":`...)
	b = canonString(b, p.Binding.ToolUseID)

	b = append(b, `},"evidence":{"source_refs":`...)
	if p.Evidence.SourceRefs == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range p.Evidence.SourceRefs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"kind":`...)
			b = canonString(b, r.Kind)
			b = append(b, `,"summary":`...)
			b = canonString(b, r.Summary)
			b = append(b, `,"timestamp":`...)
			b = canonStringPtr(b, r.Timestamp)
			b = append(b, `,"title":`...)
			b = canonStringPtr(b, r.Title)
			b = append(b, `,"uri":`...)
			b = canonStringPtr(b, r.URI)
			b = append(b, '}')
		}
		b = append(b, ']')
	}

	ec := &p.ExpectedConsequence
	b = append(b, `},"expected_consequence":{"data_exposed":`...)
	b = canonStrings(b, ec.DataExposed)
	b = append(b, `,"external_recipients":`...)
	b = canonStrings(b, ec.ExternalRecipients)
	b = append(b, `,"persistence":`...)
	b = canonString(b, ec.Persistence)
	b = append(b, `,"summary":`...)
	b = canonString(b, ec.Summary)
	b = append(b, `,"systems_changed":`...)
	b = canonStrings(b, ec.SystemsChanged)

	b = append(b, `},"flow_id":`...)
	b = canonStringPtr(b, p.FlowID)
	b = append(b, `,"idempotency_key":`...)
	b = canonString(b, p.IdempotencyKey)
	b = append(b, `,"project_id":`...)
	b = canonStringPtr(b, p.ProjectID)

	b = append(b, `,"rollback":{"is_reversible":`...)
	b = canonBool(b, p.Rollback.IsReversible)
	b = append(b, `,"rollback_owner":`...)
	b = canonStringPtr(b, p.Rollback.RollbackOwner)
	b = append(b, `,"rollback_plan":`...)
	b = canonStringPtr(b, p.Rollback.RollbackPlan)

	b = append(b, `},"runtime":{"adapter":`...)
	b = canonStringPtr(b, p.Runtime.Adapter)
	b = append(b, `,"name":`...)
	b = canonString(b, p.Runtime.Name)
	b = append(b, `,"version":`...)
	b = canonStringPtr(b, p.Runtime.Version)

	b = append(b, `},"schema_version":`...)
	b = canonString(b, p.SchemaVersion)

	s := &p.Sensitivity
	b = append(b, `,"sensitivity":{"contains_customer_data":`...)
	b = canonBool(b, s.ContainsCustomerData)
	b = append(b, `,"contains_financial_or_legal_data":`...)
	b = canonBool(b, s.ContainsFinancialOrLegalData)
	b = append(b, `,"contains_private_personal_data":`...)
	b = canonBool(b, s.ContainsPrivatePersonalData)
	b = append(b, `,"contains_production_system_access":`...)
	b = canonBool(b, s.ContainsProductionSystemAccess)
	b = append(b, `,"contains_secret_like_data":`...)
	b = canonBool(b, s.ContainsSecretLikeData)

	b = append(b, `},"task_id":`...)
	b = canonStringPtr(b, p.TaskID)

	b = append(b, `,"tool":{"kind":`...)
	b = canonString(b, p.Tool.Kind)
	b = append(b, `,"name":`...)
	b = canonString(b, p.Tool.Name)
	b = append(b, `,"target_system":`...)
	b = canonStringPtr(b, p.Tool.TargetSystem)

	b = append(b, `},"workspace_id":`...)
	b = canonString(b, p.WorkspaceID)
	return append(b, '}')
}

// canonicalBody returns the canonical encoding of d as the
// judge_decision entry's body (the fields with a json name; empty
// omitempty fields left out). ok is false for a value encoding/json
// refuses (a NaN or infinite trust score): the caller then takes the
// reflective path, which reports the error.
func (d *Decision) canonicalBody() (b []byte, ok bool) {
	b = make([]byte, 0, 1024)
	b = append(b, `{"action_id":`...)
	b = canonString(b, d.ActionID)
	if d.AmendedArgsHash != "" {
		b = append(b, `,"amended_arguments_hash":`...)
		b = canonString(b, d.AmendedArgsHash)
	}
	if d.AmendedRiskClass != "" {
		b = append(b, `,"amended_risk_class":`...)
		b = canonString(b, string(d.AmendedRiskClass))
	}
	if d.Approval != "" {
		b = append(b, `,"approval":`...)
		b = canonString(b, d.Approval)
	}
	b = append(b, `,"arguments_hash":`...)
	b = canonString(b, d.ArgumentsHash)
	if len(d.ClassReasons) > 0 {
		b = append(b, `,"class_reasons":`...)
		b = canonStrings(b, d.ClassReasons)
	}
	b = append(b, `,"cost":{`...)
	if d.Cost.Calls != 0 {
		b = append(b, `"calls":`...)
		b = strconv.AppendInt(b, int64(d.Cost.Calls), 10)
		b = append(b, ',')
	}
	b = append(b, `"cost_source":`...)
	b = canonString(b, d.Cost.Source)
	if d.Cost.InputTokens != 0 {
		b = append(b, `,"input_tokens":`...)
		b = strconv.AppendInt(b, int64(d.Cost.InputTokens), 10)
	}
	if d.Cost.OutputTokens != 0 {
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(d.Cost.OutputTokens), 10)
	}
	b = append(b, `},"cost_source":`...)
	b = canonString(b, d.CostSource)
	b = append(b, `,"duration_us":`...)
	b = strconv.AppendInt(b, d.DurationMicros, 10)
	b = append(b, `,"enforcement_action":`...)
	b = canonString(b, d.EnforcementAction)
	if d.EscalationID != "" {
		b = append(b, `,"escalation_id":`...)
		b = canonString(b, d.EscalationID)
	}
	if d.FailureKind != "" {
		b = append(b, `,"failure_kind":`...)
		b = canonString(b, d.FailureKind)
	}
	b = append(b, `,"headless":`...)
	b = canonBool(b, d.Headless)
	b = append(b, `,"idempotency_key":`...)
	b = canonString(b, d.IdempotencyKey)
	b = append(b, `,"judge_id":`...)
	b = canonString(b, d.JudgeID)
	b = append(b, `,"judges":`...)
	b = canonStrings(b, d.Judges)
	b = append(b, `,"memories_used":`...)
	if d.MemoriesUsed == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, u := range d.MemoriesUsed {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"memory_id":`...)
			b = canonString(b, u.MemoryID)
			b = append(b, `,"used_as":`...)
			b = canonString(b, u.UsedAs)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"mode":`...)
	b = canonString(b, d.Mode)
	if d.OTag != "" {
		b = append(b, `,"o_tag":`...)
		b = canonString(b, d.OTag)
	}
	b = append(b, `,"outcome":`...)
	b = canonString(b, string(d.Outcome))
	b = append(b, `,"policy_version":`...)
	b = canonString(b, d.PolicyVersion)
	b = append(b, `,"proposal_digest":`...)
	b = canonString(b, d.ProposalDigest)
	if d.RTag != "" {
		b = append(b, `,"r_tag":`...)
		b = canonString(b, d.RTag)
	}
	b = append(b, `,"raw_outcome":`...)
	b = canonString(b, string(d.RawOutcome))
	b = append(b, `,"reason":`...)
	b = canonString(b, d.Reason)
	b = append(b, `,"recall":`...)
	b = canonString(b, d.Recall)
	if d.RequiredRevision != "" {
		b = append(b, `,"required_revision":`...)
		b = canonString(b, d.RequiredRevision)
	}
	b = append(b, `,"risk_class":`...)
	b = canonString(b, string(d.RiskClass))
	if len(d.RuleIDs) > 0 {
		b = append(b, `,"rule_ids":`...)
		b = canonStrings(b, d.RuleIDs)
	}
	b = append(b, `,"side_channel":`...)
	b = canonString(b, d.SideChannel)
	b = append(b, `,"tool_definition_hash":`...)
	b = canonString(b, d.ToolDefinitionHash)
	if d.ToolUseID != "" {
		b = append(b, `,"tool_use_id":`...)
		b = canonString(b, d.ToolUseID)
	}
	if t := d.Trust; t != nil {
		b = append(b, `,"trust":{"action":`...)
		b = canonString(b, t.Action)
		b = append(b, `,"agent":`...)
		b = canonString(b, t.Agent)
		b = append(b, `,"enforced":`...)
		b = canonBool(b, t.Enforced)
		b = append(b, `,"level":`...)
		b = strconv.AppendInt(b, int64(t.Level), 10)
		b = append(b, `,"mode":`...)
		b = canonString(b, t.Mode)
		if t.ReviewID != "" {
			b = append(b, `,"review_id":`...)
			b = canonString(b, t.ReviewID)
		}
		b = append(b, `,"scope":`...)
		b = canonString(b, t.Scope)
		b = append(b, `,"score":`...)
		if b, ok = canonFloat(b, t.Score); !ok {
			return nil, false
		}
		if t.Warning != "" {
			b = append(b, `,"warning":`...)
			b = canonString(b, t.Warning)
		}
		b = append(b, '}')
	}
	if v := d.VPol; v != nil {
		b = append(b, `,"v_pol":{"rule":`...)
		b = canonString(b, v.Rule)
		b = append(b, `,"version":`...)
		b = canonString(b, v.Version)
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// entryBody is what the judge_decision entry records of d: its canonical
// encoding, or d itself (encoded by the ledger) when that fails.
func (d *Decision) entryBody() any {
	if b, ok := d.canonicalBody(); ok {
		return json.RawMessage(b)
	}
	return d
}

func canonBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

func canonStringPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return canonString(b, *s)
}

func canonStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonString(b, s)
	}
	return append(b, ']')
}

// canonFloat appends f as encoding/json writes a float64 (the canonical
// form keeps a number as first written); false for NaN and infinities.
func canonFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json writes it
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// canonString appends s quoted as canonjson writes it: encoding/json's
// escaping without the HTML escapes (canonjson.AppendString), with each
// byte of invalid UTF-8 replaced by U+FFFD, as decoding the first
// encoding's \ufffd gives it.
func canonString(b []byte, s string) []byte {
	if utf8.ValidString(s) {
		return canonjson.AppendString(b, s)
	}
	v := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			v = append(v, "\uFFFD"...)
		} else {
			v = append(v, s[i:i+size]...)
		}
		i += size
	}
	return canonjson.AppendString(b, string(v))
}
