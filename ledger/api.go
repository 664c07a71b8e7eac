// Package ledger is docket's append-only evidence log: one hash-chained,
// HMAC-signed JSONL file per session, raw artifacts beside it, a signed
// head, RFC 6962 Merkle checkpoints, and offline verification. It knows
// nothing of claims or judges. docs/FORMAT.md is the byte-level contract.
package ledger

import (
	"time"

	"github.com/docket/docket/internal/home"
)

// Ledger appends to and reads the ledgers under one state root. It is safe
// for concurrent use by many processes: every append takes the session's
// exclusive lock.
type Ledger struct {
	home home.Home
	keys *Keys
	now  func() time.Time
	// group, when set, group-commits appends (group.go).
	group *GroupCommit

	// testingOnlyBeforeWrite, when set, runs under the lock just before
	// an entry line is written.
	testingOnlyBeforeWrite func(line []byte)
	// testingOnlyNoSync skips fsync, to build large ledgers quickly.
	testingOnlyNoSync bool
	// testingOnlyFullReads counts reads that verified the whole ledger.
	testingOnlyFullReads int
	// testingOnlyVerifiedEntries counts the entries readers verified in
	// full (chain, hash, MAC, bundle), prefix states aside.
	testingOnlyVerifiedEntries int
}

// Open loads the keys under h. It fails with ErrNoKey (wrapped) when
// `docket init` has not been run.
func Open(h home.Home) (*Ledger, error) {
	keys, err := LoadKeys(h)
	if err != nil {
		return nil, err
	}
	return &Ledger{home: h, keys: keys, now: time.Now}, nil
}

// Home returns the state root the ledger lives under.
func (l *Ledger) Home() home.Home { return l.home }

// Keys returns the loaded keys.
func (l *Ledger) Keys() *Keys { return l.keys }
