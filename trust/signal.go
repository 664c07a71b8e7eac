package trust

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docket/docket/ledger"
)

// Signal is one alignment rating of an agent's action.
type Signal struct {
	// ID names the signal so that it is applied once: the decision's
	// R-Tag, or session:seq of the entry it came from.
	ID    string    `json:"id"`
	Time  time.Time `json:"time"`
	Agent string    `json:"agent"`
	Tool  string    `json:"tool,omitempty"`
	Class string    `json:"class,omitempty"`
	// Rating is the alignment, 0 to 1; Neutral signals are not rated.
	Rating  float64 `json:"rating"`
	Neutral bool    `json:"neutral,omitempty"`
	// Misaligned counts toward a burst demotion; High stops graduation;
	// Critical demotes every key of the agent to level 0.
	Misaligned bool   `json:"misaligned,omitempty"`
	High       bool   `json:"high,omitempty"`
	Critical   bool   `json:"critical,omitempty"`
	Why        string `json:"why"`
	// Ref is the ledger entry it came from (session:seq).
	Ref string `json:"ref,omitempty"`
}

// Scope names: a tool, a risk class, or the agent as a whole.
const AllScope = "*"

// ToolScope and ClassScope name the scopes of a tool and a risk class.
func ToolScope(tool string) string   { return "tool:" + tool }
func ClassScope(class string) string { return "class:" + class }

// scopes lists the scopes a signal rates.
func (s *Signal) scopes() []string {
	out := []string{AllScope}
	if s.Tool != "" {
		out = append(out, ToolScope(s.Tool))
	}
	if s.Class != "" {
		out = append(out, ClassScope(s.Class))
	}
	return out
}

// AgentName is how trust names an agent: the runtime and the agent type,
// "main" for the top-level agent ("claude/main", "claude/Explore").
func AgentName(runtime, agentType string) string {
	if runtime == "" {
		runtime = "unknown"
	}
	if agentType == "" {
		agentType = "main"
	}
	return runtime + "/" + agentType
}

// SessionScan is where the reading of one session's ledger stopped and
// what it must remember to rate later entries.
type SessionScan struct {
	// Seq is the number of entries read; Size the ledger's byte length
	// then (a ledger of the same size is not read again).
	Seq  uint64 `json:"seq"`
	Size int64  `json:"size"`
	// Runtime is the session's runtime (entries docket writes itself say
	// "docket").
	Runtime string `json:"runtime,omitempty"`
	// Agents maps a subagent's agent_id to its agent name.
	Agents map[string]string `json:"agents,omitempty"`
	// Asks are interactive escalations not yet resolved: the call runs
	// (approved) or the turn ends without it (rejected).
	Asks []Signal `json:"asks,omitempty"`
	// Blocked are claim types the gate blocked, awaiting evidence.
	Blocked []string `json:"blocked,omitempty"`
	// Claimed are claim types the agent claimed in this session.
	Claimed []string `json:"claimed,omitempty"`
}

// decisionBody is what a judge_decision body says that trust reads.
type decisionBody struct {
	Outcome           string   `json:"outcome"`
	EnforcementAction string   `json:"enforcement_action"`
	Approval          string   `json:"approval"`
	RiskClass         string   `json:"risk_class"`
	RuleIDs           []string `json:"rule_ids"`
	FailureKind       string   `json:"failure_kind"`
	AmendedArgsHash   string   `json:"amended_arguments_hash"`
	RTag              string   `json:"r_tag"`
	Trust             *struct {
		Agent string `json:"agent"`
	} `json:"trust"`
}

type gateBody struct {
	Decision string `json:"decision"`
	Claims   []struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	} `json:"claims"`
}

type validatorBody struct {
	Claim string `json:"claim"`
}

// Scan rates the entries of one session's ledger that follow what sc
// has read (entries holds the whole verified ledger, in seq order) and
// advances sc. p decides which rule ids are critical and which classes
// high-priority.
func Scan(p *Policy, session string, sc *SessionScan, entries []*ledger.Entry) []Signal {
	var out []Signal
	if sc.Agents == nil {
		sc.Agents = map[string]string{}
	}
	for _, e := range entries {
		if e.Seq < sc.Seq {
			continue
		}
		sc.Seq = e.Seq + 1
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			continue
		}
		ref := fmt.Sprintf("%s:%d", session, e.Seq)
		if sc.Runtime == "" && e.Runtime != "" && e.Runtime != "docket" {
			sc.Runtime = e.Runtime
		}
		mainAgent := AgentName(sc.Runtime, "")
		switch e.Kind {
		case ledger.KindJudgeDecision:
			var b decisionBody
			if json.Unmarshal(e.Body, &b) != nil {
				continue
			}
			agent := AgentName(e.Runtime, "")
			if b.Trust != nil && b.Trust.Agent != "" {
				agent = b.Trust.Agent
			} else if e.AgentID != "" {
				agent = AgentName(e.Runtime, "subagent")
			}
			if e.AgentID != "" {
				sc.Agents[e.AgentID] = agent
			}
			s := Signal{ID: nonEmpty(b.RTag, ref), Time: t, Agent: agent, Tool: e.Tool, Class: b.RiskClass, Ref: ref}
			high := slices.Contains(p.HighPriorityClasses, b.RiskClass)
			if rule := p.critical(b.Outcome, b.RuleIDs); rule != "" {
				s.Misaligned, s.High, s.Critical, s.Why = true, true, true, "critical: "+rule
				out = append(out, s)
				continue
			}
			switch {
			case b.FailureKind != "":
				continue // the judge failed: not the agent's doing
			case b.EnforcementAction == "approval_granted" && b.AmendedArgsHash != "":
				s.Neutral, s.Why = true, "approved with modified arguments"
			case b.EnforcementAction == "approval_granted":
				s.Rating, s.Why = 1, "approved by a human"
			case b.EnforcementAction == "approval_denied":
				s.Misaligned, s.High, s.Why = true, high, "rejected by a human"
			case b.EnforcementAction == "approval_expired" || b.Approval == "pending":
				s.Neutral, s.Why = true, "approval expired or pending"
			case b.EnforcementAction == "ask":
				s.Why, s.Ref = "interactive approval", ref+"|"+e.ToolUseID
				sc.Asks = append(sc.Asks, s)
				continue
			case b.Outcome == "block":
				s.Misaligned, s.High, s.Why = true, high, "blocked by policy"
			case b.Outcome == "revise" || b.Outcome == "escalate":
				s.Neutral, s.Why = true, b.Outcome
			case b.Outcome == "allow":
				s.Rating, s.Why = 1, "allowed by policy"
			default:
				continue
			}
			out = append(out, s)
		case ledger.KindToolCall, ledger.KindToolFailure:
			for i, a := range sc.Asks {
				if e.ToolUseID != "" && askToolUse(a) == e.ToolUseID {
					a.Rating, a.Why, a.Time = 1, "approved by a human (interactive)", t
					out = append(out, a)
					sc.Asks = slices.Delete(sc.Asks, i, i+1)
					break
				}
			}
		case ledger.KindUserPrompt, ledger.KindGateDecision:
			// the turn ended: an ask whose call never ran was refused
			for _, a := range sc.Asks {
				a.Misaligned, a.High, a.Why, a.Time = true, slices.Contains(p.HighPriorityClasses, a.Class), "rejected by a human (interactive)", t
				a.Rating = 0
				out = append(out, a)
			}
			sc.Asks = nil
			if e.Kind != ledger.KindGateDecision {
				continue
			}
			var b gateBody
			if json.Unmarshal(e.Body, &b) != nil {
				continue
			}
			agent := mainAgent
			if e.AgentID != "" {
				agent = nonEmpty(sc.Agents[e.AgentID], AgentName(sc.Runtime, "subagent"))
			}
			unsupported := false
			for _, c := range b.Claims {
				if c.Type == "" {
					continue
				}
				sc.Claimed = addOnce(sc.Claimed, c.Type)
				if c.Status != "supported" {
					unsupported = true
					if b.Decision == "block" {
						sc.Blocked = addOnce(sc.Blocked, c.Type)
					}
				}
			}
			if b.Decision == "release" && unsupported {
				out = append(out, Signal{ID: ref, Time: t, Agent: agent, Misaligned: true, High: true, Why: "gate released unsupported claims", Ref: ref})
			}
		case ledger.KindValidatorPass, ledger.KindValidatorFail:
			var b validatorBody
			if json.Unmarshal(e.Body, &b) != nil || b.Claim == "" {
				continue
			}
			if e.Kind == ledger.KindValidatorPass {
				if i := slices.Index(sc.Blocked, b.Claim); i >= 0 {
					sc.Blocked = slices.Delete(sc.Blocked, i, i+1)
					out = append(out, Signal{ID: ref, Time: t, Agent: mainAgent, Rating: 1, Why: "evidence after a gate block (" + b.Claim + ")", Ref: ref})
				}
				continue
			}
			if slices.Contains(sc.Claimed, b.Claim) {
				out = append(out, Signal{ID: ref, Time: t, Agent: mainAgent, Misaligned: true, Why: "validator failed after a " + b.Claim + " claim", Ref: ref})
			}
		}
	}
	return out
}

// askToolUse returns the tool_use_id an ask waits for (a pending ask's
// Ref is "session:seq|tool_use_id").
func askToolUse(a Signal) string {
	_, id, _ := strings.Cut(a.Ref, "|")
	return id
}

// critical returns the first rule id that makes a decision a critical
// violation (a block under CriticalRules, an escalation under
// CriticalEscalations), or "".
func (p *Policy) critical(outcome string, rules []string) string {
	var pats []string
	switch outcome {
	case "block":
		pats = p.CriticalRules
	case "escalate":
		pats = p.CriticalEscalations
	}
	for _, r := range rules {
		for _, pat := range pats {
			if matchRule(pat, r) {
				return r
			}
		}
	}
	return ""
}

// IsCritical reports whether a decision of outcome under rules is a
// critical violation.
func (p *Policy) IsCritical(outcome string, rules []string) bool {
	return p.critical(outcome, rules) != ""
}

// matchRule matches a rule id against a pattern with "*" wildcards,
// case-insensitively.
func matchRule(pat, s string) bool {
	pat, s = strings.ToLower(pat), strings.ToLower(s)
	parts := strings.Split(pat, "*")
	if len(parts) == 1 {
		return pat == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, part := range parts[1:] {
		last := i == len(parts)-2
		if last {
			return strings.HasSuffix(s, part)
		}
		j := strings.Index(s, part)
		if j < 0 {
			return false
		}
		s = s[j+len(part):]
	}
	return true
}

func addOnce(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
