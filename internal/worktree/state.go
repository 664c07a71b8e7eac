package worktree

import (
	"path/filepath"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// KeyPurpose names the key that MACs the stat cache (ledger.Keys.Derive).
const KeyPurpose = "worktree stat cache v1"

// StateStore is the store of state root h: caches and manifests under
// run/worktree, MACed with a key derived from keys (nil: no cache), and
// h itself left out of every scan.
func StateStore(h home.Home, keys *ledger.Keys) Store {
	s := Store{Dir: filepath.Join(h.RunDir(), "worktree"), Exclude: []string{h.Root}}
	if keys != nil {
		s.Key = keys.Derive(KeyPurpose)
	}
	return s
}

// LedgerStore is StateStore for the state root a ledger lives under, or
// the zero Store when l is not a state root's ledger (an in-memory fake).
func LedgerStore(l any) Store {
	sl, ok := l.(interface {
		Home() home.Home
		Keys() *ledger.Keys
	})
	if !ok || sl.Home().Root == "" {
		return Store{}
	}
	return StateStore(sl.Home(), sl.Keys())
}
