package judge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/ledger"
)

// RecallQuery asks the store for precedent (openbrain.judge.recall.v1,
// narrowed to what the judge uses).
type RecallQuery struct {
	WorkspaceID  string
	ProjectID    string
	SessionID    string
	ActionID     string
	Summary      string
	Class        RiskClass
	ToolName     string
	TargetSystem string
	Target       string
	MaxItems     int
}

// Memory is one recalled memory with its provenance and use policy.
type Memory struct {
	ID         string  `json:"memory_id"`
	Summary    string  `json:"summary"`
	Content    string  `json:"content,omitempty"`
	Provenance string  `json:"provenance"` // observed | inferred | user_confirmed | imported | generated | superseded | disputed
	UsePolicy  string  `json:"use_policy"` // can_use_as_instruction | can_use_as_evidence | requires_confirmation | do_not_inject_automatically
	Confidence float64 `json:"confidence"`
	CreatedAt  string  `json:"created_at,omitempty"`
	// Decision is the outcome of a recalled prior decision, if it is one.
	Decision string `json:"decision,omitempty"`
	// Entities are the memory's "kind:value" tags (tool:bash, command:git
	// push, file:/abs/path, system:prod): what it is about. A lesson
	// binds only the calls they name (LessonBinds).
	Entities []string `json:"entities,omitempty"`
}

// Injectable reports whether a judge may see m: superseded, disputed and
// do_not_inject_automatically memories are never injected.
func (m Memory) Injectable() bool {
	return m.UsePolicy != "do_not_inject_automatically" && m.Provenance != "superseded" && m.Provenance != "disputed"
}

// UsedAs is how a judge may use m: instruction only for user-confirmed or
// imported memories allowed as instruction, else evidence.
func (m Memory) UsedAs() string {
	if m.UsePolicy == "can_use_as_instruction" && (m.Provenance == "user_confirmed" || m.Provenance == "imported") {
		return "instruction"
	}
	return "evidence"
}

// PolicyHit is an instruction-grade policy the store found relevant.
type PolicyHit struct {
	PolicyID         string `json:"policy_id"`
	Summary          string `json:"summary"`
	RequiredBehavior string `json:"required_behavior"` // allow | block | revise | escalate | human_review
}

// Recall is the store's answer. Status says how recall went: "ok",
// "not_needed", or "unavailable: <why>" (the judges still decide).
type Recall struct {
	Memories   []Memory    `json:"memories"`
	PolicyHits []PolicyHit `json:"policy_hits,omitempty"`
	Warnings   []string    `json:"warnings,omitempty"`
	Status     string      `json:"status"`
}

// Recaller answers recall queries. It returns an empty Recall and no
// error when nothing matches; an error only when the store failed.
type Recaller interface {
	Recall(ctx context.Context, q RecallQuery) (Recall, error)
}

// DecisionRecord is the compact judgment event written back to the store
// (openbrain.judge.decision.v1 fields the judge knows). No raw arguments
// and no model reasoning are included.
type DecisionRecord struct {
	DecisionID        string      `json:"decision_id"`
	IdempotencyKey    string      `json:"idempotency_key"`
	WorkspaceID       string      `json:"workspace_id"`
	ProjectID         string      `json:"project_id,omitempty"`
	SessionID         string      `json:"session_id"`
	ActionID          string      `json:"action_id"`
	ToolName          string      `json:"tool_name"`
	Target            string      `json:"target,omitempty"`
	RiskClass         RiskClass   `json:"risk_class"`
	Decision          Outcome     `json:"decision"`
	EnforcementAction string      `json:"enforcement_action"`
	ReasoningSummary  string      `json:"reasoning_summary"`
	JudgeID           string      `json:"judge_id"`
	PolicyVersion     string      `json:"policy_version"`
	ArgumentsDigest   string      `json:"arguments_digest"`
	ProposalDigest    string      `json:"proposal_digest"`
	MemoryUsed        []MemoryUse `json:"memory_used"`
	Time              string      `json:"time"`
	// Provenance of the written event: observed; requires_review is false
	// because a decision record is an operational fact, not a lesson.
	Provenance     string `json:"provenance"`
	RequiresReview bool   `json:"requires_review"`
	// Lessons are lesson candidates the decision leaves behind: they wait
	// in the review queue until a human confirms them. Human says the
	// final outcome was a human's (an approval resolved by a person).
	Lessons []string `json:"lessons,omitempty"`
	Human   bool     `json:"human,omitempty"`
	// Entities say what the call was about (SubjectEntities), so the
	// lessons it leaves bind only calls like it.
	Entities []string `json:"entities,omitempty"`
}

// DecisionWriter stores decisions. WriteDecision is idempotent on
// IdempotencyKey: writing the same key twice stores one record and
// returns nil.
type DecisionWriter interface {
	WriteDecision(ctx context.Context, d DecisionRecord) error
}

// ApprovalItem is an escalation waiting for a human.
type ApprovalItem struct {
	SessionID string    `json:"session_id"`
	ActionID  string    `json:"action_id"`
	ToolName  string    `json:"tool_name"`
	RiskClass RiskClass `json:"risk_class"`
	Summary   string    `json:"summary"`
	Reason    string    `json:"reason"`
	// ArgumentsDigest binds the approval to the exact arguments.
	ArgumentsDigest string `json:"arguments_digest"`
	// Proposal is the full proposal's wire form, for the reviewer.
	Proposal  []byte    `json:"proposal"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Approval statuses.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// Resolution is a human's answer to an approval item.
type Resolution struct {
	Status string `json:"status"` // approved | denied | expired
	By     string `json:"by,omitempty"`
	Note   string `json:"note,omitempty"`
	// Arguments, when set on an approval, are the human's edited tool
	// input: the call runs with them instead.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Approvals is the approval queue. Submit returns the item's id (the same
// id for a resubmitted ActionID). Wait blocks until the item is resolved,
// timeout passes (Status expired, nil error) or ctx is done (ctx.Err()).
type Approvals interface {
	Submit(ctx context.Context, it ApprovalItem) (string, error)
	Wait(ctx context.Context, id string, timeout time.Duration) (Resolution, error)
}

// Recorder appends ledger entries; *ledger.Ledger satisfies it.
type Recorder interface {
	Append(session string, r ledger.Record) (*ledger.Entry, error)
}

// MemStore is an in-memory Recaller, DecisionWriter and Approvals. Its
// zero value works. Recall returns memories whose summary or content
// mentions the tool name or the target, newest first.
type MemStore struct {
	mu        sync.Mutex
	memories  []Memory
	decisions map[string]DecisionRecord
	order     []string
	items     map[string]*memItem
	byAction  map[string]string
}

type memItem struct {
	it   ApprovalItem
	res  Resolution
	done chan struct{}
}

// AddMemory adds a memory for recall.
func (s *MemStore) AddMemory(m Memory) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memories = append(s.memories, m)
}

// Recall implements Recaller.
func (s *MemStore) Recall(ctx context.Context, q RecallQuery) (Recall, error) {
	if err := ctx.Err(); err != nil {
		return Recall{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Recall{Status: "ok", Memories: []Memory{}}
	max := q.MaxItems
	if max <= 0 {
		max = 5
	}
	for i := len(s.memories) - 1; i >= 0 && len(r.Memories) < max; i-- {
		m := s.memories[i]
		text := m.Summary + " " + m.Content
		if q.ToolName != "" && strings.Contains(text, q.ToolName) || q.Target != "" && strings.Contains(text, q.Target) {
			r.Memories = append(r.Memories, m)
		}
	}
	return r, nil
}

// WriteDecision implements DecisionWriter.
func (s *MemStore) WriteDecision(ctx context.Context, d DecisionRecord) error {
	if d.IdempotencyKey == "" {
		return errors.New("write decision: idempotency key missing")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decisions == nil {
		s.decisions = map[string]DecisionRecord{}
	}
	if _, ok := s.decisions[d.IdempotencyKey]; ok {
		return nil
	}
	s.decisions[d.IdempotencyKey] = d
	s.order = append(s.order, d.IdempotencyKey)
	return nil
}

// Decisions returns the written decisions in write order.
func (s *MemStore) Decisions() []DecisionRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]DecisionRecord, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, s.decisions[k])
	}
	return out
}

// Submit implements Approvals.
func (s *MemStore) Submit(ctx context.Context, it ApprovalItem) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		s.items, s.byAction = map[string]*memItem{}, map[string]string{}
	}
	if id, ok := s.byAction[it.ActionID]; ok && it.ActionID != "" {
		return id, nil
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := "apr_" + hex.EncodeToString(b[:])
	s.items[id] = &memItem{it: it, res: Resolution{Status: ApprovalPending}, done: make(chan struct{})}
	s.byAction[it.ActionID] = id
	return id, nil
}

// Pending lists the ids of unresolved items, sorted.
func (s *MemStore) Pending() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, m := range s.items {
		if m.res.Status == ApprovalPending {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Resolve answers a pending item; it reports false for an unknown or
// already resolved id.
func (s *MemStore) Resolve(id string, r Resolution) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.items[id]
	if !ok || m.res.Status != ApprovalPending {
		return false
	}
	m.res = r
	close(m.done)
	return true
}

// Wait implements Approvals.
func (s *MemStore) Wait(ctx context.Context, id string, timeout time.Duration) (Resolution, error) {
	s.mu.Lock()
	m, ok := s.items[id]
	s.mu.Unlock()
	if !ok {
		return Resolution{}, errors.New("wait for approval: unknown item " + id)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-m.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return m.res, nil
	case <-t.C:
		s.mu.Lock()
		defer s.mu.Unlock()
		if m.res.Status == ApprovalPending {
			m.res = Resolution{Status: ApprovalExpired}
			close(m.done)
		}
		return m.res, nil
	case <-ctx.Done():
		return Resolution{}, ctx.Err()
	}
}

// MemLedger is an in-memory Recorder for tests; its zero value works.
type MemLedger struct {
	mu      sync.Mutex
	Entries []MemEntry
	// Err, when set, is returned by every Append (e.g. "not built yet").
	Err error
}

// MemEntry is one recorded append.
type MemEntry struct {
	Session string
	Record  ledger.Record
}

// Append implements Recorder.
func (l *MemLedger) Append(session string, r ledger.Record) (*ledger.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Err != nil {
		return nil, l.Err
	}
	l.Entries = append(l.Entries, MemEntry{Session: session, Record: r})
	return &ledger.Entry{Session: session, Kind: r.Kind, Seq: uint64(len(l.Entries))}, nil
}

// Snapshot returns a copy of the recorded entries.
func (l *MemLedger) Snapshot() []MemEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]MemEntry(nil), l.Entries...)
}
