package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"
)

// DefaultApprovalTimeout is how long an approval waits for a human.
const DefaultApprovalTimeout = 30 * time.Minute

// ApprovalStatus is an approval's state. Pending and escalated are open;
// the rest are final.
type ApprovalStatus string

const (
	ApprovalPending   ApprovalStatus = "pending"
	ApprovalApproved  ApprovalStatus = "approved"
	ApprovalRejected  ApprovalStatus = "rejected"
	ApprovalModified  ApprovalStatus = "modified"
	ApprovalEscalated ApprovalStatus = "escalated"
	ApprovalExpired   ApprovalStatus = "expired"
)

// ApprovalStatuses lists every approval status.
var ApprovalStatuses = []ApprovalStatus{ApprovalPending, ApprovalApproved, ApprovalRejected, ApprovalModified, ApprovalEscalated, ApprovalExpired}

// Open reports whether the approval still waits for a human.
func (s ApprovalStatus) Open() bool { return s == ApprovalPending || s == ApprovalEscalated }

// Approval is one escalated action waiting for a human.
type Approval struct {
	ID              string         `json:"id"`
	DecisionID      string         `json:"decision_id,omitempty"`
	Workspace       string         `json:"workspace_id,omitempty"`
	Session         string         `json:"session,omitempty"`
	ToolUseID       string         `json:"tool_use_id,omitempty"`
	Tool            string         `json:"tool"`
	Summary         string         `json:"summary"`
	Reason          string         `json:"reason"`
	RiskClass       string         `json:"risk_class,omitempty"`
	ArgumentsDigest string         `json:"arguments_digest,omitempty"`
	Status          ApprovalStatus `json:"status"`
	Owner           string         `json:"owner,omitempty"`
	CreatedAt       time.Time      `json:"created_at"`
	TimeoutAt       time.Time      `json:"timeout_at"`
	ResolvedAt      time.Time      `json:"resolved_at,omitzero"`
	ResolvedBy      string         `json:"resolved_by,omitempty"`
	Note            string         `json:"note,omitempty"`
	// Arguments are the human's edited tool arguments (modified only).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Creator is the id of the API token that created the approval
	// (docket serve); empty for the hooks, the CLI and approvals stored
	// before creators were recorded. It never changes: a resolution
	// keeps it, and resubmitting the id returns the stored creator.
	Creator string `json:"creator,omitempty"`
}

// Allows reports whether the action may run: approved, or modified (run
// with Arguments). Everything else — rejected, escalated, expired, still
// pending — fails closed.
func (a Approval) Allows() bool { return a.Status == ApprovalApproved || a.Status == ApprovalModified }

// Resolution is a human's answer to an approval.
type Resolution struct {
	Status    ApprovalStatus  `json:"status"` // approved | rejected | modified | escalated
	By        string          `json:"by"`
	Note      string          `json:"note,omitempty"`
	Owner     string          `json:"owner,omitempty"`     // escalated: the new owner
	Arguments json.RawMessage `json:"arguments,omitempty"` // modified: the edited arguments, a JSON object
}

// PrepareApproval validates a new approval and fills its defaults.
func PrepareApproval(a Approval, now time.Time) (Approval, error) {
	now = now.UTC().Truncate(time.Millisecond)
	if a.ID == "" {
		a.ID = NewID("apr")
	}
	if a.Tool == "" {
		return a, invalid("tool", "required")
	}
	if a.Status == "" {
		a.Status = ApprovalPending
	}
	if a.Status != ApprovalPending {
		return a, invalid("status", "a new approval is pending")
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = now
	}
	a.CreatedAt = a.CreatedAt.UTC().Truncate(time.Millisecond)
	if a.TimeoutAt.IsZero() {
		a.TimeoutAt = a.CreatedAt.Add(DefaultApprovalTimeout)
	}
	a.TimeoutAt = a.TimeoutAt.UTC().Truncate(time.Millisecond)
	if len(a.Arguments) > 0 {
		return a, invalid("arguments", "only a modification carries arguments")
	}
	return a, nil
}

// Expire marks an open approval past its timeout as expired and reports
// whether it did. Expiry is neutral: it records no rejection and teaches
// nothing; a waiting hook fails closed.
func (a *Approval) Expire(now time.Time) bool {
	if !a.Status.Open() || now.Before(a.TimeoutAt) {
		return false
	}
	a.Status = ApprovalExpired
	a.ResolvedAt = a.TimeoutAt
	a.ResolvedBy = "timeout"
	return true
}

// ApplyResolution computes a human's answer. Only open approvals accept
// one (else ErrConflict); an overdue one expires instead (ErrConflict,
// with the expired approval returned). Escalated keeps the approval open
// under a new owner; modified needs the edited arguments as a JSON object.
func ApplyResolution(a Approval, r Resolution, now time.Time) (Approval, error) {
	now = now.UTC().Truncate(time.Millisecond)
	switch r.Status {
	case ApprovalApproved, ApprovalRejected, ApprovalModified, ApprovalEscalated:
	default:
		return a, invalid("status", "a resolution is approved, rejected, modified or escalated, not %q", r.Status)
	}
	if r.By == "" {
		return a, invalid("by", "a resolution needs the human's name")
	}
	if r.Status == ApprovalModified {
		var obj map[string]json.RawMessage
		if len(r.Arguments) == 0 || json.Unmarshal(r.Arguments, &obj) != nil {
			return a, invalid("arguments", "modify needs the edited arguments as a JSON object")
		}
	} else if len(r.Arguments) > 0 {
		return a, invalid("arguments", "only modify carries arguments")
	}
	if a.Expire(now) {
		return a, fmt.Errorf("approval %s expired at %s: %w", a.ID, a.TimeoutAt.Format(time.RFC3339), ErrConflict)
	}
	if !a.Status.Open() {
		return a, fmt.Errorf("approval %s already %s: %w", a.ID, a.Status, ErrConflict)
	}
	a.Status = r.Status
	a.Note = r.Note
	a.ResolvedBy = r.By
	a.ResolvedAt = now
	if r.Status == ApprovalEscalated {
		a.Owner = r.Owner
		if a.Owner == "" {
			a.Owner = "admin"
		}
		a.ResolvedAt = time.Time{}
	}
	if r.Status == ApprovalModified {
		a.Arguments = append(json.RawMessage(nil), r.Arguments...)
	}
	return a, nil
}

// waitPoll bounds how often Wait reads the store.
var waitPoll = [...]time.Duration{10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond}

// Wait blocks until the approval is decided, for at most timeout (or until
// ctx ends). It returns the approval with a nil error once it is approved,
// modified or rejected, and with an error wrapping ErrWaitTimeout when it
// is still open, expired or the wait ran out. Callers fail closed: run the
// action only when the error is nil and a.Allows().
func Wait(ctx context.Context, s Store, id string, timeout time.Duration) (Approval, error) {
	deadline := time.Now().Add(timeout)
	for i := 0; ; i++ {
		a, err := s.GetApproval(ctx, id)
		if err != nil {
			return a, fmt.Errorf("wait for approval: %w", err)
		}
		switch a.Status {
		case ApprovalApproved, ApprovalModified, ApprovalRejected:
			return a, nil
		case ApprovalExpired:
			return a, fmt.Errorf("approval %s expired: %w", id, ErrWaitTimeout)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return a, fmt.Errorf("approval %s still %s after %s: %w", id, a.Status, timeout, ErrWaitTimeout)
		}
		d := waitPoll[min(i, len(waitPoll)-1)]
		if d > left {
			d = left
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return a, fmt.Errorf("approval %s: %w", id, errors.Join(ErrWaitTimeout, ctx.Err()))
		case <-t.C:
		}
	}
}

// SortApprovals orders approvals oldest first, then by id.
func SortApprovals(as []Approval) {
	sort.Slice(as, func(i, j int) bool {
		if !as[i].CreatedAt.Equal(as[j].CreatedAt) {
			return as[i].CreatedAt.Before(as[j].CreatedAt)
		}
		return as[i].ID < as[j].ID
	})
}
