package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/docket/docket/store"
)

// WriteDecision implements store.Store. The decision row is inserted with
// ON CONFLICT (idempotency_key) DO NOTHING; when that inserts nothing the
// original decision id is read back and returned as a replay, so
// concurrent retries of one key write exactly once.
func (s *Store) WriteDecision(ctx context.Context, d store.Decision) (store.WriteResult, error) {
	p, err := store.PlanWrite(d, s.now())
	if err != nil {
		return store.WriteResult{}, fmt.Errorf("write decision: %w", err)
	}
	// the creator lives in its own column (migration 3), the one place
	// GetDecision reads it from
	stored := p.Decision
	stored.Creator = ""
	body, err := json.Marshal(stored)
	if err != nil {
		return store.WriteResult{}, fmt.Errorf("write decision: %w", err)
	}
	var res store.WriteResult
	err = s.tx(ctx, func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, s.q(`INSERT INTO decisions (id, idempotency_key, workspace, action_id, outcome, body, created_at, creator)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (idempotency_key) DO NOTHING`),
			p.Decision.DecisionID, p.Decision.IdempotencyKey, p.Decision.Workspace, p.Decision.ActionID,
			string(p.Decision.Decision), string(body), ms(p.Decision.CreatedAt), p.Decision.Creator)
		if err != nil {
			if uniqueViolation(err) {
				return fmt.Errorf("decision %s: %w", p.Decision.DecisionID, store.ErrExists)
			}
			return err
		}
		if n, err := r.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var id string
			if err := tx.QueryRowContext(ctx, s.q("SELECT id FROM decisions WHERE idempotency_key = ?"), p.Decision.IdempotencyKey).Scan(&id); err != nil {
				return err
			}
			res = store.WriteResult{DecisionID: id, Replayed: true}
			return nil
		}
		var qerr error
		again := p.Dedupe(func(key string) (store.Memory, bool) {
			old, err := s.queryMemories(ctx, tx, "SELECT "+memCols+` FROM memories WHERE workspace = ? AND pattern_key = ?
				AND lifecycle = 'active' AND status <> 'superseded' ORDER BY created_at, id LIMIT 1`+s.forUpdate(), p.Decision.Workspace, key)
			if err != nil {
				qerr = err
				return store.Memory{}, false
			}
			if len(old) == 0 {
				return store.Memory{}, false
			}
			return old[0], true
		})
		if qerr != nil {
			return qerr
		}
		for i := range again {
			if err := s.updateMemory(ctx, tx, &again[i], false); err != nil {
				return err
			}
		}
		for i := range p.Memories {
			if err := s.insertMemory(ctx, tx, &p.Memories[i]); err != nil {
				return err
			}
		}
		for _, it := range p.Review {
			if err := s.insertReview(ctx, tx, it); err != nil {
				return err
			}
		}
		if p.Decision.RecallID != "" && len(p.Decision.MemoryUsed) > 0 {
			err := s.recordUse(ctx, tx, p.Decision.RecallID, p.Decision.Workspace, p.Decision.DecisionID, p.Decision.MemoryUsed)
			if err != nil && !errors.Is(err, store.ErrNotFound) { // an unknown recall is not the decision's fault
				return err
			}
		}
		res = p.Result()
		for _, m := range again {
			res.Memories = append(res.Memories, m.ID)
		}
		return nil
	})
	if err != nil {
		return store.WriteResult{}, fmt.Errorf("write decision: %w", err)
	}
	return res, nil
}

// GetDecision implements store.Store.
func (s *Store) GetDecision(ctx context.Context, id string) (store.Decision, error) {
	d, err := s.getDecision(ctx, s.db, id)
	if err != nil {
		return store.Decision{}, fmt.Errorf("get decision: %w", err)
	}
	return d, nil
}

func (s *Store) getDecision(ctx context.Context, q querier, id string) (store.Decision, error) {
	var body, creator string
	err := q.QueryRowContext(ctx, s.q("SELECT body, creator FROM decisions WHERE id = ?"), id).Scan(&body, &creator)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Decision{}, fmt.Errorf("decision %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Decision{}, err
	}
	var d store.Decision
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		return store.Decision{}, fmt.Errorf("decision %s: %w", id, err)
	}
	d.Creator = creator
	return d, nil
}
