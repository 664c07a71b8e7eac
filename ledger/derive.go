package ledger

import (
	"crypto/hmac"
	"crypto/sha256"
)

// Derive returns a 32-byte key for one purpose, derived from the current
// HMAC key as HMAC-SHA256(key, "docket-derive\n" || purpose). It lets
// other bookkeeping under the state root (e.g. the working-tree stat
// cache) be authenticated without handing out the ledger key itself.
func (k *Keys) Derive(purpose string) []byte {
	m := hmac.New(sha256.New, k.hmacKey)
	m.Write([]byte("docket-derive\n" + purpose))
	return m.Sum(nil)
}
