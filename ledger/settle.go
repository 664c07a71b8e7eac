package ledger

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/docket/docket/internal/home"
)

// Behind reports whether the session's ledger file, or its artifact
// pack, runs past what its signed head covers: the lines of a writer that
// died before writing the head (a crash, kill -9 of the daemon amid a
// commit round), or the bundle of one that died before writing its line. `docket
// verify` reports such a ledger as "head behind" until Settle, or the
// next append, brings the head up. A session without a head (a new
// ledger, or one whose head is missing) is not behind: that is the
// append's and verify's business.
func (l *Ledger) Behind(session string) (bool, error) {
	if !home.ValidSessionID(session) {
		return false, fmt.Errorf("behind: %w %q", ErrBadSession, session)
	}
	sf := filesFor(l.home, session)
	st, err := os.Stat(sf.ledger)
	if isNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("behind: %w", err)
	}
	c, _, err := readHead(sf.head, l.keys.headVerifiers())
	if isNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("behind: head: %w", err)
	}
	if st.Size() > c.End {
		return true, nil
	}
	// a bundle written without its line: the writer died between the two
	if c.Pack >= 0 {
		if ps, err := os.Stat(filepath.Join(sf.artifacts, PackName)); err == nil && ps.Size() > c.Pack {
			return true, nil
		}
	}
	return false, nil
}

// Settle does for a session what its next append does first, and
// appends nothing: under the session's lock, the lines past the signed
// head that check out (chain, MAC, an intact bundle next in the pack)
// are synced and covered by a new head, and a torn or invalid tail is
// sealed (a seal entry keeps its bytes). A ledger with nothing past its
// head is left as it is.
func (l *Ledger) Settle(session string) error {
	if !home.ValidSessionID(session) {
		return fmt.Errorf("settle: %w %q", ErrBadSession, session)
	}
	sf := filesFor(l.home, session)
	if _, err := os.Stat(sf.ledger); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	unlock, err := l.lockSession(sf) // group.go
	if err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	defer unlock()
	w, err := l.openWriter(sf, session)
	if err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	defer w.close()
	if err := w.recover(); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	w.saveState()
	return nil
}

// SettleAll settles every session of the state root that is behind its
// head, and returns the sessions it settled. A session it cannot settle
// is reported in the error and the others are still settled.
func (l *Ledger) SettleAll() ([]string, error) {
	sessions, err := Sessions(l.home)
	if err != nil {
		return nil, err
	}
	var settled []string
	var firstErr error
	for _, s := range sessions {
		behind, err := l.Behind(s)
		if err == nil && behind {
			if err = l.Settle(s); err == nil {
				settled = append(settled, s)
			}
		}
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("session %s: %w", s, err)
		}
	}
	return settled, firstErr
}
