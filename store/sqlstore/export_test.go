package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
)

// MigrateTo applies migrations 1 to version on db, as a store of that
// schema version would have, so that tests can build an old database and
// open it with the current code.
func MigrateTo(ctx context.Context, db *sql.DB, postgres bool, version int) error {
	s := &Store{db: db, dialect: sqliteDialect}
	if postgres {
		s.dialect = postgresDialect
	}
	for v := 1; v <= version; v++ {
		if _, err := db.ExecContext(ctx, s.migrations()[v]); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
		if _, err := db.ExecContext(ctx, s.q("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)"), v); err != nil {
			return fmt.Errorf("record migration %d: %w", v, err)
		}
	}
	return nil
}
