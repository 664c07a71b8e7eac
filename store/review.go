package store

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Review actions.
const (
	ActConfirm       = "confirm"
	ActEdit          = "edit"
	ActEvidenceOnly  = "evidence_only"
	ActRestrictScope = "restrict_scope"
	ActMarkStale     = "mark_stale"
	ActMerge         = "merge"
	ActReject        = "reject"
	ActDispute       = "dispute"
	ActSupersede     = "supersede"
	ActEscalate      = "escalate"
)

// Behaviors are what an instruction-grade memory may require of a judge.
var Behaviors = []string{"allow", "block", "revise", "escalate", "human_review"}

// ReviewActions lists every review action.
var ReviewActions = []string{ActConfirm, ActEdit, ActEvidenceOnly, ActRestrictScope, ActMarkStale, ActMerge, ActReject, ActDispute, ActSupersede, ActEscalate}

// ReviewAction is one human decision about a memory.
type ReviewAction struct {
	ID     string `json:"id"` // review item id ("rev_…") or memory id
	Action string `json:"action"`
	Actor  string `json:"actor"` // the human; required
	Note   string `json:"note,omitempty"`
	// As is the use policy confirm grants: can_use_as_instruction or
	// can_use_as_evidence; empty means the item's suggestion, else evidence.
	As UsePolicy `json:"as,omitempty"`
	// Summary and Content replace the memory's text (edit).
	Summary string `json:"summary,omitempty"`
	Content string `json:"content,omitempty"`
	// Behavior sets what an instruction-grade memory asks of the judge
	// (edit, confirm): allow | block | revise | escalate | human_review.
	// A lesson starts with the outcome of the decision it came from; the
	// reviewer decides what it should require.
	Behavior string `json:"behavior,omitempty"`
	// Visibility and Project narrow the scope (restrict_scope).
	Visibility Visibility `json:"visibility,omitempty"`
	Project    string     `json:"project,omitempty"`
	// Other is the memory this one is merged into (merge), superseded by
	// (supersede) or in conflict with (dispute, optional).
	Other string `json:"other,omitempty"`
}

// NeedsOther reports whether the action names a second memory.
func (a ReviewAction) NeedsOther() bool {
	return a.Action == ActMerge || a.Action == ActSupersede || (a.Action == ActDispute && a.Other != "")
}

// ValidateReview checks the action's shape before any lookup.
func ValidateReview(a ReviewAction) error {
	if !slices.Contains(ReviewActions, a.Action) {
		return invalid("action", "unknown review action %q", a.Action)
	}
	if strings.TrimSpace(a.Actor) == "" {
		return invalid("actor", "a review action needs the human's name")
	}
	if a.ID == "" {
		return invalid("id", "required")
	}
	switch a.Action {
	case ActConfirm:
		if a.As != "" && a.As != Instruction && a.As != Evidence {
			return invalid("as", "confirm grants can_use_as_instruction or can_use_as_evidence")
		}
	case ActEdit:
		if strings.TrimSpace(a.Summary) == "" && strings.TrimSpace(a.Content) == "" && a.Behavior == "" {
			return invalid("summary", "edit needs a new summary, content or behavior")
		}
	case ActRestrictScope:
		if a.Visibility == "" && a.Project == "" {
			return invalid("visibility", "restrict_scope needs a visibility or a project")
		}
		if a.Visibility != "" && !a.Visibility.Valid() {
			return invalid("visibility", "unknown %q", a.Visibility)
		}
	case ActMerge, ActSupersede:
		if a.Other == "" {
			return invalid("other", "%s needs the other memory's id", a.Action)
		}
	}
	if a.Behavior != "" {
		if !slices.Contains(Behaviors, a.Behavior) {
			return invalid("behavior", "one of %s", strings.Join(Behaviors, ", "))
		}
		if a.Action != ActEdit && a.Action != ActConfirm {
			return invalid("behavior", "only edit and confirm set a behavior")
		}
	}
	if a.Other != "" && a.Other == a.ID {
		return invalid("other", "a memory cannot refer to itself")
	}
	return nil
}

// Change is what a review action does: the memory after it, the other
// memory after it (merge, supersede, dispute), the review item after it
// and the audit events to append.
type Change struct {
	Memory Memory
	Other  *Memory
	Item   *ReviewItem
	Events []Event
}

// ApplyReview computes a review action's effect. item is the memory's open
// review item or nil; other is the memory a.Other names or nil. It does not
// write anything. Actions:
//
//   - confirm: status user_confirmed, confirmed by the actor, use policy
//     a.As (or the item's suggestion, else evidence), confidence raised to
//     0.9, stale marks cleared; resolves the item;
//   - edit: new summary/content; the item stays open;
//   - evidence_only: use policy can_use_as_evidence; resolves;
//   - restrict_scope: narrower visibility and/or a project; stays open;
//   - mark_stale: stale, do_not_inject_automatically; resolves;
//   - merge: this memory is merged into other (lifecycle merged, status
//     superseded), other gains its occurrences and entities; resolves;
//   - reject: lifecycle rejected, do_not_inject_automatically; resolves;
//   - dispute: status disputed, do_not_inject_automatically, linked to
//     other when given; resolves;
//   - supersede: status superseded by other, do_not_inject_automatically;
//     resolves;
//   - escalate: the item becomes escalated and high priority.
//
// Rejected and merged memories accept no action (ErrConflict), nor do
// superseded ones except reject; the result must pass Check.
func ApplyReview(m Memory, item *ReviewItem, other *Memory, a ReviewAction, now time.Time) (Change, error) {
	now = now.UTC().Truncate(time.Millisecond)
	if err := ValidateReview(a); err != nil {
		return Change{}, err
	}
	if item != nil && item.Status == ReviewResolved {
		return Change{}, fmt.Errorf("review item %s already resolved by %s: %w", item.ID, item.Resolution, ErrConflict)
	}
	if m.Lifecycle != Active {
		return Change{}, fmt.Errorf("memory %s is %s: %w", m.ID, m.Lifecycle, ErrConflict)
	}
	if m.Provenance.Status == Superseded && a.Action != ActReject {
		return Change{}, fmt.Errorf("memory %s is superseded by %s: %w", m.ID, m.SupersededBy, ErrConflict)
	}
	if a.NeedsOther() {
		if other == nil {
			return Change{}, fmt.Errorf("memory %s: %w", a.Other, ErrNotFound)
		}
		if other.Lifecycle != Active || other.Provenance.Status == Superseded {
			return Change{}, fmt.Errorf("memory %s is not active: %w", other.ID, ErrConflict)
		}
	}
	var it *ReviewItem
	if item != nil {
		c := *item
		it = &c
	}
	resolve := true
	detail := a.Note
	switch a.Action {
	case ActConfirm:
		use := a.As
		if use == "" && it != nil {
			use = it.Suggested
		}
		if use != Instruction {
			use = Evidence
		}
		m.Provenance.Status = UserConfirmed
		m.ConfirmedBy = a.Actor
		m.Freshness.LastConfirmedAt = now
		m.Freshness.Stale = false
		m.Freshness.StaleAfter = time.Time{}
		m.Provenance.Confidence = max(m.Provenance.Confidence, 0.9)
		m.Disputes = nil
		m.UsePolicy = use
		m.UseReason = "confirmed by " + a.Actor
		detail = join("use_policy="+string(use), a.Note)
		if a.Behavior != "" && a.Behavior != m.Behavior {
			detail = join(fmt.Sprintf("behavior %s -> %s", behavior(m.Behavior), a.Behavior), detail)
			m.Behavior = a.Behavior
		}
	case ActEdit:
		resolve = false
		if s := strings.TrimSpace(a.Summary); s != "" {
			detail = join(fmt.Sprintf("summary %q -> %q", m.Summary, s), detail)
			m.Summary = s
		}
		if c := strings.TrimSpace(a.Content); c != "" {
			detail = join("content replaced", detail)
			m.Content = c
		}
		if a.Behavior != "" && a.Behavior != m.Behavior {
			detail = join(fmt.Sprintf("behavior %s -> %s", behavior(m.Behavior), a.Behavior), detail)
			m.Behavior = a.Behavior
		}
	case ActEvidenceOnly:
		if m.Provenance.Status == Disputed {
			return Change{}, fmt.Errorf("memory %s is disputed; confirm or reject it: %w", m.ID, ErrConflict)
		}
		m.UsePolicy = Evidence
		m.UseReason = "evidence only, by " + a.Actor
		m.Freshness.Stale = false
	case ActRestrictScope:
		resolve = false
		if a.Visibility != "" {
			if a.Visibility.rank() > m.Scope.Visibility.rank() {
				return Change{}, invalid("visibility", "restrict_scope cannot widen %s to %s", m.Scope.Visibility, a.Visibility)
			}
			detail = join(fmt.Sprintf("visibility %s -> %s", m.Scope.Visibility, a.Visibility), detail)
			m.Scope.Visibility = a.Visibility
		}
		if a.Project != "" {
			if m.Scope.Project != "" && m.Scope.Project != a.Project {
				return Change{}, invalid("project", "memory already belongs to project %s", m.Scope.Project)
			}
			detail = join("project "+a.Project, detail)
			m.Scope.Project = a.Project
		}
	case ActMarkStale:
		m.Freshness.Stale = true
		if m.Freshness.StaleAfter.IsZero() || m.Freshness.StaleAfter.After(now) {
			m.Freshness.StaleAfter = now
		}
		m.UsePolicy = DoNotInject
		m.UseReason = "marked stale by " + a.Actor
	case ActMerge:
		o := *other
		m.Lifecycle = Merged
		m.Provenance.Status = Superseded
		m.SupersededBy = o.ID
		m.UsePolicy = DoNotInject
		m.UseReason = "merged into " + o.ID + " by " + a.Actor
		o.Occurrences += m.Occurrences
		o.Entities = NormalizeEntities(append(slices.Clone(o.Entities), m.Entities...))
		if m.Freshness.LastSeenAt.After(o.Freshness.LastSeenAt) {
			o.Freshness.LastSeenAt = m.Freshness.LastSeenAt
		}
		other = &o
		detail = join("into "+o.ID, a.Note)
	case ActReject:
		m.Lifecycle = Rejected
		m.UsePolicy = DoNotInject
		m.UseReason = "rejected by " + a.Actor
	case ActDispute:
		m.Provenance.Status = Disputed
		m.UsePolicy = DoNotInject
		m.UseReason = "disputed by " + a.Actor
		if other != nil {
			m.Disputes = NormalizeEntities(append(m.Disputes, other.ID))
			detail = join("conflicts with "+other.ID, a.Note)
			other = nil // the other memory is not changed; Trail finds the link
		}
	case ActSupersede:
		o := *other
		m.Provenance.Status = Superseded
		m.SupersededBy = o.ID
		m.UsePolicy = DoNotInject
		m.UseReason = "superseded by " + o.ID
		o.Supersedes = m.ID
		other = &o
		detail = join("by "+o.ID, a.Note)
	case ActEscalate:
		if it == nil {
			return Change{}, fmt.Errorf("memory %s has no open review item to escalate: %w", m.ID, ErrConflict)
		}
		resolve = false
		it.Status = ReviewEscalated
		it.Priority = High
		detail = join("escalated to admin", a.Note)
	}
	if a.Action != ActMerge && a.Action != ActSupersede {
		other = nil
	}
	if err := m.Check(); err != nil {
		return Change{}, err
	}
	if other != nil {
		if err := other.Check(); err != nil {
			return Change{}, err
		}
	}
	if it != nil && resolve {
		it.Status = ReviewResolved
		it.ResolvedAt = now
		it.Resolution = a.Action
		it.ResolvedBy = a.Actor
	}
	ch := Change{Memory: m, Other: other, Item: it}
	ch.Events = append(ch.Events, Event{MemoryID: m.ID, At: now, Actor: a.Actor, Action: a.Action, Detail: detail})
	if other != nil {
		ch.Events = append(ch.Events, Event{MemoryID: other.ID, At: now, Actor: a.Actor, Action: a.Action + "_target", Detail: "from " + m.ID})
	}
	return ch, nil
}

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// SortReview orders review items: high priority first, then oldest, then id.
func SortReview(items []ReviewItem) {
	slices.SortFunc(items, func(a, b ReviewItem) int {
		if a.Priority != b.Priority {
			if a.Priority == High {
				return -1
			}
			return 1
		}
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
