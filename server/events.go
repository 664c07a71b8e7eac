package server

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
)

// Event types.
const (
	EventLedgerAppend     = "ledger.append"
	EventDecisionWritten  = "decision.written"
	EventDecisionJudged   = "decision.evaluated"
	EventReviewAction     = "review.action"
	EventApprovalResolved = "approval.resolved"
	EventApprovalQueued   = "approval.queued"
)

// Event is one entry of the event log. Seq is its SSE id: strictly
// increasing in commit order, so a reader that saw Seq n has seen every
// event before it, and resuming after n loses nothing.
type Event struct {
	Seq  int64           `json:"seq"`
	Key  string          `json:"key"`
	At   time.Time       `json:"at"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// EventLog is the durable event sequence, a table in the store's own
// database (serve_events) so that every replica on one PostgreSQL serves
// the same sequence. Each event has a unique key naming what it reports
// ("decision:<id>", "ledger:<session>:<seq>"): appending a key twice
// stores it once, so a retried request or a second replica's ledger
// tailer never duplicates an event.
//
// Ordering: on SQLite writers are serialized by the database; on
// PostgreSQL each append takes a transaction-scoped advisory lock before
// drawing its seq, so seqs become visible in order and a reader never
// skips a seq that commits later.
type EventLog struct {
	db       *sql.DB
	postgres bool

	mu      sync.Mutex
	waiters map[chan struct{}]struct{}
}

// eventLock is the advisory lock id that orders event appends.
const eventLock = 7304502

// OpenEventLog creates the event table if needed.
func OpenEventLog(ctx context.Context, db *sql.DB, postgres bool) (*EventLog, error) {
	ddl := `CREATE TABLE IF NOT EXISTS serve_events (
		seq INTEGER PRIMARY KEY AUTOINCREMENT,
		key TEXT NOT NULL UNIQUE,
		at INTEGER NOT NULL,
		type TEXT NOT NULL,
		data TEXT NOT NULL)`
	if postgres {
		ddl = `CREATE TABLE IF NOT EXISTS serve_events (
		seq BIGSERIAL PRIMARY KEY,
		key TEXT NOT NULL UNIQUE,
		at BIGINT NOT NULL,
		type TEXT NOT NULL,
		data TEXT NOT NULL)`
		// concurrent replicas may race on CREATE TABLE IF NOT EXISTS
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return nil, fmt.Errorf("open event log: %w", err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", eventLock); err != nil {
			return nil, fmt.Errorf("open event log: %w", err)
		}
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return nil, fmt.Errorf("open event log: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return nil, fmt.Errorf("open event log: %w", err)
		}
	} else if _, err := db.ExecContext(ctx, ddl); err != nil {
		return nil, fmt.Errorf("open event log: %w", err)
	}
	return &EventLog{db: db, postgres: postgres, waiters: map[chan struct{}]struct{}{}}, nil
}

// Append stores an event unless its key is already stored, and wakes the
// local readers. It returns once the event is durable.
func (l *EventLog) Append(ctx context.Context, key, typ string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	now := time.Now().UnixMilli()
	if l.postgres {
		err = l.pgAppend(ctx, key, typ, string(b), now)
	} else {
		_, err = l.db.ExecContext(ctx, "INSERT INTO serve_events (key, at, type, data) VALUES (?, ?, ?, ?) ON CONFLICT (key) DO NOTHING", key, now, typ, string(b))
	}
	if err != nil {
		return fmt.Errorf("append event: %w", err)
	}
	l.wake()
	return nil
}

// AppendReview reports a review action, taken through the API or the
// CLI (which opens the event log in the same database).
func (l *EventLog) AppendReview(ctx context.Context, a store.ReviewAction, m store.Memory, it store.ReviewItem) error {
	ev := map[string]any{"item_id": it.ID, "memory_id": m.ID, "action": a.Action, "actor": a.Actor, "use_policy": m.UsePolicy, "status": m.Provenance.Status}
	return l.Append(ctx, "review:"+m.ID+":"+a.Action+":"+strconv.FormatInt(time.Now().UnixNano(), 36), EventReviewAction, ev)
}

// AppendApproval reports an approval's resolution.
func (l *EventLog) AppendApproval(ctx context.Context, a store.Approval) error {
	ev := map[string]any{"approval_id": a.ID, "status": a.Status, "by": a.ResolvedBy, "session": a.Session, "tool": a.Tool}
	return l.Append(ctx, "approval:"+a.ID+":"+string(a.Status)+":"+strconv.FormatInt(time.Now().UnixNano(), 36), EventApprovalResolved, ev)
}

// pgAppend inserts the event in one statement (one round trip): its
// implicit transaction takes the advisory lock before the seq is drawn
// and holds it until commit, so seqs commit in order.
func (l *EventLog) pgAppend(ctx context.Context, key, typ, data string, now int64) error {
	const q = `WITH lock AS (SELECT pg_advisory_xact_lock($1))
		INSERT INTO serve_events (key, at, type, data) SELECT $2, $3, $4, $5 FROM lock
		ON CONFLICT (key) DO NOTHING`
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if _, err = l.db.ExecContext(ctx, q, eventLock, key, now, typ, data); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// After returns up to limit events with seq greater than after, in order.
func (l *EventLog) After(ctx context.Context, after int64, limit int) ([]Event, error) {
	q := "SELECT seq, key, at, type, data FROM serve_events WHERE seq > ? ORDER BY seq LIMIT ?"
	if l.postgres {
		q = "SELECT seq, key, at, type, data FROM serve_events WHERE seq > $1 ORDER BY seq LIMIT $2"
	}
	rows, err := l.db.QueryContext(ctx, q, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var at int64
		var data string
		if err := rows.Scan(&e.Seq, &e.Key, &at, &e.Type, &data); err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		e.At, e.Data = time.UnixMilli(at).UTC(), json.RawMessage(data)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Newest returns the seq of the newest event, 0 when the log is empty.
func (l *EventLog) Newest(ctx context.Context) (int64, error) {
	var n int64
	if err := l.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM serve_events").Scan(&n); err != nil {
		return 0, fmt.Errorf("read newest event: %w", err)
	}
	return n, nil
}

// wait returns a channel closed at the next local Append.
func (l *EventLog) wait() (chan struct{}, func()) {
	ch := make(chan struct{})
	l.mu.Lock()
	l.waiters[ch] = struct{}{}
	l.mu.Unlock()
	return ch, func() {
		l.mu.Lock()
		delete(l.waiters, ch)
		l.mu.Unlock()
	}
}

func (l *EventLog) wake() {
	l.mu.Lock()
	for ch := range l.waiters {
		close(ch)
		delete(l.waiters, ch)
	}
	l.mu.Unlock()
}

// TailLedgers turns every ledger entry appended under h — by the hooks,
// `docket validate` or the server's own evaluations — into a
// ledger.append event, polling every interval until ctx ends. The first
// pass covers the entries already there (their keys make the pass
// idempotent across restarts and replicas).
func (l *EventLog) TailLedgers(ctx context.Context, h home.Home, interval time.Duration, onErr func(error)) {
	offsets := map[string]int64{}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := l.scanLedgers(ctx, h, offsets); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (l *EventLog) scanLedgers(ctx context.Context, h home.Home, offsets map[string]int64) error {
	sessions, err := ledger.Sessions(h)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		path := h.LedgerPath(s)
		st, err := os.Stat(path)
		if err != nil || st.Size() == offsets[s] {
			continue
		}
		n, err := l.tailFile(ctx, path, offsets[s])
		offsets[s] = n
		if err != nil {
			return fmt.Errorf("tail ledger %s: %w", filepath.Base(path), err)
		}
	}
	return nil
}

// tailFile appends an event per complete line from offset on and returns
// the offset after the last complete line.
func (l *EventLog) tailFile(ctx context.Context, path string, offset int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return offset, nil // a partial line waits for its newline
		}
		if err != nil {
			return offset, err
		}
		offset += int64(len(line))
		e, perr := ledger.ParseEntry([]byte(strings.TrimSuffix(string(line), "\n")))
		if perr != nil {
			continue // verify reports it; the event log carries what parses
		}
		data := map[string]any{"session": e.Session, "seq": e.Seq, "kind": e.Kind, "time": e.Time, "hash": e.Hash}
		if e.Tool != "" {
			data["tool"] = e.Tool
		}
		if err := l.Append(ctx, fmt.Sprintf("ledger:%s:%d", e.Session, e.Seq), EventLedgerAppend, data); err != nil {
			return offset - int64(len(line)), err
		}
	}
}
