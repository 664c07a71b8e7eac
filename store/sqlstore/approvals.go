package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docket/docket/store"
)

const approvalCols = `id, decision_id, workspace, session, tool_use_id, tool, summary, reason, risk_class, arguments_digest,
	status, owner, created_at, timeout_at, resolved_at, resolved_by, note, arguments, creator`

func scanApproval(r scanner) (store.Approval, error) {
	var a store.Approval
	var created, timeout, resolved int64
	var args string
	err := r.Scan(&a.ID, &a.DecisionID, &a.Workspace, &a.Session, &a.ToolUseID, &a.Tool, &a.Summary, &a.Reason, &a.RiskClass,
		&a.ArgumentsDigest, &a.Status, &a.Owner, &created, &timeout, &resolved, &a.ResolvedBy, &a.Note, &args, &a.Creator)
	a.CreatedAt, a.TimeoutAt, a.ResolvedAt = fromMS(created), fromMS(timeout), fromMS(resolved)
	if args != "" {
		a.Arguments = json.RawMessage(args)
	}
	return a, err
}

func (s *Store) queryApprovals(ctx context.Context, q querier, query string, args ...any) ([]store.Approval, error) {
	rows, err := q.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// SubmitApproval implements store.Store.
func (s *Store) SubmitApproval(ctx context.Context, a store.Approval) (store.Approval, error) {
	a, err := store.PrepareApproval(a, s.now())
	if err != nil {
		return store.Approval{}, fmt.Errorf("submit approval: %w", err)
	}
	var out store.Approval
	err = s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, s.q("INSERT INTO approvals ("+approvalCols+") VALUES ("+placeholders(19)+") ON CONFLICT (id) DO NOTHING"),
			a.ID, a.DecisionID, a.Workspace, a.Session, a.ToolUseID, a.Tool, a.Summary, a.Reason, a.RiskClass, a.ArgumentsDigest,
			string(a.Status), a.Owner, ms(a.CreatedAt), ms(a.TimeoutAt), ms(a.ResolvedAt), a.ResolvedBy, a.Note, "", a.Creator)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 1 {
			out = a
			return nil
		}
		as, err := s.queryApprovals(ctx, tx, "SELECT "+approvalCols+" FROM approvals WHERE id = ?", a.ID)
		if err != nil || len(as) == 0 {
			return fmt.Errorf("read back approval %s: %v", a.ID, err)
		}
		out = as[0]
		return nil
	})
	if err != nil {
		return store.Approval{}, fmt.Errorf("submit approval: %w", err)
	}
	return out, nil
}

// expire marks overdue open approvals expired.
func (s *Store) expire(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, id string) error {
	now := ms(s.now())
	query := "UPDATE approvals SET status = 'expired', resolved_at = timeout_at, resolved_by = 'timeout' WHERE status IN ('pending','escalated') AND timeout_at <= ?"
	args := []any{now}
	if id != "" {
		query += " AND id = ?"
		args = append(args, id)
	}
	_, err := q.ExecContext(ctx, s.q(query), args...)
	return err
}

// GetApproval implements store.Store.
func (s *Store) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	as, err := s.queryApprovals(ctx, s.db, "SELECT "+approvalCols+" FROM approvals WHERE id = ?", id)
	if err != nil {
		return store.Approval{}, fmt.Errorf("get approval: %w", err)
	}
	if len(as) == 0 {
		return store.Approval{}, fmt.Errorf("approval %s: %w", id, store.ErrNotFound)
	}
	a := as[0]
	if a.Expire(s.now()) {
		if err := s.expire(ctx, s.db, id); err != nil {
			return store.Approval{}, fmt.Errorf("expire approval: %w", err)
		}
	}
	return a, nil
}

// ListApprovals implements store.Store.
func (s *Store) ListApprovals(ctx context.Context, status store.ApprovalStatus) ([]store.Approval, error) {
	if err := s.expire(ctx, s.db, ""); err != nil {
		return nil, fmt.Errorf("expire approvals: %w", err)
	}
	where, args := "", []any{}
	if status != "" {
		where, args = " WHERE status = ?", []any{string(status)}
	}
	as, err := s.queryApprovals(ctx, s.db, "SELECT "+approvalCols+" FROM approvals"+where+" ORDER BY created_at, id", args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return as, nil
}

// ResolveApproval implements store.Store.
func (s *Store) ResolveApproval(ctx context.Context, id string, r store.Resolution) (store.Approval, error) {
	var out store.Approval
	var conflict error
	err := s.tx(ctx, func(tx *sql.Tx) error {
		as, err := s.queryApprovals(ctx, tx, "SELECT "+approvalCols+" FROM approvals WHERE id = ?"+s.forUpdate(), id)
		if err != nil {
			return err
		}
		if len(as) == 0 {
			return fmt.Errorf("approval %s: %w", id, store.ErrNotFound)
		}
		a, err := store.ApplyResolution(as[0], r, s.now())
		out = a
		if err != nil && !errors.Is(err, store.ErrConflict) {
			return err
		}
		conflict = err
		if a.Status == as[0].Status && err != nil {
			return nil
		}
		_, err = tx.ExecContext(ctx, s.q(`UPDATE approvals SET status = ?, owner = ?, resolved_at = ?, resolved_by = ?, note = ?, arguments = ?
			WHERE id = ?`), string(a.Status), a.Owner, ms(a.ResolvedAt), a.ResolvedBy, a.Note, string(a.Arguments), id)
		return err
	})
	if err == nil {
		err = conflict
	}
	if err != nil {
		return out, fmt.Errorf("resolve approval: %w", err)
	}
	return out, nil
}
