package store

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// Valid reports whether s is one of the seven provenance statuses.
func (s Status) Valid() bool { return slices.Contains(Statuses, s) }

// Valid reports whether p is one of the four use policies.
func (p UsePolicy) Valid() bool { return slices.Contains(UsePolicies, p) }

// Valid reports whether v is one of the four visibilities.
func (v Visibility) Valid() bool { return slices.Contains(Visibilities, v) }

// rank orders visibilities from narrow (0) to broad (3).
func (v Visibility) rank() int { return slices.Index(Visibilities, v) }

// Injectable reports whether a use policy may be handed to a judge without
// the caller asking for unconfirmed memories.
func (p UsePolicy) Injectable() bool { return p == Instruction || p == Evidence }

// Check enforces the invariants every backend and the SQL schemas share:
//
//   - can_use_as_instruction only with status user_confirmed and a named
//     confirming human;
//   - inferred and generated memories are requires_confirmation, evidence or
//     do_not_inject_automatically (never instruction);
//   - disputed, superseded, stale, rejected, merged and low-confidence
//     memories are never injected automatically (requires_confirmation or
//     do_not_inject_automatically; disputed/superseded/stale/rejected/merged
//     exactly do_not_inject_automatically).
func (m *Memory) Check() error {
	bad := func(rule string) error { return &InvariantError{MemoryID: m.ID, Rule: rule} }
	switch {
	case !m.Provenance.Status.Valid():
		return bad("unknown provenance status " + strconv.Quote(string(m.Provenance.Status)))
	case !m.UsePolicy.Valid():
		return bad("unknown use policy " + strconv.Quote(string(m.UsePolicy)))
	case !m.Scope.Visibility.Valid():
		return bad("unknown visibility " + strconv.Quote(string(m.Scope.Visibility)))
	case m.Lifecycle != Active && m.Lifecycle != Rejected && m.Lifecycle != Merged:
		return bad("unknown lifecycle " + strconv.Quote(string(m.Lifecycle)))
	case m.Provenance.Confidence < 0 || m.Provenance.Confidence > 1:
		return bad("confidence outside [0,1]")
	case m.Scope.Workspace == "":
		return bad("scope has no workspace")
	case strings.TrimSpace(m.Summary) == "":
		return bad("empty summary")
	}
	if m.UsePolicy == Instruction && (m.Provenance.Status != UserConfirmed || m.ConfirmedBy == "") {
		return bad("instruction-grade memory requires human confirmation")
	}
	if (m.Provenance.Status == Inferred || m.Provenance.Status == Generated) && m.UsePolicy == Instruction {
		return bad("inferred or generated memory cannot be instruction-grade")
	}
	if (m.Provenance.Status == Disputed || m.Provenance.Status == Superseded || m.Freshness.Stale || m.Lifecycle != Active) && m.UsePolicy != DoNotInject {
		return bad("disputed, superseded, stale, rejected or merged memory must be do_not_inject_automatically")
	}
	if m.Provenance.Confidence < LowConfidence && m.UsePolicy.Injectable() {
		return bad("low-confidence memory cannot be injected automatically")
	}
	return nil
}

// StaleAt reports whether m is stale at now: marked stale, or past its
// stale_after.
func (m *Memory) StaleAt(now time.Time) bool {
	return m.Freshness.Stale || (!m.Freshness.StaleAfter.IsZero() && !now.Before(m.Freshness.StaleAfter))
}

// normalize fills defaults and lowercases entities; it does not validate.
func (m *Memory) normalize(now time.Time) {
	if m.Lifecycle == "" {
		m.Lifecycle = Active
	}
	if m.Scope.Visibility == "" {
		m.Scope.Visibility = ProjectVisible
	}
	if m.UsePolicy == "" {
		m.UsePolicy = NeedsConfirmation
	}
	if m.Freshness.CreatedAt.IsZero() {
		m.Freshness.CreatedAt = now
	}
	if m.Freshness.LastSeenAt.IsZero() {
		m.Freshness.LastSeenAt = m.Freshness.CreatedAt
	}
	if m.Occurrences == 0 {
		m.Occurrences = 1
	}
	m.Entities = NormalizeEntities(m.Entities)
	m.Freshness.CreatedAt = m.Freshness.CreatedAt.UTC().Truncate(time.Millisecond)
	m.Freshness.LastSeenAt = m.Freshness.LastSeenAt.UTC().Truncate(time.Millisecond)
	m.Freshness.LastConfirmedAt = truncMS(m.Freshness.LastConfirmedAt)
	m.Freshness.StaleAfter = truncMS(m.Freshness.StaleAfter)
	m.Source.Timestamp = truncMS(m.Source.Timestamp)
}

func truncMS(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Millisecond)
}

// Prepare fills a new memory's defaults (id, lifecycle, clock) and checks
// its invariants. Backends call it in PutMemory.
func Prepare(m Memory, now time.Time) (Memory, error) {
	if m.ID == "" {
		m.ID = NewID("mem")
	}
	m.normalize(now)
	if err := m.Check(); err != nil {
		return Memory{}, err
	}
	return m, nil
}

// NormalizeEntities lowercases, trims, de-duplicates and sorts entity tags.
func NormalizeEntities(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := make([]string, 0, len(in))
	for _, e := range in {
		e = strings.ToLower(strings.TrimSpace(e))
		if e != "" {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Tags flattens typed request entities into "kind:value" tags.
func (e Entities) Tags() []string {
	var out []string
	add := func(kind string, vs []string) {
		for _, v := range vs {
			out = append(out, kind+":"+v)
		}
	}
	add("person", e.People)
	add("org", e.Orgs)
	add("repo", e.Repos)
	add("file", e.Files)
	add("customer", e.Customers)
	add("system", e.Systems)
	add("topic", e.Topics)
	add("tool", e.Tools)
	return NormalizeEntities(out)
}
