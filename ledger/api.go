// Package ledger is docket's append-only evidence log: one hash-chained,
// HMAC-signed JSONL file per session, raw artifacts beside it, a signed
// head, RFC 6962 Merkle checkpoints, and offline verification. It knows
// nothing of claims or judges. docs/FORMAT.md is the byte-level contract.
package ledger

import (
	"errors"

	"github.com/docket/docket/internal/home"
)

// Ledger appends to and reads the ledgers under one state root. It is safe
// for concurrent use by many processes: every append takes the session's
// exclusive lock.
type Ledger struct {
	home home.Home
	keys *Keys
}

// Open loads the keys under h. It fails with ErrNoKey (wrapped) when
// `docket init` has not been run.
func Open(h home.Home) (*Ledger, error) {
	keys, err := LoadKeys(h)
	if err != nil {
		return nil, err
	}
	return &Ledger{home: h, keys: keys}, nil
}

// Home returns the state root the ledger lives under.
func (l *Ledger) Home() home.Home { return l.home }

// Append writes one entry for r to the session's ledger and returns it.
// It seals a torn tail left by a crash before appending. On error nothing
// is appended.
func (l *Ledger) Append(session string, r Record) (*Entry, error) {
	return nil, errors.New("not built yet")
}

// ReadVerified reads the session's ledger and verifies chain, MACs, head
// and artifacts. It returns the entries only when all of it verifies;
// otherwise the error is a *VerifyError naming the first bad entry.
// A session with no ledger yields no entries and no error.
func (l *Ledger) ReadVerified(session string) ([]*Entry, error) {
	return nil, errors.New("not built yet")
}

// OpenArtifact opens the named artifact of e for reading.
func (l *Ledger) OpenArtifact(e *Entry, name string) (ReadSeekCloser, error) {
	return nil, errors.New("not built yet")
}
