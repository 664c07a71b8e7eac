// Package sqlstore is the SQL store.Store: SQLite (pure Go, the default,
// one file under the state root) and PostgreSQL (pgx, for teams sharing
// one memory). Both run the same queries through database/sql, differ
// only in their migrations, full-text search and locking, and pass the
// same conformance suite (store/storetest).
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/store"
)

// EnvDSN names the environment variable that selects the backend.
const EnvDSN = "DOCKET_STORE_DSN"

// Store is a SQL store.Store.
type Store struct {
	db      *sql.DB
	dialect dialect
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Relevance is the recall scoring configuration; nil means the
	// default. Open loads it from policies/relevance.json.
	Relevance *store.Relevance
}

var _ store.Store = (*Store)(nil)

type dialect int

const (
	sqliteDialect dialect = iota
	postgresDialect
)

func (d dialect) String() string {
	if d == postgresDialect {
		return "postgres"
	}
	return "sqlite"
}

// Open opens the store a DSN names, creating and migrating it as needed:
//
//   - "" — SQLite at h.StorePath() ($DOCKET_HOME/store.db);
//   - "sqlite:PATH" or "file:PATH" — SQLite at PATH;
//   - "postgres://…" or "postgresql://…" — PostgreSQL.
//
// Callers usually pass os.Getenv(EnvDSN).
func Open(ctx context.Context, h home.Home, dsn string) (*Store, error) {
	rel, err := loadRelevance(h)
	if err != nil {
		return nil, err
	}
	s, err := open(ctx, h, dsn)
	if err != nil {
		return nil, err
	}
	s.Relevance = rel
	return s, nil
}

// loadRelevance reads policies/relevance.json when it replaces the
// embedded default; an unusable file is an error, never the default.
func loadRelevance(h home.Home) (*store.Relevance, error) {
	if h.Root == "" {
		return nil, nil
	}
	src, err := policies.Load(h, store.RelevanceFile)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if def, _ := policies.Default(store.RelevanceFile); strings.HasPrefix(src.Origin, "embedded:") || string(def) == string(src.Data) {
		return nil, nil // the default, already built
	}
	r, err := store.ParseRelevance(src.Data)
	if err != nil {
		return nil, fmt.Errorf("open store: policy %s: %w", src.Origin, err)
	}
	return r, nil
}

func open(ctx context.Context, h home.Home, dsn string) (*Store, error) {
	switch {
	case dsn == "":
		if h.Root == "" {
			return nil, errors.New("open store: no state root")
		}
		return OpenSQLite(ctx, h.StorePath())
	case strings.HasPrefix(dsn, "sqlite:"):
		return OpenSQLite(ctx, strings.TrimPrefix(dsn, "sqlite:"))
	case strings.HasPrefix(dsn, "file:"):
		return OpenSQLite(ctx, strings.TrimPrefix(dsn, "file:"))
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		return OpenPostgres(ctx, dsn)
	}
	return nil, fmt.Errorf("open store: unsupported %s %q (want sqlite:PATH or postgres://…)", EnvDSN, redact(dsn))
}

// redact hides a DSN's password.
func redact(dsn string) string {
	if i := strings.Index(dsn, "@"); i > 0 {
		if j := strings.Index(dsn, "://"); j > 0 && j < i {
			return dsn[:j+3] + "…@" + dsn[i+1:]
		}
	}
	return dsn
}

// OpenSQLite opens (creating with mode 0600) the SQLite store at path.
func OpenSQLite(ctx context.Context, path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	if f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600); err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	} else {
		f.Close()
	}
	q := "?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_pragma=wal_autocheckpoint(256)"
	db, err := sql.Open("sqlite", "file:"+path+q)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	db.SetMaxIdleConns(4)
	s := &Store{db: db, dialect: sqliteDialect}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

// OpenPostgres opens the PostgreSQL store at dsn.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	db.SetConnMaxIdleTime(5 * time.Minute)
	s := &Store{db: db, dialect: postgresDialect}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", redact(dsn), err)
	}
	return s, nil
}

// DB exposes the database for tests and tools that read the schema.
func (s *Store) DB() *sql.DB { return s.db }

// Postgres reports whether the store is a PostgreSQL database.
func (s *Store) Postgres() bool { return s.dialect == postgresDialect }

// Close implements store.Store.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Store) migrations() []string {
	if s.dialect == postgresDialect {
		return postgresMigrations
	}
	return sqliteMigrations
}

// SchemaVersion is the newest migration this code knows.
func SchemaVersion() int { return len(sqliteMigrations) - 1 }

// migrate applies missing migrations. The cheap path — one query finding
// the schema current — is what every hook pays.
func (s *Store) migrate(ctx context.Context) error {
	want := len(s.migrations()) - 1
	var have int
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&have)
	if err == nil && have == want {
		return nil
	}
	if err == nil && have > want {
		return fmt.Errorf("schema version %d is newer than this docket (%d)", have, want)
	}
	return s.tx(ctx, func(tx *sql.Tx) error {
		if s.dialect == postgresDialect {
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7304501)"); err != nil {
				return fmt.Errorf("lock schema: %w", err)
			}
		}
		have := 0
		var exists bool
		if s.dialect == postgresDialect {
			err = tx.QueryRowContext(ctx, "SELECT to_regclass('schema_migrations') IS NOT NULL").Scan(&exists)
		} else {
			err = tx.QueryRowContext(ctx, "SELECT count(*) > 0 FROM sqlite_master WHERE name = 'schema_migrations'").Scan(&exists)
		}
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if exists {
			if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&have); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
		}
		for v := have + 1; v <= want; v++ {
			if _, err := tx.ExecContext(ctx, s.migrations()[v]); err != nil {
				return fmt.Errorf("migration %d: %w", v, err)
			}
			if _, err := tx.ExecContext(ctx, s.q("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"), v, ms(s.now())); err != nil {
				return fmt.Errorf("record migration %d: %w", v, err)
			}
		}
		return nil
	})
}

// q rewrites ? placeholders for the dialect.
func (s *Store) q(query string) string {
	if s.dialect != postgresDialect {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (s *Store) forUpdate() string {
	if s.dialect == postgresDialect {
		return " FOR UPDATE"
	}
	return ""
}

// tx runs fn in a transaction (BEGIN IMMEDIATE on SQLite), retrying a
// PostgreSQL serialization failure or deadlock a few times.
func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var tx *sql.Tx
		tx, err = s.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err = fn(tx); err != nil {
			tx.Rollback()
			if retryable(err) {
				continue
			}
			return err
		}
		if err = tx.Commit(); err != nil && retryable(err) {
			continue
		}
		return err
	}
	return err
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	return false
}

// uniqueViolation reports whether err is a unique or primary key conflict.
func uniqueViolation(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505"
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	return false
}

// checkViolation turns a CHECK constraint failure into *store.InvariantError.
func checkViolation(id string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23514" {
		return &store.InvariantError{MemoryID: id, Rule: "schema: " + pe.ConstraintName}
	}
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_CHECK {
		return &store.InvariantError{MemoryID: id, Rule: "schema: " + se.Error()}
	}
	return err
}

// ms is t in Unix milliseconds; the zero time is 0.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromMS inverts ms.
func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

func joinList(l []string) string { return strings.Join(l, "\n") }

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// OpenPostgresRaw opens a PostgreSQL connection pool without migrating; for
// tests and tools that manage schemas.
func OpenPostgresRaw(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", redact(dsn), err)
	}
	return db, nil
}
