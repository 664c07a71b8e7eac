package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/docket/docket/store"
)

// ClaimSession implements store.Store. The insert does nothing when a
// claim exists, and the owner is read back in the same transaction, so
// claims racing from several processes on one database all read the one
// that committed first.
func (s *Store) ClaimSession(ctx context.Context, scope, session, owner string) (string, error) {
	if err := store.CheckSessionClaim(scope, session, owner); err != nil {
		return "", fmt.Errorf("claim session: %w", err)
	}
	var got string
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO session_owners (scope, session, owner, claimed_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (scope, session) DO NOTHING`), scope, session, owner, ms(s.now())); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, s.q("SELECT owner FROM session_owners WHERE scope = ? AND session = ?"), scope, session).Scan(&got)
	})
	if err != nil {
		return "", fmt.Errorf("claim session %s: %w", session, err)
	}
	return got, nil
}

// SessionOwner implements store.Store.
func (s *Store) SessionOwner(ctx context.Context, scope, session string) (string, error) {
	var owner string
	err := s.db.QueryRowContext(ctx, s.q("SELECT owner FROM session_owners WHERE scope = ? AND session = ?"), scope, session).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("session %s: %w", session, store.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("read session owner %s: %w", session, err)
	}
	return owner, nil
}
