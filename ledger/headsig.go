package ledger

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"

	"golang.org/x/mod/sumdb/note"
)

// Heads are signed notes too, but signed with the HMAC key rather than
// the Ed25519 key: a hook appends on every tool call, and the first
// Ed25519 operation in a fresh process costs close to a millisecond.
// Checkpoints handed to auditors ('docket checkpoint') carry the same
// text signed with Ed25519.

// HeadKeyName is the signed-note key name of head MACs.
const HeadKeyName = "docket-head"

type headMAC struct {
	key  []byte
	hash uint32
}

func newHeadMAC(key []byte) headMAC {
	sum := sha256.Sum256(append([]byte("docket-head-key-hash\n"), key...))
	return headMAC{key: key, hash: binary.BigEndian.Uint32(sum[:4])}
}

func (h headMAC) Name() string    { return HeadKeyName }
func (h headMAC) KeyHash() uint32 { return h.hash }

func (h headMAC) Sign(msg []byte) ([]byte, error) { return h.sum(msg), nil }

func (h headMAC) Verify(msg, sig []byte) bool { return hmac.Equal(sig, h.sum(msg)) }

func (h headMAC) sum(msg []byte) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write([]byte("docket-head-v1\n"))
	m.Write(msg)
	return m.Sum(nil)
}

var (
	_ note.Signer   = headMAC{}
	_ note.Verifier = headMAC{}
)

// headVerifiers accepts head MACs of the current and retired keys.
func (k *Keys) headVerifiers() note.Verifiers {
	list := []note.Verifier{newHeadMAC(k.hmacKey)}
	for _, old := range k.retired {
		list = append(list, newHeadMAC(old))
	}
	return note.VerifierList(list...)
}
