package store

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns prefix + "_" + 16 random hex digits.
func NewID(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
