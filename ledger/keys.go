package ledger

import (
	"errors"

	"github.com/docket/docket/internal/home"
)

// ErrNoKey means the state root has no keys: run `docket init`.
var ErrNoKey = errors.New("no ledger keys: run 'docket init'")

// Keys are the secrets the hooks use: the HMAC key that signs entries and
// the Ed25519 key that signs heads and checkpoints.
type Keys struct{}

// LoadKeys reads the keys under h.
func LoadKeys(h home.Home) (*Keys, error) { return nil, ErrNoKey }
