package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/docket/docket/store"
)

// entityCandidates bounds the memories fetched per entity tag, and
// perTermCandidates those per query word (SQLite).
const (
	entityCandidates  = 20
	perTermCandidates = 15
)

// Recall implements store.Store: candidates come from the full-text index
// (FTS5 bm25 / ts_rank, best store.CandidateLimit) and from the entity
// index (most recently seen per tag); store.Select filters and ranks them;
// the returned items are recorded in recalls and recall_items.
func (s *Store) Recall(ctx context.Context, req store.RecallRequest) (store.RecallResponse, error) {
	req, err := store.ValidateRecall(req)
	if err != nil {
		return store.RecallResponse{}, fmt.Errorf("recall: %w", err)
	}
	now := s.now()
	cands, err := s.candidates(ctx, req)
	if err != nil {
		return store.RecallResponse{}, fmt.Errorf("recall: %w", err)
	}
	resp, trace := store.SelectWith(s.Relevance, req, cands, now)
	resp.RecallID = store.NewID("rcl")
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO recalls (id, request_id, at, session, action_id, workspace, query, tool_name)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), resp.RecallID, req.RequestID, ms(now.Truncate(1e6)), req.Session, req.ActionID,
			req.Workspace, req.Query.Summary, req.Query.ToolName); err != nil {
			return err
		}
		if len(trace) == 0 {
			return nil
		}
		args := make([]any, 0, 4*len(trace))
		vals := make([]string, 0, len(trace))
		for _, t := range trace {
			args = append(args, resp.RecallID, t.MemoryID, t.Rank, t.ReturnedAs)
			vals = append(vals, "(?, ?, ?, ?)")
		}
		_, err := tx.ExecContext(ctx, s.q("INSERT INTO recall_items (recall_id, memory_id, rank, returned_as) VALUES "+strings.Join(vals, ", ")), args...)
		return err
	})
	if err != nil {
		return store.RecallResponse{}, fmt.Errorf("record recall: %w", err)
	}
	return resp, nil
}

func (s *Store) candidates(ctx context.Context, req store.RecallRequest) ([]store.Candidate, error) {
	var out []store.Candidate
	add := func(ms []store.Memory) {
		for _, m := range ms {
			out = append(out, store.Candidate{Memory: m})
		}
	}
	scope := "m.lifecycle = 'active' AND (m.workspace = ? OR m.visibility = 'org')"
	if terms := store.SearchTerms(req); len(terms) > 0 {
		var ms []store.Memory
		var err error
		if s.dialect == postgresDialect {
			// As on SQLite: each word's newest matches, ranked in Go.
			// ts_rank over an OR of common words scores every match.
			parts := make([]string, 0, len(terms))
			args := make([]any, 0, 3*len(terms)+1)
			for _, t := range terms {
				parts = append(parts, "(SELECT id FROM memories WHERE workspace = ? AND search @@ to_tsquery('english', ?) ORDER BY last_seen_at DESC LIMIT ?)")
				args = append(args, req.Workspace, quoteTS(t), perTermCandidates)
			}
			parts = append(parts, "(SELECT id FROM memories WHERE visibility = 'org' AND search @@ to_tsquery('english', ?) ORDER BY last_seen_at DESC LIMIT ?)")
			args = append(args, strings.Join(quoteAll(terms), " | "), store.CandidateLimit)
			args = append(args, req.Workspace)
			ms, err = s.queryMemories(ctx, s.db, "SELECT "+memColsM+" FROM memories m WHERE m.id IN ("+strings.Join(parts, " UNION ")+") AND "+scope, args...)
		} else {
			// bm25 ordering costs a score per match (tens of ms for a word
			// in a quarter of 100,000 memories), so FTS5 only finds
			// candidates — each word's newest matches, walked in rowid
			// order and cut by LIMIT — and store.Select ranks them.
			parts := make([]string, 0, len(terms)+1)
			args := make([]any, 0, 2*len(terms)+3)
			quoted := make([]string, len(terms))
			for i, t := range terms {
				quoted[i] = `"` + t + `"`
				parts = append(parts, "SELECT * FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?)")
				args = append(args, quoted[i], perTermCandidates)
			}
			args = append(args, req.Workspace)
			ms, err = s.queryMemories(ctx, s.db, "SELECT "+memColsM+" FROM memories m WHERE m.rowid IN ("+strings.Join(parts, " UNION ")+") AND "+scope, args...)
		}
		if err != nil {
			return nil, fmt.Errorf("full-text candidates: %w", err)
		}
		add(ms)
	}
	if tags := store.RequestTags(req); len(tags) > 0 {
		parts := make([]string, len(tags))
		args := make([]any, 0, 2*len(tags)+1)
		for i, t := range tags {
			parts[i] = "SELECT * FROM (SELECT memory_id FROM memory_entities WHERE entity = ? ORDER BY last_seen_at DESC LIMIT ?) e" + fmt.Sprint(i)
			args = append(args, t, entityCandidates)
		}
		args = append(args, req.Workspace)
		ms, err := s.queryMemories(ctx, s.db, "SELECT "+memColsM+" FROM memories m WHERE m.id IN ("+strings.Join(parts, " UNION ")+") AND "+scope, args...)
		if err != nil {
			return nil, fmt.Errorf("entity candidates: %w", err)
		}
		add(ms)
	}
	return out, nil
}

// RecordUse implements store.Store.
func (s *Store) RecordUse(ctx context.Context, recallID, decisionID string, uses []store.MemoryUse) error {
	err := s.tx(ctx, func(tx *sql.Tx) error { return s.recordUse(ctx, tx, recallID, "", decisionID, uses) })
	if err != nil {
		return fmt.Errorf("record use: %w", err)
	}
	return nil
}

// recordUse marks the items of recall recallID a decision used. With
// workspace set, the recall must have been made in it: a decision never
// marks another workspace's recall.
func (s *Store) recordUse(ctx context.Context, tx *sql.Tx, recallID, workspace, decisionID string, uses []store.MemoryUse) error {
	var n int
	if err := tx.QueryRowContext(ctx, s.q("SELECT count(*) FROM recalls WHERE id = ? AND (? = '' OR workspace = ?)"), recallID, workspace, workspace).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("recall %s: %w", recallID, store.ErrNotFound)
	}
	for _, u := range uses {
		if _, err := tx.ExecContext(ctx, s.q("UPDATE recall_items SET used_as = ?, decision_id = ? WHERE recall_id = ? AND memory_id = ?"),
			u.UsedAs, decisionID, recallID, u.MemoryID); err != nil {
			return err
		}
	}
	return nil
}

// quoteTS makes a word a to_tsquery operand that cannot be read as an
// operator.
func quoteTS(w string) string { return "'" + strings.ReplaceAll(w, "'", "") + "'" }

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = quoteTS(w)
	}
	return out
}
