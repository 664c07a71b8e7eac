package ledger

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
)

// ed25519PublicFromSigner extracts the public key of a signed-note
// Ed25519 signing key. The encoding is "PRIVATE+KEY+name+hash+key" with
// key = base64(0x01 || 32-byte seed), as golang.org/x/mod/sumdb/note
// writes it.
func ed25519PublicFromSigner(skey string) (ed25519.PublicKey, error) {
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return nil, errors.New("malformed checkpoint signing key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return nil, errors.New("checkpoint signing key is not an Ed25519 note key")
	}
	return ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey), nil
}
