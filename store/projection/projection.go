// Package projection turns ledger entries into observed, evidence-only
// memories: judge blocks and escalations, stop-gate blocks and validator
// failures. It reads entries only — the ledger stays the raw evidence and
// is never rewritten — and is idempotent: each entry is keyed by session,
// seq and hash, so projecting the same entries again (or concurrently)
// adds nothing, and a recurring pattern reinforces its memory instead of
// adding one.
package projection

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/firewall"
)

// Scope says where projected memories belong.
type Scope struct {
	Workspace string
	Project   string
	// Visibility defaults to project when Project is set, else workspace.
	Visibility store.Visibility
}

// Confidence of a projected observation: it records a concrete event.
const Confidence = 0.9

// body holds the entry body fields projection reads; unknown fields are
// ignored so the producers may add more.
type body struct {
	Outcome      string      `json:"outcome"`  // judge_decision
	Decision     string      `json:"decision"` // gate_decision (and older judge bodies)
	Reason       string      `json:"reason"`
	RiskClass    string      `json:"risk_class"`
	RuleIDs      []string    `json:"rule_ids"`
	EscalationID string      `json:"escalation_id"`
	Claims       []claimBody `json:"claims"`
	Claim        string      `json:"claim"`     // validator_fail
	Validator    string      `json:"validator"` // validator_fail
}

type claimBody struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

// Memory returns the memory one entry projects to, and false when the entry
// is not one that projects (allowed calls, passes, tool calls, seals).
func Memory(e *ledger.Entry, sc Scope) (store.Memory, bool) {
	if e == nil || e.Session == "" || e.Hash == "" {
		return store.Memory{}, false
	}
	var b body
	if len(e.Body) > 0 && json.Unmarshal(e.Body, &b) != nil {
		return store.Memory{}, false
	}
	tool := e.Tool
	var summary, pattern string
	ents := []string{}
	if tool != "" {
		ents = append(ents, "tool:"+tool)
	}
	switch e.Kind {
	case ledger.KindJudgeDecision:
		out := b.Outcome
		if out == "" {
			out = b.Decision
		}
		switch out {
		case "block", "deny":
			summary = fmt.Sprintf("judge blocked a %s call", orDash(tool))
		case "escalate", "ask":
			summary = fmt.Sprintf("judge escalated a %s call for human approval", orDash(tool))
		default:
			return store.Memory{}, false
		}
		if b.RiskClass != "" {
			ents = append(ents, "topic:"+b.RiskClass)
		}
		for _, r := range b.RuleIDs {
			ents = append(ents, "rule:"+r)
		}
		pattern = "judge|" + out + "|" + tool + "|" + norm(b.Reason)
	case ledger.KindGateDecision:
		if b.Decision != "block" {
			return store.Memory{}, false
		}
		var types []string
		for _, c := range b.Claims {
			if c.Status != "" && c.Status != "supported" && c.Status != "pass" && c.Status != "verified" {
				types = append(types, c.Type)
				ents = append(ents, "claim:"+c.Type)
			}
		}
		summary = "stop gate blocked an unsupported claim"
		if len(types) > 0 {
			summary = "stop gate blocked unsupported claims: " + strings.Join(types, ", ")
		}
		pattern = "gate|" + strings.Join(types, ",") + "|" + norm(b.Reason)
	case ledger.KindValidatorFail:
		summary = fmt.Sprintf("validator %s failed for claim %s", orDash(b.Validator), orDash(b.Claim))
		if b.Validator != "" {
			ents = append(ents, "validator:"+b.Validator)
		}
		if b.Claim != "" {
			ents = append(ents, "claim:"+b.Claim)
		}
		pattern = "validator|" + b.Validator + "|" + b.Claim + "|" + norm(b.Reason)
	default:
		return store.Memory{}, false
	}
	content := summary
	if r := strings.TrimSpace(b.Reason); r != "" {
		if len(r) > 600 {
			r = r[:600] + "…"
		}
		if why := firewall.Check(r); why != "" {
			r = "(reason withheld: " + why + ")"
		}
		content = summary + ": " + r
	}
	at, _ := time.Parse(time.RFC3339Nano, e.Time)
	vis := sc.Visibility
	if vis == "" {
		vis = store.WorkspaceVisible
		if sc.Project != "" {
			vis = store.ProjectVisible
		}
	}
	sum := sha256.Sum256([]byte(pattern))
	return store.Memory{
		Summary: summary,
		Content: content,
		Source: store.Source{
			Kind:      "system_event",
			URI:       fmt.Sprintf("ledger:%s#%d", e.Session, e.Seq),
			Title:     string(e.Kind),
			Timestamp: at,
		},
		Provenance: store.Provenance{Status: store.Observed, Confidence: Confidence, CreatedBy: "system", Runtime: e.Runtime},
		UsePolicy:  store.Evidence,
		UseReason:  "observed ledger event; evidence, never an instruction",
		Freshness:  store.Freshness{CreatedAt: at},
		Scope:      store.Scope{Workspace: sc.Workspace, Project: sc.Project, Visibility: vis},
		Entities:   ents,
		PatternKey: "p1:" + hex.EncodeToString(sum[:12]),
		Lineage:    store.Lineage{Session: e.Session, Seq: e.Seq, EntryHash: e.Hash},
	}, true
}

// Result counts what Apply did.
type Result struct {
	Created, Reinforced, Duplicate, Skipped int
}

// Apply projects entries into s in order. Entries already projected count
// as Duplicate; entries that do not project as Skipped. It stops at the
// first store error.
func Apply(ctx context.Context, s store.Store, sc Scope, entries []*ledger.Entry) (Result, error) {
	var r Result
	if sc.Workspace == "" {
		return r, fmt.Errorf("project ledger: no workspace")
	}
	for _, e := range entries {
		m, ok := Memory(e, sc)
		if !ok {
			r.Skipped++
			continue
		}
		_, res, err := s.Observe(ctx, m)
		if err != nil {
			return r, fmt.Errorf("project %s#%d: %w", e.Session, e.Seq, err)
		}
		switch res {
		case store.Created:
			r.Created++
		case store.Reinforced:
			r.Reinforced++
		case store.Duplicate:
			r.Duplicate++
		}
	}
	return r, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// norm reduces a reason to its recurring shape: lowercase words, numbers
// and hashes dropped, at most 12 words.
func norm(s string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if strings.IndexFunc(w, unicode.IsDigit) >= 0 {
			continue
		}
		words = append(words, w)
		if len(words) == 12 {
			break
		}
	}
	return strings.Join(words, " ")
}
