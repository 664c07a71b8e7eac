// Package memstore is an in-memory store.Store. Its zero value is ready to
// use; it keeps nothing across processes. Tests and the conformance suite
// use it as the reference backend.
package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/store"
)

// Store is an in-memory store.Store. The zero value is empty and ready.
type Store struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Relevance is the recall scoring configuration; nil means the
	// default (store.DefaultRelevance).
	Relevance *store.Relevance

	mu        sync.Mutex
	memories  map[string]store.Memory
	lineage   map[string]string // lineage key -> memory id
	obs       map[string][]store.Observation
	decisions map[string]store.Decision
	byKey     map[string]string // idempotency key -> decision id
	review    map[string]store.ReviewItem
	events    map[string][]store.Event
	recalls   map[string]*recall
	byMemory  map[string][]string // memory id -> recall ids
	approvals map[string]store.Approval
	owners    map[[2]string]string // {scope, session} -> owner
}

type recall struct {
	meta      store.RecallUse
	workspace string
	items     map[string]*store.RecallUse
}

var _ store.Store = (*Store)(nil)

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Store) init() {
	if s.memories != nil {
		return
	}
	s.memories = map[string]store.Memory{}
	s.lineage = map[string]string{}
	s.obs = map[string][]store.Observation{}
	s.decisions = map[string]store.Decision{}
	s.byKey = map[string]string{}
	s.review = map[string]store.ReviewItem{}
	s.events = map[string][]store.Event{}
	s.recalls = map[string]*recall{}
	s.byMemory = map[string][]string{}
	s.approvals = map[string]store.Approval{}
	s.owners = map[[2]string]string{}
}

func clone(m store.Memory) store.Memory {
	m.Entities = slices.Clone(m.Entities)
	m.Disputes = slices.Clone(m.Disputes)
	return m
}

// PutMemory implements store.Store.
func (s *Store) PutMemory(ctx context.Context, m store.Memory) (store.Memory, error) {
	m, err := store.Prepare(m, s.now())
	if err != nil {
		return store.Memory{}, fmt.Errorf("put memory: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if _, ok := s.memories[m.ID]; ok {
		return store.Memory{}, fmt.Errorf("put memory %s: %w", m.ID, store.ErrExists)
	}
	s.memories[m.ID] = clone(m)
	if !m.Lineage.IsZero() {
		s.addObs(m, m.Lineage, m.Freshness.LastSeenAt)
	}
	return m, nil
}

func (s *Store) addObs(m store.Memory, l store.Lineage, at time.Time) {
	s.lineage[l.Key()] = m.ID
	s.obs[m.ID] = append(s.obs[m.ID], store.Observation{Lineage: l, MemoryID: m.ID, ObservedAt: at})
}

// GetMemory implements store.Store.
func (s *Store) GetMemory(ctx context.Context, id string) (store.Memory, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	m, ok := s.memories[id]
	if !ok {
		return store.Memory{}, fmt.Errorf("memory %s: %w", id, store.ErrNotFound)
	}
	return clone(m), nil
}

// Observe implements store.Store.
func (s *Store) Observe(ctx context.Context, m store.Memory) (store.Memory, store.ObserveResult, error) {
	if m.Lineage.IsZero() {
		return store.Memory{}, 0, &store.ValidationError{Field: "lineage", Msg: "an observation needs its ledger entry"}
	}
	m, err := store.Prepare(m, s.now())
	if err != nil {
		return store.Memory{}, 0, fmt.Errorf("observe: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if id, ok := s.lineage[m.Lineage.Key()]; ok {
		return clone(s.memories[id]), store.Duplicate, nil
	}
	if m.PatternKey != "" {
		for _, id := range s.sortedIDs() {
			old := s.memories[id]
			if old.PatternKey == m.PatternKey && old.Scope.Workspace == m.Scope.Workspace && old.Lifecycle == store.Active && old.Provenance.Status != store.Superseded {
				old.Occurrences++
				if m.Freshness.LastSeenAt.After(old.Freshness.LastSeenAt) {
					old.Freshness.LastSeenAt = m.Freshness.LastSeenAt
				}
				s.memories[id] = old
				s.addObs(old, m.Lineage, m.Freshness.LastSeenAt)
				return clone(old), store.Reinforced, nil
			}
		}
	}
	if _, ok := s.memories[m.ID]; ok {
		return store.Memory{}, 0, fmt.Errorf("observe %s: %w", m.ID, store.ErrExists)
	}
	s.memories[m.ID] = clone(m)
	s.addObs(m, m.Lineage, m.Freshness.LastSeenAt)
	return m, store.Created, nil
}

func (s *Store) sortedIDs() []string {
	ids := make([]string, 0, len(s.memories))
	for id := range s.memories {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := s.memories[ids[i]], s.memories[ids[j]]
		if !a.Freshness.CreatedAt.Equal(b.Freshness.CreatedAt) {
			return a.Freshness.CreatedAt.Before(b.Freshness.CreatedAt)
		}
		return ids[i] < ids[j]
	})
	return ids
}

// Recall implements store.Store.
func (s *Store) Recall(ctx context.Context, req store.RecallRequest) (store.RecallResponse, error) {
	req, err := store.ValidateRecall(req)
	if err != nil {
		return store.RecallResponse{}, fmt.Errorf("recall: %w", err)
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	cands := make([]store.Candidate, 0, len(s.memories))
	for _, id := range s.sortedIDs() {
		cands = append(cands, store.Candidate{Memory: clone(s.memories[id])})
	}
	resp, trace := store.SelectWith(s.Relevance, req, cands, now)
	resp.RecallID = store.NewID("rcl")
	r := &recall{
		meta: store.RecallUse{
			RecallID: resp.RecallID, RequestID: req.RequestID, At: now.UTC().Truncate(time.Millisecond),
			Session: req.Session, ActionID: req.ActionID, Query: req.Query.Summary, ToolName: req.Query.ToolName,
		},
		workspace: req.Workspace,
		items:     map[string]*store.RecallUse{},
	}
	for _, t := range trace {
		u := r.meta
		u.Rank, u.ReturnedAs = t.Rank, t.ReturnedAs
		r.items[t.MemoryID] = &u
		s.byMemory[t.MemoryID] = append(s.byMemory[t.MemoryID], resp.RecallID)
	}
	s.recalls[resp.RecallID] = r
	return resp, nil
}

// RecordUse implements store.Store.
func (s *Store) RecordUse(ctx context.Context, recallID, decisionID string, uses []store.MemoryUse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return s.recordUse(recallID, "", decisionID, uses)
}

// recordUse marks the items of recall recallID a decision used. With
// workspace set, the recall must have been made in it: a decision never
// marks another workspace's recall.
func (s *Store) recordUse(recallID, workspace, decisionID string, uses []store.MemoryUse) error {
	r, ok := s.recalls[recallID]
	if !ok || workspace != "" && r.workspace != workspace {
		return fmt.Errorf("record use: recall %s: %w", recallID, store.ErrNotFound)
	}
	for _, u := range uses {
		if it, ok := r.items[u.MemoryID]; ok {
			it.UsedAs, it.DecisionID = u.UsedAs, decisionID
		}
	}
	return nil
}

// WriteDecision implements store.Store.
func (s *Store) WriteDecision(ctx context.Context, d store.Decision) (store.WriteResult, error) {
	p, err := store.PlanWrite(d, s.now())
	if err != nil {
		return store.WriteResult{}, fmt.Errorf("write decision: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if id, ok := s.byKey[p.Decision.IdempotencyKey]; ok {
		return store.WriteResult{DecisionID: id, Replayed: true}, nil
	}
	if _, ok := s.decisions[p.Decision.DecisionID]; ok {
		return store.WriteResult{}, fmt.Errorf("write decision %s: %w", p.Decision.DecisionID, store.ErrExists)
	}
	again := p.Dedupe(func(key string) (store.Memory, bool) {
		var best *store.Memory
		for id := range s.memories {
			m := s.memories[id]
			if m.PatternKey == key && m.Scope.Workspace == p.Decision.Workspace && m.Lifecycle == store.Active && m.Provenance.Status != store.Superseded &&
				(best == nil || m.Freshness.CreatedAt.Before(best.Freshness.CreatedAt) || m.Freshness.CreatedAt.Equal(best.Freshness.CreatedAt) && m.ID < best.ID) {
				best = &m
			}
		}
		if best == nil {
			return store.Memory{}, false
		}
		return clone(*best), true
	})
	s.decisions[p.Decision.DecisionID] = p.Decision
	s.byKey[p.Decision.IdempotencyKey] = p.Decision.DecisionID
	for _, m := range again {
		s.memories[m.ID] = clone(m)
	}
	for _, m := range p.Memories {
		s.memories[m.ID] = clone(m)
	}
	for _, it := range p.Review {
		s.review[it.ID] = it
	}
	if p.Decision.RecallID != "" && len(p.Decision.MemoryUsed) > 0 {
		_ = s.recordUse(p.Decision.RecallID, p.Decision.Workspace, p.Decision.DecisionID, p.Decision.MemoryUsed) // an unknown recall is not the decision's fault
	}
	res := p.Result()
	for _, m := range again {
		res.Memories = append(res.Memories, m.ID)
	}
	return res, nil
}

// GetDecision implements store.Store.
func (s *Store) GetDecision(ctx context.Context, id string) (store.Decision, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	d, ok := s.decisions[id]
	if !ok {
		return store.Decision{}, fmt.Errorf("decision %s: %w", id, store.ErrNotFound)
	}
	return d, nil
}

// ListReview implements store.Store.
func (s *Store) ListReview(ctx context.Context, f store.ReviewFilter) ([]store.ReviewItem, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	var out []store.ReviewItem
	for _, it := range s.review {
		if f.Status == "" && it.Status == store.ReviewResolved || f.Status != "" && it.Status != f.Status {
			continue
		}
		out = append(out, it)
	}
	store.SortReview(out)
	if lim := f.Limit; lim <= 0 && len(out) > 100 {
		out = out[:100]
	} else if lim > 0 && len(out) > lim {
		out = out[:lim]
	}
	return out, nil
}

func (s *Store) openItem(memID string) *store.ReviewItem {
	var best *store.ReviewItem
	for _, it := range s.review {
		if it.MemoryID == memID && it.Status != store.ReviewResolved {
			c := it
			best = &c
		}
	}
	return best
}

// Review implements store.Store.
func (s *Store) Review(ctx context.Context, a store.ReviewAction) (store.Memory, store.ReviewItem, error) {
	if err := store.ValidateReview(a); err != nil {
		return store.Memory{}, store.ReviewItem{}, fmt.Errorf("review: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	var item *store.ReviewItem
	memID := a.ID
	if strings.HasPrefix(a.ID, "rev_") {
		it, ok := s.review[a.ID]
		if !ok {
			return store.Memory{}, store.ReviewItem{}, fmt.Errorf("review item %s: %w", a.ID, store.ErrNotFound)
		}
		item, memID = &it, it.MemoryID
	}
	m, ok := s.memories[memID]
	if !ok {
		return store.Memory{}, store.ReviewItem{}, fmt.Errorf("memory %s: %w", memID, store.ErrNotFound)
	}
	if item == nil {
		item = s.openItem(memID)
	}
	var other *store.Memory
	if a.Other != "" {
		if o, ok := s.memories[a.Other]; ok {
			other = &o
		}
	}
	ch, err := store.ApplyReview(clone(m), item, other, a, s.now())
	if err != nil {
		return store.Memory{}, store.ReviewItem{}, fmt.Errorf("review %s: %w", memID, err)
	}
	s.memories[memID] = clone(ch.Memory)
	if ch.Other != nil {
		s.memories[ch.Other.ID] = clone(*ch.Other)
	}
	var out store.ReviewItem
	if ch.Item != nil {
		s.review[ch.Item.ID] = *ch.Item
		out = *ch.Item
	}
	for _, e := range ch.Events {
		s.events[e.MemoryID] = append(s.events[e.MemoryID], e)
	}
	return ch.Memory, out, nil
}

// Trail implements store.Store.
func (s *Store) Trail(ctx context.Context, id string) (store.Trail, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	m, ok := s.memories[id]
	if !ok {
		return store.Trail{}, fmt.Errorf("memory %s: %w", id, store.ErrNotFound)
	}
	t := store.Trail{Memory: clone(m)}
	for _, it := range s.review {
		if it.MemoryID == id {
			t.Review = append(t.Review, it)
		}
	}
	store.SortReview(t.Review)
	t.Events = slices.Clone(s.events[id])
	t.Observations = slices.Clone(s.obs[id])
	for _, rid := range s.byMemory[id] {
		t.Recalls = append(t.Recalls, *s.recalls[rid].items[id])
	}
	for _, oid := range s.sortedIDs() {
		o := s.memories[oid]
		if oid != id && (o.SupersededBy == id || o.Supersedes == id || slices.Contains(o.Disputes, id) ||
			m.SupersededBy == oid || m.Supersedes == oid || slices.Contains(m.Disputes, oid)) {
			t.Related = append(t.Related, clone(o))
		}
	}
	if d, ok := s.decisions[m.DecisionID]; ok {
		t.Decision = &d
	}
	return t, nil
}

// SubmitApproval implements store.Store.
func (s *Store) SubmitApproval(ctx context.Context, a store.Approval) (store.Approval, error) {
	a, err := store.PrepareApproval(a, s.now())
	if err != nil {
		return store.Approval{}, fmt.Errorf("submit approval: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if old, ok := s.approvals[a.ID]; ok {
		return old, nil
	}
	s.approvals[a.ID] = a
	return a, nil
}

// GetApproval implements store.Store.
func (s *Store) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	a, ok := s.approvals[id]
	if !ok {
		return store.Approval{}, fmt.Errorf("approval %s: %w", id, store.ErrNotFound)
	}
	if a.Expire(s.now()) {
		s.approvals[id] = a
	}
	return a, nil
}

// ListApprovals implements store.Store.
func (s *Store) ListApprovals(ctx context.Context, status store.ApprovalStatus) ([]store.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	now := s.now()
	var out []store.Approval
	for id, a := range s.approvals {
		if a.Expire(now) {
			s.approvals[id] = a
		}
		if status == "" || a.Status == status {
			out = append(out, a)
		}
	}
	store.SortApprovals(out)
	return out, nil
}

// ResolveApproval implements store.Store.
func (s *Store) ResolveApproval(ctx context.Context, id string, r store.Resolution) (store.Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	a, ok := s.approvals[id]
	if !ok {
		return store.Approval{}, fmt.Errorf("approval %s: %w", id, store.ErrNotFound)
	}
	a2, err := store.ApplyResolution(a, r, s.now())
	if a2.Status != a.Status || err == nil {
		s.approvals[id] = a2
	}
	if err != nil {
		return a2, fmt.Errorf("resolve approval: %w", err)
	}
	return a2, nil
}

// ClaimSession implements store.Store.
func (s *Store) ClaimSession(ctx context.Context, scope, session, owner string) (string, error) {
	if err := store.CheckSessionClaim(scope, session, owner); err != nil {
		return "", fmt.Errorf("claim session: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	k := [2]string{scope, session}
	if o, ok := s.owners[k]; ok {
		return o, nil
	}
	s.owners[k] = owner
	return owner, nil
}

// SessionOwner implements store.Store.
func (s *Store) SessionOwner(ctx context.Context, scope, session string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	o, ok := s.owners[[2]string{scope, session}]
	if !ok {
		return "", fmt.Errorf("session %s: %w", session, store.ErrNotFound)
	}
	return o, nil
}

// Close implements store.Store; it does nothing.
func (s *Store) Close() error { return nil }
