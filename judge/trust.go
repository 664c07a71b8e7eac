package judge

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/trust"
)

// Tags are the tag trinity every decision carries (see package trust):
// its R-Tag, the O-Tag of the chain it belongs to, and the V-Pol that
// governed it; and, when trust levels are wired, what the level did.
type Tags struct {
	RTag  string     `json:"r_tag,omitempty"`
	OTag  string     `json:"o_tag,omitempty"`
	VPol  *VPol      `json:"v_pol,omitempty"`
	Trust *TrustNote `json:"trust,omitempty"`
}

// VPol is a decision's authority: the policy version of its chain and
// the rule that decided.
type VPol struct {
	Version string `json:"version"`
	Rule    string `json:"rule"`
}

// TrustNote records the monitoring level a decision was made under.
type TrustNote struct {
	Agent string  `json:"agent"`
	Level int     `json:"level"`
	Score float64 `json:"score"`
	// Scope is the key that set the level (the lowest of the tool's,
	// the class's and the agent's).
	Scope string `json:"scope"`
	Mode  string `json:"mode"`
	// Action is what the level asked for: none, escalate, sample_escalate,
	// post_exec_review, spot_check; Enforced says whether it was done
	// (false in observe mode and when a stricter outcome stood).
	Action   string `json:"action"`
	Enforced bool   `json:"enforced"`
	// ReviewID is the post-exec review item queued for the call.
	ReviewID string `json:"review_id,omitempty"`
	Warning  string `json:"warning,omitempty"`
}

// Trust wires monitoring levels and origins into an engine. Build it with
// LoadTrust; it reads the MAC'd summary once, not the ledger.
type Trust struct {
	Home    home.Home
	Keys    *ledger.Keys
	Policy  trust.Policy
	Summary *trust.Summary
	// Warning is why the policy or the summary could not be read (the
	// levels then fail closed: every key at level 0, enforce mode for a
	// broken policy).
	Warning string
	// NoRecord skips recording critical violations at once (tests).
	NoRecord bool
}

// LoadTrust reads the trust policy and the level summary under h.
func LoadTrust(h home.Home, keys *ledger.Keys) *Trust {
	t := &Trust{Home: h, Keys: keys}
	var warn []string
	p, err := trust.LoadPolicy(h)
	if err != nil {
		warn = append(warn, err.Error())
	}
	t.Policy = p
	sm, err := trust.LoadSummary(h, keys)
	if err != nil {
		warn = append(warn, "trust levels: "+err.Error()+"; every agent is at level 0")
	}
	t.Summary = sm
	t.Warning = strings.Join(warn, "; ")
	return t
}

// Level returns the level of agent for a tool of a class at now: the
// lowest of the tool's, the class's and the agent's overall level (a
// key never seen is at level 0).
func (t *Trust) Level(agent, tool string, class RiskClass, now time.Time) (level int, score float64, scope string) {
	level = trust.MaxLevel + 1
	for _, sc := range []string{trust.ToolScope(tool), trust.ClassScope(string(class)), trust.AllScope} {
		k, _ := t.Summary.Level(agent, sc, now)
		if k.Level < level {
			level, score, scope = k.Level, k.Score, sc
		}
	}
	return level, score, scope
}

// sampled reports whether a call falls in a sample of the given rate,
// deterministically: the same call (tool, arguments, session) always
// gets the same answer.
func sampled(tool, argsDigest, session string, rate float64) bool {
	if rate <= 0 {
		return false
	}
	h := sha256.Sum256([]byte("docket-trust-sample\n" + tool + "\n" + argsDigest + "\n" + session))
	u := float64(binary.BigEndian.Uint64(h[:8])>>11) / float64(1<<53)
	return u < rate
}

// tag sets the decision's tags and applies its monitoring level. session
// is the hook's session ("" for a proposal a runtime sent). It runs after
// the judges and the class policy and before enforcement: trust only
// ever turns an allow into an escalation; blocks, revisions and
// escalations stand, and a call a built-in protection blocked stays
// blocked whatever the level.
func (e *Engine) tag(ctx context.Context, d *Decision, p *ActionProposal, agent, session string) {
	if p == nil {
		return
	}
	d.RTag = trust.RTag(d.IdempotencyKey)
	chainVersion := d.PolicyVersion
	t := e.Trust
	switch {
	case session == "" && p.FlowID != nil && *p.FlowID != "":
		d.OTag = "flow:" + *p.FlowID
	case session == "" && p.TaskID != nil && *p.TaskID != "":
		d.OTag = "task:" + *p.TaskID
	case session != "" && t != nil && t.Keys != nil:
		if o, ok, _ := trust.ReadOrigin(t.Home, t.Keys, session); ok {
			d.OTag = o.OTag
			if o.PolicyVersion == "" {
				// the chain's first decision sets its V-Pol
				o.PolicyVersion = d.PolicyVersion
				_ = trust.WriteOrigin(t.Home, t.Keys, o)
			}
			chainVersion = o.PolicyVersion
		}
	}
	defer func() { d.VPol = &VPol{Version: chainVersion, Rule: governingRule(d)} }()
	if t == nil {
		return
	}
	now := e.now()
	level, score, scope := t.Level(agent, p.Tool.Name, d.RiskClass, now)
	n := &TrustNote{Agent: agent, Level: level, Score: score, Scope: scope, Mode: t.Policy.Mode, Action: "none", Warning: t.Warning}
	d.Trust = n
	if t.Warning != "" {
		d.Warnings = append(d.Warnings, "trust: "+t.Warning)
	}
	if t.Policy.IsCritical(string(d.Outcome), d.RuleIDs) && !t.NoRecord && t.Keys != nil && d.RTag != "" {
		// a critical violation demotes now, not at the next refresh
		st := &trust.Store{Home: t.Home, Keys: t.Keys, LockWait: time.Second}
		sig := trust.Signal{ID: d.RTag, Time: now, Agent: agent, Tool: p.Tool.Name, Class: string(d.RiskClass),
			Misaligned: true, High: true, Critical: true, Why: "critical: " + firstCritical(&t.Policy, string(d.Outcome), d.RuleIDs)}
		if err := st.Record(&t.Policy, []trust.Signal{sig}, now); err != nil {
			d.Warnings = append(d.Warnings, "trust: "+err.Error())
		}
	}
	if d.RiskClass == policies.ReadOnly {
		return
	}
	switch level {
	case trust.ReviewAll:
		n.Action = "escalate"
	case trust.PreExecSampling:
		if sampled(p.Tool.Name, d.ArgumentsHash, p.Binding.SessionID, t.Policy.SampleRate) {
			n.Action = "sample_escalate"
		}
	case trust.PostExecReview:
		n.Action = "post_exec_review"
	case trust.SpotCheck:
		if sampled(p.Tool.Name, d.ArgumentsHash, p.Binding.SessionID, t.Policy.SpotCheckRate) {
			n.Action = "spot_check"
		}
	}
	if n.Action == "none" || t.Policy.Mode != trust.ModeEnforce || d.Outcome != Allow {
		return
	}
	n.Enforced = true
	switch n.Action {
	case "escalate", "sample_escalate":
		why := fmt.Sprintf("trust level %d (%s) for %s on %s, score %.2f", level, trust.LevelName(level), agent, scope, score)
		if n.Action == "sample_escalate" {
			why += ": this call is in the pre-execution review sample"
		} else {
			why += ": every call that is not read-only needs approval"
		}
		d.Outcome = Escalate
		d.EnforcementAction = ""
		d.Reason = nonEmpty(d.Reason, "allowed") + "; " + why
		d.RuleIDs = append(d.RuleIDs, fmt.Sprintf("trust:level_%d", level))
	case "post_exec_review", "spot_check":
		// the call runs; a human reviews it afterwards
		if e.Approvals == nil {
			n.Warning = strings.TrimPrefix(n.Warning+"; no review queue for the post-execution review", "; ")
			return
		}
		wire, _ := json.Marshal(p)
		id, err := e.Approvals.Submit(ctx, ApprovalItem{
			SessionID: p.Binding.SessionID, ActionID: p.ActionID, ToolName: p.Tool.Name, RiskClass: d.RiskClass,
			Summary: p.Action.Description, Reason: fmt.Sprintf("post-execution review (trust level %d, %s): %s", level, trust.LevelName(level), d.Reason),
			Proposal: wire, ArgumentsDigest: p.Binding.ArgumentsHash, ExpiresAt: now.Add(7 * 24 * time.Hour),
		})
		if err != nil {
			n.Warning = strings.TrimPrefix(n.Warning+"; review queue: "+err.Error(), "; ")
			return
		}
		n.ReviewID = id
	}
}

// governingRule is the rule a V-Pol names: the trust level when it
// escalated, else the first rule the judges cited, else the class policy.
func governingRule(d *Decision) string {
	for _, id := range d.RuleIDs {
		if strings.HasPrefix(id, "trust:") {
			return id
		}
	}
	if len(d.RuleIDs) > 0 {
		return d.RuleIDs[0]
	}
	if d.FailureKind != "" {
		return "failure_policy:" + d.FailureKind
	}
	return "class:" + string(d.RiskClass)
}

func firstCritical(p *trust.Policy, outcome string, rules []string) string {
	for _, r := range rules {
		if p.IsCritical(outcome, []string{r}) {
			return r
		}
	}
	return ""
}
