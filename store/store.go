package store

import (
	"context"
	"time"
)

// Store is the recall and write-back store. Implementations are safe for
// concurrent use; the SQL ones also across processes. Every method takes
// the context first and wraps the sentinel errors of errors.go.
type Store interface {
	// PutMemory inserts a new memory after Prepare fills its defaults. It
	// returns ErrExists when the id is taken and an *InvariantError when
	// the memory breaks an injection invariant; nothing is written then.
	PutMemory(ctx context.Context, m Memory) (Memory, error)

	// GetMemory returns the memory, or ErrNotFound.
	GetMemory(ctx context.Context, id string) (Memory, error)

	// Observe records a memory projected from a ledger entry, idempotently
	// on m.Lineage.Key() (Lineage must be set). A lineage already recorded
	// returns its memory and Duplicate; an active memory in the same
	// workspace with the same PatternKey is reinforced (one more
	// occurrence, LastSeenAt moved to the new observation, so its decay
	// restarts) and returned with Reinforced; otherwise m is inserted and
	// returned with Created.
	Observe(ctx context.Context, m Memory) (Memory, ObserveResult, error)

	// Recall answers a recall request (see Select for the rules) and
	// records what it returned under the response's RecallID. A request
	// without workspace is a *ValidationError.
	Recall(ctx context.Context, req RecallRequest) (RecallResponse, error)

	// RecordUse records what a judge did with the memories a recall
	// returned. It returns ErrNotFound for an unknown recall id; uses of
	// memories the recall did not return are ignored.
	RecordUse(ctx context.Context, recallID, decisionID string, uses []MemoryUse) error

	// WriteDecision stores a decision and its memory candidates as
	// PlanWrite decides, atomically. A decision whose idempotency key was
	// already written returns the original decision id with Replayed set
	// and writes nothing, also under concurrent retries. A malformed
	// decision is a *ValidationError and writes nothing. d.Creator is
	// stored as given; a replay keeps the first write's.
	WriteDecision(ctx context.Context, d Decision) (WriteResult, error)

	// GetDecision returns the decision with its Creator, or ErrNotFound.
	GetDecision(ctx context.Context, id string) (Decision, error)

	// ListReview returns review items matching f, high priority first,
	// then oldest first.
	ListReview(ctx context.Context, f ReviewFilter) ([]ReviewItem, error)

	// Review applies a human's review action (see ApplyReview) to the
	// memory named by a.ID (a review item id or a memory id) and returns
	// the memory and its review item after the change (a zero item when
	// the memory has none). It returns ErrNotFound for an unknown id,
	// ErrConflict for a resolved item or a memory the action cannot apply
	// to, and an *InvariantError when the result would break an invariant.
	Review(ctx context.Context, a ReviewAction) (Memory, ReviewItem, error)

	// Trail returns everything kept about a memory, or ErrNotFound.
	Trail(ctx context.Context, memoryID string) (Trail, error)

	// SubmitApproval queues an approval request. Defaults: id, status
	// pending, created now, timeout after DefaultApprovalTimeout. Submitting
	// an id that exists returns the stored approval unchanged, its Creator
	// included (a retried hook does not queue twice).
	SubmitApproval(ctx context.Context, a Approval) (Approval, error)

	// GetApproval returns the approval with its Creator, or ErrNotFound. A
	// pending or escalated approval past its timeout is marked expired
	// first.
	GetApproval(ctx context.Context, id string) (Approval, error)

	// ListApprovals returns approvals with the given status ("" for all),
	// oldest first, expiring overdue ones first.
	ListApprovals(ctx context.Context, status ApprovalStatus) ([]Approval, error)

	// ResolveApproval applies a human's answer (see ApplyResolution),
	// keeping the approval's Creator. It returns ErrNotFound for an
	// unknown id and ErrConflict when the approval is already decided or
	// expired.
	ResolveApproval(ctx context.Context, id string, r Resolution) (Approval, error)

	// ClaimSession records owner as the owner of session under scope (the
	// ledger the session lives in) unless the session has one, and
	// returns the session's owner: owner when this call recorded it, else
	// the owner recorded first, by any process on the same database, so
	// two claims racing agree on one winner. Owners never change. An
	// empty session or owner is a *ValidationError and records nothing.
	ClaimSession(ctx context.Context, scope, session, owner string) (string, error)

	// SessionOwner returns the owner ClaimSession recorded for session
	// under scope, or ErrNotFound when none did.
	SessionOwner(ctx context.Context, scope, session string) (string, error)

	// Close releases the backend.
	Close() error
}

// ObserveResult says what Observe did.
type ObserveResult int

const (
	Created ObserveResult = iota + 1
	Reinforced
	Duplicate
)

func (r ObserveResult) String() string {
	switch r {
	case Created:
		return "created"
	case Reinforced:
		return "reinforced"
	case Duplicate:
		return "duplicate"
	}
	return "unknown"
}

// ReviewFilter selects review items. The zero value selects open items
// (pending and escalated).
type ReviewFilter struct {
	Status ReviewStatus // "" = pending and escalated
	Limit  int          // 0 = 100
}

// Clock is the time source; backends default to time.Now.
type Clock func() time.Time
