package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Inspection answers the inspector's questions about one memory.
type Inspection struct {
	Memory Memory `json:"memory"`
	// Why says why the memory exists, in one sentence.
	Why string `json:"why"`
	// Decision is the write-back that created it, if any.
	Decision *Decision `json:"decision,omitempty"`
	// Lineage lists the ledger entries that produced or reinforced it;
	// `docket verify --session` proves each.
	Lineage []Observation `json:"lineage"`
	Review  []ReviewItem  `json:"review"`
	// History is who confirmed, edited, restricted, disputed it, and when.
	History []Event `json:"history"`
	// Recalls lists the recalls that returned it and how the judge used it.
	Recalls []RecallUse `json:"recalls"`
	// Injectable says whether a default recall may hand it to a judge, and
	// InjectReason why (not).
	Injectable   bool   `json:"injectable"`
	InjectReason string `json:"inject_reason"`
	// CanInfluence describes the future actions it can shape.
	CanInfluence []string `json:"can_influence"`
	// Conflicts are memories that supersede, are superseded by, or dispute it.
	Conflicts []Conflict `json:"conflicts"`
	// StaleAt is when it goes stale; zero when it has no date.
	StaleAt time.Time `json:"stale_at,omitzero"`
	Stale   bool      `json:"stale"`
	// Decay is its current freshness factor (0.98 per day unseen).
	Decay float64 `json:"decay"`
}

// Conflict is a memory linked to the inspected one.
type Conflict struct {
	MemoryID string `json:"memory_id"`
	Relation string `json:"relation"` // supersedes | superseded_by | disputes | disputed_by | merged_into | merged_from
	Summary  string `json:"summary"`
	Status   Status `json:"status"`
}

// Inspect reads a memory's trail from s and explains it.
func Inspect(ctx context.Context, s Store, id string, now time.Time) (Inspection, error) {
	t, err := s.Trail(ctx, id)
	if err != nil {
		return Inspection{}, fmt.Errorf("inspect %s: %w", id, err)
	}
	return Explain(t, now), nil
}

// Explain turns a trail into an Inspection.
func Explain(t Trail, now time.Time) Inspection {
	m := t.Memory
	in := Inspection{
		Memory:   m,
		Decision: t.Decision,
		Lineage:  nonNil(t.Observations),
		Review:   nonNil(t.Review),
		History:  nonNil(t.Events),
		Recalls:  nonNil(t.Recalls),
		StaleAt:  m.Freshness.StaleAfter,
		Stale:    m.StaleAt(now),
		Decay:    Decay(&m, now),
	}
	switch {
	case !m.Lineage.IsZero():
		in.Why = fmt.Sprintf("projected from ledger entry %s#%d (%s), seen %d time(s)", m.Lineage.Session, m.Lineage.Seq, m.Lineage.EntryHash, m.Occurrences)
	case t.Decision != nil:
		in.Why = fmt.Sprintf("written back by decision %s (%s on action %s, %s judge)", t.Decision.DecisionID, t.Decision.Decision, t.Decision.ActionID, t.Decision.Judge.Kind)
	case m.DecisionID != "":
		in.Why = "written back by decision " + m.DecisionID
	default:
		in.Why = fmt.Sprintf("entered directly (%s, source %s)", m.Provenance.CreatedBy, m.Source.Kind)
	}
	in.Injectable, in.InjectReason = injectable(&m, now)
	in.CanInfluence = influence(&m, in.Injectable)
	for _, r := range t.Related {
		c := Conflict{MemoryID: r.ID, Summary: r.Summary, Status: r.Provenance.Status}
		switch {
		case m.SupersededBy == r.ID && m.Lifecycle == Merged:
			c.Relation = "merged_into"
		case m.SupersededBy == r.ID:
			c.Relation = "superseded_by"
		case r.SupersededBy == m.ID && r.Lifecycle == Merged:
			c.Relation = "merged_from"
		case r.SupersededBy == m.ID || m.Supersedes == r.ID:
			c.Relation = "supersedes"
		case slices.Contains(m.Disputes, r.ID):
			c.Relation = "disputes"
		case slices.Contains(r.Disputes, m.ID):
			c.Relation = "disputed_by"
		default:
			continue
		}
		in.Conflicts = append(in.Conflicts, c)
	}
	in.Conflicts = nonNil(in.Conflicts)
	return in
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func injectable(m *Memory, now time.Time) (bool, string) {
	switch {
	case m.Lifecycle != Active:
		return false, "lifecycle " + string(m.Lifecycle)
	case m.Provenance.Status == Disputed || m.Provenance.Status == Superseded:
		return false, "status " + string(m.Provenance.Status)
	case m.StaleAt(now):
		return false, "stale"
	case m.Provenance.Confidence < LowConfidence:
		return false, "low confidence"
	case !m.UsePolicy.Injectable():
		return false, string(m.UsePolicy)
	}
	return true, "recalled as " + strings.TrimPrefix(string(m.UsePolicy), "can_use_as_")
}

func influence(m *Memory, inject bool) []string {
	if !inject {
		return []string{"nothing automatically: returned only to recalls that ask for " + askFor(m)}
	}
	where := "workspace " + m.Scope.Workspace
	if m.Scope.Project != "" {
		where += ", project " + m.Scope.Project
	}
	if m.Scope.Visibility == Org {
		where = "every workspace"
	}
	var tools, ents []string
	for _, e := range m.Entities {
		if t, ok := strings.CutPrefix(e, "tool:"); ok {
			tools = append(tools, t)
		} else {
			ents = append(ents, e)
		}
	}
	what := "actions whose description matches " + quote(m.Summary)
	if len(tools) > 0 {
		what = strings.Join(tools, ", ") + " calls, and " + what
	}
	out := []string{what + " in " + where}
	if len(ents) > 0 {
		out = append(out, "actions touching "+strings.Join(ents, ", "))
	}
	if m.UsePolicy == Instruction {
		out = append(out, "as a policy hit requiring "+behavior(m.Behavior))
	} else {
		out = append(out, "as evidence the judge weighs, not as a rule")
	}
	return out
}

func askFor(m *Memory) string {
	switch {
	case m.Lifecycle != Active:
		return "its history (it is never recalled)"
	case m.Provenance.Status == Disputed || m.Provenance.Status == Superseded:
		return "disputed or superseded memories"
	case m.Freshness.Stale:
		return "stale memories"
	}
	return "unconfirmed memories"
}

func quote(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return fmt.Sprintf("%q", s)
}
