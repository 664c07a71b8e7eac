package store

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docket/docket/store/firewall"
)

// WritePlan is what WriteDecision stores for one decision, computed by
// PlanWrite: the decision (with its firewall-refused fields withheld), the
// candidate memories that passed, their review items, and the refusals.
type WritePlan struct {
	Decision   Decision
	Memories   []Memory
	Review     []ReviewItem
	Rejections []Rejection
}

// Result is the WriteResult of a plan that was stored.
func (p *WritePlan) Result() WriteResult {
	r := WriteResult{DecisionID: p.Decision.DecisionID, Rejections: p.Rejections}
	for _, m := range p.Memories {
		r.Memories = append(r.Memories, m.ID)
	}
	for _, it := range p.Review {
		r.Review = append(r.Review, it.ID)
	}
	return r
}

// withheld replaces a refused decision field.
func withheld(reason string) string { return "[withheld by write-back firewall: " + reason + "]" }

var checkValues = []string{"", "pass", "fail", "uncertain", "not_applicable"}

// PlanWrite validates a decision and decides what to store:
//
//   - malformed decisions are a *ValidationError;
//   - full tool arguments are never stored, nor a full_arguments_ref
//     without a retention policy: refused and recorded as rejections;
//   - a reasoning summary that is a transcript, a reasoning trace, a dump
//     or holds a secret is withheld (rejection recorded); the decision is
//     still stored;
//   - each memory_to_write candidate that fails the firewall is refused
//     with its reason; the others become memories: purely observed
//     decisions and failures from a non-human judge are evidence-only and
//     skip review; everything else (lessons, constraints, open questions,
//     inferred or generated text, anything marked requires_review) waits
//     as requires_confirmation in the review queue, suggested as
//     instruction for lessons and constraints and as evidence otherwise;
//     a human judge's candidates are human corrections and enter review
//     with high priority. A non-human judge cannot claim user_confirmed.
func PlanWrite(d Decision, now time.Time) (WritePlan, error) {
	now = now.UTC().Truncate(time.Millisecond)
	if d.SchemaVersion == "" {
		d.SchemaVersion = DecisionSchema
	}
	switch {
	case d.SchemaVersion != DecisionSchema:
		return WritePlan{}, invalid("schema_version", "want %s", DecisionSchema)
	case d.Workspace == "":
		return WritePlan{}, invalid("workspace_id", "required")
	case d.ActionID == "":
		return WritePlan{}, invalid("action_id", "required")
	case d.IdempotencyKey == "":
		return WritePlan{}, invalid("idempotency_key", "required")
	case !slices.Contains([]Outcome{Allow, Block, Revise, Escalate}, d.Decision):
		return WritePlan{}, invalid("decision", "unknown %q", d.Decision)
	}
	if d.Confidence == "" {
		d.Confidence = "medium"
	}
	if !slices.Contains([]string{"high", "medium", "low"}, d.Confidence) {
		return WritePlan{}, invalid("confidence", "unknown %q", d.Confidence)
	}
	if !slices.Contains([]string{"llm", "rule", "hybrid", "human"}, d.Judge.Kind) {
		return WritePlan{}, invalid("judge.kind", "unknown %q", d.Judge.Kind)
	}
	for name, v := range map[string]string{
		"authorization_check": d.Checks.Authorization, "evidence_check": d.Checks.Evidence,
		"policy_check": d.Checks.Policy, "sensitivity_check": d.Checks.Sensitivity,
		"reversibility_check": d.Checks.Reversibility, "quality_check": d.Checks.Quality,
	} {
		if !slices.Contains(checkValues, v) {
			return WritePlan{}, invalid("checks."+name, "unknown %q", v)
		}
	}
	for i, u := range d.MemoryUsed {
		if u.MemoryID == "" || !slices.Contains([]string{"instruction", "evidence", "background"}, u.UsedAs) {
			return WritePlan{}, invalid(fmt.Sprintf("memory_used[%d]", i), "needs memory_id and used_as instruction|evidence|background")
		}
	}
	ds := d.MemoryToWrite.Provenance.DefaultStatus
	if ds != "" && !slices.Contains([]Status{Observed, Inferred, Generated, UserConfirmed}, ds) {
		return WritePlan{}, invalid("memory_to_write.provenance.default_status", "unknown %q", ds)
	}
	if d.DecisionID == "" {
		d.DecisionID = NewID("dec")
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = now
	}
	d.CreatedAt = d.CreatedAt.UTC().Truncate(time.Millisecond)
	d.Entities = NormalizeEntities(d.Entities)

	p := WritePlan{}
	reject := func(field, reason string) {
		p.Rejections = append(p.Rejections, Rejection{Field: field, Reason: reason})
	}
	if len(d.FullArguments) > 0 {
		reject("full_arguments", "full tool arguments are not stored; send arguments_digest")
		d.FullArguments = nil
	}
	if d.FullArgumentsRef != "" && d.RetentionPolicy == "" {
		reject("full_arguments_ref", "a full_arguments_ref needs an approved retention policy")
		d.FullArgumentsRef = ""
	}
	for _, f := range []struct {
		name string
		v    *string
	}{
		{"reasoning_summary", &d.ReasoningSummary},
		{"required_revision.summary", &d.RequiredRevision.Summary},
		{"escalation.reason", &d.Escalation.Reason},
	} {
		if r := firewall.Check(*f.v); r != "" {
			reject(f.name, r)
			*f.v = withheld(r)
		}
	}
	for i, c := range d.RequiredRevision.Constraints {
		if r := firewall.Check(c); r != "" {
			reject(fmt.Sprintf("required_revision.revised_action_constraints[%d]", i), r)
			d.RequiredRevision.Constraints[i] = withheld(r)
		}
	}

	human := d.Judge.Kind == "human"
	status := ds
	switch {
	case status == "":
		status = Generated
		if human {
			status = Observed
		}
	case status == UserConfirmed:
		// Confirmation happens in review, by a named human; a human judge's
		// text is a correction waiting for it.
		status = Observed
		if !human {
			status = Generated
		}
	}
	conf := map[string]float64{"high": 0.85, "medium": 0.65, "low": 0.35}[d.Confidence]
	vis := WorkspaceVisible
	if d.Project != "" {
		vis = ProjectVisible
	}
	entities := slices.Clone(d.Entities)
	if d.ToolName != "" {
		entities = append(entities, "tool:"+d.ToolName)
	}
	kinds := []struct {
		name        string
		texts       []string
		instruction bool
	}{
		{"decisions", d.MemoryToWrite.Decisions, false},
		{"failures", d.MemoryToWrite.Failures, false},
		{"lessons", d.MemoryToWrite.Lessons, true},
		{"constraints", d.MemoryToWrite.Constraints, true},
		{"open_questions", d.MemoryToWrite.OpenQuestions, false},
	}
	for _, k := range kinds {
		for i, text := range k.texts {
			field := fmt.Sprintf("memory_to_write.%s[%d]", k.name, i)
			text = strings.TrimSpace(text)
			if text == "" {
				reject(field, "empty")
				continue
			}
			if r := firewall.Check(text); r != "" {
				reject(field, r)
				continue
			}
			m := Memory{
				ID:      NewID("mem"),
				Summary: summarize(text),
				Content: text,
				Source: Source{
					Kind:      "judge_event",
					URI:       "decision:" + d.DecisionID,
					Title:     strings.TrimSpace(string(d.Decision) + " " + d.ToolName),
					Timestamp: d.CreatedAt,
				},
				Provenance: Provenance{
					Status:     status,
					Confidence: conf,
					CreatedBy:  "agent",
					Model:      d.Judge.Model,
				},
				Behavior:   string(d.Decision),
				Scope:      Scope{Workspace: d.Workspace, Project: d.Project, Visibility: vis},
				Entities:   entities,
				DecisionID: d.DecisionID,
				Freshness:  Freshness{CreatedAt: now},
			}
			if human {
				m.Provenance.CreatedBy = "user"
			}
			if k.instruction {
				// the same lesson from the next identical decision
				// reinforces this one instead of queueing again
				m.PatternKey = LessonPatternKey(d.Workspace, d.Project, k.name, string(d.Decision), text)
			}
			evidenceOnly := !human && status == Observed && !k.instruction && k.name != "open_questions" &&
				!d.MemoryToWrite.Provenance.RequiresReview && conf >= LowConfidence
			if evidenceOnly {
				m.UsePolicy = Evidence
				m.UseReason = "observed record of a judge decision"
			} else {
				m.UsePolicy = NeedsConfirmation
				m.UseReason = "waits for human review"
				it := ReviewItem{
					ID:        NewID("rev"),
					MemoryID:  m.ID,
					Priority:  Normal,
					Status:    ReviewPending,
					Suggested: Evidence,
					CreatedAt: now,
					Reason:    fmt.Sprintf("%s %s from a %s judge's %s decision", status, strings.TrimSuffix(k.name, "s"), d.Judge.Kind, d.Decision),
				}
				if k.instruction {
					it.Suggested = Instruction
					it.Reason = "instruction candidate: " + it.Reason
				}
				if human {
					it.Priority = High
					it.Reason = "human correction: " + it.Reason
				}
				p.Review = append(p.Review, it)
			}
			m.normalize(now)
			if err := m.Check(); err != nil {
				return WritePlan{}, fmt.Errorf("plan write: %w", err)
			}
			p.Memories = append(p.Memories, m)
		}
	}
	p.Decision = d
	return p, nil
}

// LessonPatternKey identifies a lesson candidate: the same text, kind,
// outcome and scope is the same lesson.
func LessonPatternKey(workspace, project, kind, outcome, text string) string {
	sum := sha256.Sum256([]byte(workspace + "\x1f" + project + "\x1f" + kind + "\x1f" + outcome + "\x1f" + text))
	return "l1:" + hex.EncodeToString(sum[:12])
}

// Dedupe drops from p the lesson memories (and their review items) that
// repeat an existing one; existing returns the active memory with a
// pattern key, or false. Each repeat is returned as the existing memory
// to reinforce (one more occurrence), and the result names it.
func (p *WritePlan) Dedupe(existing func(patternKey string) (Memory, bool)) []Memory {
	var again []Memory
	keep := p.Memories[:0]
	drop := map[string]bool{}
	for _, m := range p.Memories {
		if m.PatternKey != "" {
			if o, ok := existing(m.PatternKey); ok {
				o.Occurrences++
				if m.Freshness.CreatedAt.After(o.Freshness.LastSeenAt) {
					o.Freshness.LastSeenAt = m.Freshness.CreatedAt
				}
				again = append(again, o)
				drop[m.ID] = true
				continue
			}
		}
		keep = append(keep, m)
	}
	p.Memories = keep
	items := p.Review[:0]
	for _, it := range p.Review {
		if !drop[it.MemoryID] {
			items = append(items, it)
		}
	}
	p.Review = items
	return again
}

// summarize is the first line of text, cut at 160 characters.
func summarize(text string) string {
	s, _, _ := strings.Cut(text, "\n")
	s = strings.TrimSpace(s)
	if r := []rune(s); len(r) > 160 {
		s = string(r[:157]) + "..."
	}
	return s
}
