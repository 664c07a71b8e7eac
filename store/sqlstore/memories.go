package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/docket/docket/store"
)

const memCols = `id, summary, content, source_kind, source_uri, source_title, source_ts, status, confidence,
	created_by, model, runtime, use_policy, use_reason, behavior, created_at, last_confirmed_at, last_seen_at,
	stale_after, stale, workspace, project, visibility, entities, supersedes, superseded_by, disputes,
	confirmed_by, lifecycle, pattern_key, occurrences, lineage_session, lineage_seq, lineage_hash, decision_id`

// memColsM is memCols qualified by the alias m.
var memColsM = func() string {
	var out []byte
	for i, c := range splitCols(memCols) {
		if i > 0 {
			out = append(out, ", "...)
		}
		out = append(out, "m."+c...)
	}
	return string(out)
}()

func splitCols(cols string) []string {
	var out []string
	cur := []byte{}
	for i := 0; i < len(cols); i++ {
		switch c := cols[i]; c {
		case ',':
			out = append(out, string(cur))
			cur = cur[:0]
		case ' ', '\n', '\t':
		default:
			cur = append(cur, c)
		}
	}
	return append(out, string(cur))
}

type scanner interface{ Scan(dest ...any) error }

func scanMemory(r scanner) (store.Memory, error) {
	var (
		m                                                store.Memory
		srcTS, created, confirmed, seen, staleAfter, seq int64
		stale                                            int
		entities, disputes                               string
	)
	err := r.Scan(&m.ID, &m.Summary, &m.Content, &m.Source.Kind, &m.Source.URI, &m.Source.Title, &srcTS,
		&m.Provenance.Status, &m.Provenance.Confidence, &m.Provenance.CreatedBy, &m.Provenance.Model, &m.Provenance.Runtime,
		&m.UsePolicy, &m.UseReason, &m.Behavior, &created, &confirmed, &seen, &staleAfter, &stale,
		&m.Scope.Workspace, &m.Scope.Project, &m.Scope.Visibility, &entities, &m.Supersedes, &m.SupersededBy, &disputes,
		&m.ConfirmedBy, &m.Lifecycle, &m.PatternKey, &m.Occurrences, &m.Lineage.Session, &seq, &m.Lineage.EntryHash, &m.DecisionID)
	if err != nil {
		return store.Memory{}, err
	}
	m.Source.Timestamp = fromMS(srcTS)
	m.Freshness = store.Freshness{CreatedAt: fromMS(created), LastConfirmedAt: fromMS(confirmed), LastSeenAt: fromMS(seen), StaleAfter: fromMS(staleAfter), Stale: stale == 1}
	m.Lineage.Seq = uint64(seq)
	m.Entities = splitList(entities)
	m.Disputes = splitList(disputes)
	return m, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func memArgs(m *store.Memory) []any {
	return []any{m.ID, m.Summary, m.Content, m.Source.Kind, m.Source.URI, m.Source.Title, ms(m.Source.Timestamp),
		string(m.Provenance.Status), m.Provenance.Confidence, m.Provenance.CreatedBy, m.Provenance.Model, m.Provenance.Runtime,
		string(m.UsePolicy), m.UseReason, m.Behavior, ms(m.Freshness.CreatedAt), ms(m.Freshness.LastConfirmedAt),
		ms(m.Freshness.LastSeenAt), ms(m.Freshness.StaleAfter), b2i(m.Freshness.Stale),
		m.Scope.Workspace, m.Scope.Project, string(m.Scope.Visibility), joinList(m.Entities), m.Supersedes, m.SupersededBy,
		joinList(m.Disputes), m.ConfirmedBy, string(m.Lifecycle), m.PatternKey, m.Occurrences,
		m.Lineage.Session, int64(m.Lineage.Seq), m.Lineage.EntryHash, m.DecisionID}
}

var insertMemorySQL = "INSERT INTO memories (" + memCols + ") VALUES (" + placeholders(35) + ")"

func (s *Store) insertMemory(ctx context.Context, tx *sql.Tx, m *store.Memory) error {
	if _, err := tx.ExecContext(ctx, s.q(insertMemorySQL), memArgs(m)...); err != nil {
		if uniqueViolation(err) {
			return fmt.Errorf("memory %s: %w", m.ID, store.ErrExists)
		}
		return checkViolation(m.ID, err)
	}
	return s.setEntities(ctx, tx, m, false)
}

// setEntities mirrors a memory's entity tags into memory_entities.
func (s *Store) setEntities(ctx context.Context, tx *sql.Tx, m *store.Memory, replace bool) error {
	if replace {
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM memory_entities WHERE memory_id = ?"), m.ID); err != nil {
			return err
		}
	}
	if len(m.Entities) == 0 {
		return nil
	}
	args := make([]any, 0, 3*len(m.Entities))
	for _, e := range m.Entities {
		args = append(args, e, ms(m.Freshness.LastSeenAt), m.ID)
	}
	vals := slices.Repeat([]string{"(?, ?, ?)"}, len(m.Entities))
	_, err := tx.ExecContext(ctx, s.q("INSERT INTO memory_entities (entity, last_seen_at, memory_id) VALUES "+joinComma(vals)), args...)
	return err
}

func joinComma(l []string) string {
	out := ""
	for i, s := range l {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

// updateMemory writes every mutable column of m.
func (s *Store) updateMemory(ctx context.Context, tx *sql.Tx, m *store.Memory, entitiesChanged bool) error {
	_, err := tx.ExecContext(ctx, s.q(`UPDATE memories SET summary = ?, content = ?, status = ?, confidence = ?, use_policy = ?,
		use_reason = ?, last_confirmed_at = ?, last_seen_at = ?, stale_after = ?, stale = ?, project = ?, visibility = ?,
		entities = ?, supersedes = ?, superseded_by = ?, disputes = ?, confirmed_by = ?, lifecycle = ?, occurrences = ?,
		behavior = ? WHERE id = ?`),
		m.Summary, m.Content, string(m.Provenance.Status), m.Provenance.Confidence, string(m.UsePolicy),
		m.UseReason, ms(m.Freshness.LastConfirmedAt), ms(m.Freshness.LastSeenAt), ms(m.Freshness.StaleAfter), b2i(m.Freshness.Stale),
		m.Scope.Project, string(m.Scope.Visibility), joinList(m.Entities), m.Supersedes, m.SupersededBy, joinList(m.Disputes),
		m.ConfirmedBy, string(m.Lifecycle), m.Occurrences, m.Behavior, m.ID)
	if err != nil {
		return checkViolation(m.ID, err)
	}
	if entitiesChanged {
		return s.setEntities(ctx, tx, m, true)
	}
	_, err = tx.ExecContext(ctx, s.q("UPDATE memory_entities SET last_seen_at = ? WHERE memory_id = ?"), ms(m.Freshness.LastSeenAt), m.ID)
	return err
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) getMemory(ctx context.Context, q querier, id string, lock bool) (store.Memory, error) {
	query := "SELECT " + memCols + " FROM memories WHERE id = ?"
	if lock {
		query += s.forUpdate()
	}
	m, err := scanMemory(q.QueryRowContext(ctx, s.q(query), id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Memory{}, fmt.Errorf("memory %s: %w", id, store.ErrNotFound)
	}
	return m, err
}

func (s *Store) queryMemories(ctx context.Context, q querier, query string, args ...any) ([]store.Memory, error) {
	rows, err := q.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// PutMemory implements store.Store.
func (s *Store) PutMemory(ctx context.Context, m store.Memory) (store.Memory, error) {
	m, err := store.Prepare(m, s.now())
	if err != nil {
		return store.Memory{}, fmt.Errorf("put memory: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if err := s.insertMemory(ctx, tx, &m); err != nil {
			return err
		}
		if !m.Lineage.IsZero() {
			return s.insertObservation(ctx, tx, &m, m.Lineage)
		}
		return nil
	})
	if err != nil {
		return store.Memory{}, fmt.Errorf("put memory: %w", err)
	}
	return m, nil
}

// GetMemory implements store.Store.
func (s *Store) GetMemory(ctx context.Context, id string) (store.Memory, error) {
	m, err := s.getMemory(ctx, s.db, id, false)
	if err != nil {
		return store.Memory{}, fmt.Errorf("get memory: %w", err)
	}
	return m, nil
}

func (s *Store) insertObservation(ctx context.Context, tx *sql.Tx, m *store.Memory, l store.Lineage) error {
	_, err := tx.ExecContext(ctx, s.q(`INSERT INTO observations (lineage_key, memory_id, session, seq, entry_hash, observed_at)
		VALUES (?, ?, ?, ?, ?, ?)`), l.Key(), m.ID, l.Session, int64(l.Seq), l.EntryHash, ms(m.Freshness.LastSeenAt))
	return err
}

// errDuplicate aborts an Observe transaction that lost a race.
var errDuplicate = errors.New("lineage already observed")

// Observe implements store.Store.
func (s *Store) Observe(ctx context.Context, m store.Memory) (store.Memory, store.ObserveResult, error) {
	if m.Lineage.IsZero() {
		return store.Memory{}, 0, &store.ValidationError{Field: "lineage", Msg: "an observation needs its ledger entry"}
	}
	m, err := store.Prepare(m, s.now())
	if err != nil {
		return store.Memory{}, 0, fmt.Errorf("observe: %w", err)
	}
	var out store.Memory
	var res store.ObserveResult
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == postgresDialect {
			key := m.Scope.Workspace + "\x1f" + m.PatternKey
			if m.PatternKey == "" {
				key = m.Lineage.Key()
			}
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", key); err != nil {
				return err
			}
		}
		var id string
		err := tx.QueryRowContext(ctx, s.q("SELECT memory_id FROM observations WHERE lineage_key = ?"), m.Lineage.Key()).Scan(&id)
		if err == nil {
			out, err = s.getMemory(ctx, tx, id, false)
			res = store.Duplicate
			return err
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if m.PatternKey != "" {
			old, err := s.queryMemories(ctx, tx, "SELECT "+memCols+` FROM memories WHERE workspace = ? AND pattern_key = ?
				AND lifecycle = 'active' AND status <> 'superseded' ORDER BY created_at, id LIMIT 1`+s.forUpdate(), m.Scope.Workspace, m.PatternKey)
			if err != nil {
				return err
			}
			if len(old) == 1 {
				o := old[0]
				o.Occurrences++
				if m.Freshness.LastSeenAt.After(o.Freshness.LastSeenAt) {
					o.Freshness.LastSeenAt = m.Freshness.LastSeenAt
				}
				if err := s.updateMemory(ctx, tx, &o, false); err != nil {
					return err
				}
				seen := o
				seen.Freshness.LastSeenAt = m.Freshness.LastSeenAt
				if err := s.insertObservation(ctx, tx, &seen, m.Lineage); err != nil {
					if uniqueViolation(err) {
						return errDuplicate
					}
					return err
				}
				out, res = o, store.Reinforced
				return nil
			}
		}
		if err := s.insertMemory(ctx, tx, &m); err != nil {
			return err
		}
		if err := s.insertObservation(ctx, tx, &m, m.Lineage); err != nil {
			if uniqueViolation(err) {
				return errDuplicate
			}
			return err
		}
		out, res = m, store.Created
		return nil
	})
	if errors.Is(err, errDuplicate) {
		return s.Observe(ctx, m)
	}
	if err != nil {
		return store.Memory{}, 0, fmt.Errorf("observe: %w", err)
	}
	return out, res, nil
}

// Import inserts many new memories in one transaction (an import, a
// benchmark seed). Each is prepared and checked like PutMemory; the first
// failure aborts the whole batch.
func (s *Store) Import(ctx context.Context, ms []store.Memory) error {
	now := s.now()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		for _, m := range ms {
			m, err := store.Prepare(m, now)
			if err != nil {
				return err
			}
			if err := s.insertMemory(ctx, tx, &m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("import memories: %w", err)
	}
	return nil
}
