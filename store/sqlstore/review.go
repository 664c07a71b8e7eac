package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/docket/docket/store"
)

const reviewCols = "id, memory_id, priority, reason, status, suggested, created_at, resolved_at, resolution, resolved_by"

func scanReview(r scanner) (store.ReviewItem, error) {
	var it store.ReviewItem
	var created, resolved int64
	err := r.Scan(&it.ID, &it.MemoryID, &it.Priority, &it.Reason, &it.Status, &it.Suggested, &created, &resolved, &it.Resolution, &it.ResolvedBy)
	it.CreatedAt, it.ResolvedAt = fromMS(created), fromMS(resolved)
	return it, err
}

func (s *Store) insertReview(ctx context.Context, tx *sql.Tx, it store.ReviewItem) error {
	_, err := tx.ExecContext(ctx, s.q("INSERT INTO review_items ("+reviewCols+") VALUES ("+placeholders(10)+")"),
		it.ID, it.MemoryID, string(it.Priority), it.Reason, string(it.Status), string(it.Suggested), ms(it.CreatedAt),
		ms(it.ResolvedAt), it.Resolution, it.ResolvedBy)
	return err
}

func (s *Store) queryReview(ctx context.Context, q querier, query string, args ...any) ([]store.ReviewItem, error) {
	rows, err := q.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.ReviewItem
	for rows.Next() {
		it, err := scanReview(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// ListReview implements store.Store.
func (s *Store) ListReview(ctx context.Context, f store.ReviewFilter) ([]store.ReviewItem, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	where, args := "status <> 'resolved'", []any{}
	if f.Status != "" {
		where, args = "status = ?", []any{string(f.Status)}
	}
	items, err := s.queryReview(ctx, s.db, "SELECT "+reviewCols+" FROM review_items WHERE "+where+
		" ORDER BY CASE priority WHEN 'high' THEN 0 ELSE 1 END, created_at, id LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list review: %w", err)
	}
	return items, nil
}

// Review implements store.Store.
func (s *Store) Review(ctx context.Context, a store.ReviewAction) (store.Memory, store.ReviewItem, error) {
	if err := store.ValidateReview(a); err != nil {
		return store.Memory{}, store.ReviewItem{}, fmt.Errorf("review: %w", err)
	}
	var ch store.Change
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var item *store.ReviewItem
		memID := a.ID
		if strings.HasPrefix(a.ID, "rev_") {
			its, err := s.queryReview(ctx, tx, "SELECT "+reviewCols+" FROM review_items WHERE id = ?"+s.forUpdate(), a.ID)
			if err != nil {
				return err
			}
			if len(its) == 0 {
				return fmt.Errorf("review item %s: %w", a.ID, store.ErrNotFound)
			}
			item, memID = &its[0], its[0].MemoryID
		}
		m, err := s.getMemory(ctx, tx, memID, true)
		if err != nil {
			return err
		}
		if item == nil {
			its, err := s.queryReview(ctx, tx, "SELECT "+reviewCols+" FROM review_items WHERE memory_id = ? AND status <> 'resolved'"+s.forUpdate(), memID)
			if err != nil {
				return err
			}
			if len(its) > 0 {
				item = &its[0]
			}
		}
		var other *store.Memory
		if a.Other != "" {
			o, err := s.getMemory(ctx, tx, a.Other, true)
			switch {
			case err == nil:
				other = &o
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
		}
		ch, err = store.ApplyReview(m, item, other, a, s.now())
		if err != nil {
			return err
		}
		if err := s.updateMemory(ctx, tx, &ch.Memory, !slices.Equal(m.Entities, ch.Memory.Entities)); err != nil {
			return err
		}
		if ch.Other != nil {
			if err := s.updateMemory(ctx, tx, ch.Other, !slices.Equal(other.Entities, ch.Other.Entities)); err != nil {
				return err
			}
		}
		if it := ch.Item; it != nil {
			if _, err := tx.ExecContext(ctx, s.q(`UPDATE review_items SET priority = ?, status = ?, resolved_at = ?, resolution = ?,
				resolved_by = ? WHERE id = ?`), string(it.Priority), string(it.Status), ms(it.ResolvedAt), it.Resolution, it.ResolvedBy, it.ID); err != nil {
				return err
			}
		}
		for _, e := range ch.Events {
			if _, err := tx.ExecContext(ctx, s.q("INSERT INTO memory_events (memory_id, at, actor, action, detail) VALUES (?, ?, ?, ?, ?)"),
				e.MemoryID, ms(e.At), e.Actor, e.Action, e.Detail); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.Memory{}, store.ReviewItem{}, fmt.Errorf("review %s: %w", a.ID, err)
	}
	var it store.ReviewItem
	if ch.Item != nil {
		it = *ch.Item
	}
	return ch.Memory, it, nil
}

// Trail implements store.Store.
func (s *Store) Trail(ctx context.Context, id string) (store.Trail, error) {
	m, err := s.getMemory(ctx, s.db, id, false)
	if err != nil {
		return store.Trail{}, fmt.Errorf("trail: %w", err)
	}
	t := store.Trail{Memory: m}
	if t.Review, err = s.queryReview(ctx, s.db, "SELECT "+reviewCols+" FROM review_items WHERE memory_id = ? ORDER BY CASE priority WHEN 'high' THEN 0 ELSE 1 END, created_at, id", id); err != nil {
		return store.Trail{}, fmt.Errorf("trail: %w", err)
	}
	err = s.each(ctx, "SELECT memory_id, at, actor, action, detail FROM memory_events WHERE memory_id = ? ORDER BY id", []any{id}, func(r scanner) error {
		var e store.Event
		var at int64
		if err := r.Scan(&e.MemoryID, &at, &e.Actor, &e.Action, &e.Detail); err != nil {
			return err
		}
		e.At = fromMS(at)
		t.Events = append(t.Events, e)
		return nil
	})
	if err != nil {
		return store.Trail{}, fmt.Errorf("trail events: %w", err)
	}
	err = s.each(ctx, "SELECT session, seq, entry_hash, memory_id, observed_at FROM observations WHERE memory_id = ? ORDER BY observed_at, lineage_key", []any{id}, func(r scanner) error {
		var o store.Observation
		var seq, at int64
		if err := r.Scan(&o.Session, &seq, &o.EntryHash, &o.MemoryID, &at); err != nil {
			return err
		}
		o.Seq, o.ObservedAt = uint64(seq), fromMS(at)
		t.Observations = append(t.Observations, o)
		return nil
	})
	if err != nil {
		return store.Trail{}, fmt.Errorf("trail observations: %w", err)
	}
	err = s.each(ctx, `SELECT r.id, r.request_id, r.at, r.session, r.action_id, r.query, r.tool_name, i.rank, i.returned_as, i.used_as, i.decision_id
		FROM recall_items i JOIN recalls r ON r.id = i.recall_id WHERE i.memory_id = ? ORDER BY r.at, r.id`, []any{id}, func(r scanner) error {
		var u store.RecallUse
		var at int64
		if err := r.Scan(&u.RecallID, &u.RequestID, &at, &u.Session, &u.ActionID, &u.Query, &u.ToolName, &u.Rank, &u.ReturnedAs, &u.UsedAs, &u.DecisionID); err != nil {
			return err
		}
		u.At = fromMS(at)
		t.Recalls = append(t.Recalls, u)
		return nil
	})
	if err != nil {
		return store.Trail{}, fmt.Errorf("trail recalls: %w", err)
	}
	related := []string{m.SupersededBy, m.Supersedes}
	related = append(related, m.Disputes...)
	t.Related, err = s.queryMemories(ctx, s.db, "SELECT "+memCols+` FROM memories WHERE id <> ? AND (superseded_by = ? OR supersedes = ?
		OR disputes = ? OR disputes LIKE ? OR disputes LIKE ? OR disputes LIKE ? OR id IN (`+placeholders(len(related))+`)) ORDER BY created_at, id`,
		append([]any{id, id, id, id, id + "\n%", "%\n" + id, "%\n" + id + "\n%"}, toAny(related)...)...)
	if err != nil {
		return store.Trail{}, fmt.Errorf("trail related: %w", err)
	}
	if m.DecisionID != "" {
		d, err := s.getDecision(ctx, s.db, m.DecisionID)
		switch {
		case err == nil:
			t.Decision = &d
		case !errors.Is(err, store.ErrNotFound):
			return store.Trail{}, fmt.Errorf("trail decision: %w", err)
		}
	}
	return t, nil
}

func toAny(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

func (s *Store) each(ctx context.Context, query string, args []any, fn func(scanner) error) error {
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
