package ledger

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/regular"
)

// ErrNoKey means the state root has no keys: run `docket init`.
var ErrNoKey = errors.New("no ledger keys: run 'docket init'")

// CheckpointKeyName is the signed-note key name of checkpoint signatures.
const CheckpointKeyName = "docket-checkpoint"

// Keys are the secrets the hooks use: the HMAC key that MACs entries and
// the Ed25519 key that signs heads and checkpoints.
type Keys struct {
	hmacKey []byte
	hmacID  string
	retired map[string][]byte // key id -> retired HMAC key, for verification
	skey    string            // Ed25519 signed-note key; parsed only to sign checkpoints
	// vkey reads the checkpoint verifier key on first use (a hook never
	// needs it): keys/checkpoint.vkey, or derived from skey without it.
	vkey func() (string, error)

	secretList [][]byte // see secrets; built on first use
}

// HMACKeyID returns the id of the current HMAC key.
func (k *Keys) HMACKeyID() string { return k.hmacID }

// VerifierKey returns the checkpoint verifier key (public), or "" when
// there is no checkpoint.vkey and the signing key is malformed (signing a
// checkpoint fails then too).
func (k *Keys) VerifierKey() string {
	v, _ := k.vkey()
	return v
}

// MAC returns the id of the current HMAC key and the hex
// HMAC-SHA256 under it of domain, a newline and msg. Callers outside the
// ledger (caches and summaries a key holder vouches for) use it with a
// domain of their own, so no MAC can be replayed as another's.
func (k *Keys) MAC(domain string, msg []byte) (keyID, mac string) {
	m := hmac.New(sha256.New, k.hmacKey)
	m.Write([]byte(domain + "\n"))
	m.Write(msg)
	return k.hmacID, hex.EncodeToString(m.Sum(nil))
}

// CheckMAC reports whether mac is MAC(domain, msg) under the key keyID
// names (current or retired).
func (k *Keys) CheckMAC(domain, keyID string, msg []byte, mac string) bool {
	key, ok := k.hmacKeyFor(keyID)
	if !ok {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(domain + "\n"))
	m.Write(msg)
	return hmac.Equal([]byte(mac), []byte(hex.EncodeToString(m.Sum(nil))))
}

// hmacKeyFor returns the HMAC key with the given id, current or retired.
func (k *Keys) hmacKeyFor(id string) ([]byte, bool) {
	if id == k.hmacID {
		return k.hmacKey, true
	}
	key, ok := k.retired[id]
	return key, ok
}

// KeyID names an HMAC key without revealing it: "hk1-" and the first 16
// hex digits of SHA-256("docket-hmac-key-id\n" || key).
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("docket-hmac-key-id\n"), key...))
	return "hk1-" + hex.EncodeToString(sum[:8])
}

// InitResult says what Init created.
type InitResult struct {
	Created     []string // paths created by this call
	VerifierKey string
}

// Init creates the state root's keys if they are missing. Existing keys are
// never overwritten: a second Init is a no-op. Secret files are created
// with O_EXCL and mode 0400.
func Init(h home.Home) (*InitResult, error) {
	res := &InitResult{}
	if err := os.MkdirAll(h.KeysDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create keys dir: %w", err)
	}
	for _, d := range []string{h.LedgerDir(), h.ArtifactsDir(), h.RunDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create state dir: %w", err)
		}
	}
	if _, err := os.Stat(h.HMACKeyPath()); errors.Is(err, fs.ErrNotExist) {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("generate hmac key: %w", err)
		}
		if err := createSecret(h.HMACKeyPath(), []byte(hex.EncodeToString(key)+"\n")); err != nil {
			return nil, err
		}
		res.Created = append(res.Created, h.HMACKeyPath())
	}
	if _, err := os.Stat(h.CheckpointKeyPath()); errors.Is(err, fs.ErrNotExist) {
		skey, vkey, err := note.GenerateKey(rand.Reader, CheckpointKeyName)
		if err != nil {
			return nil, fmt.Errorf("generate checkpoint key: %w", err)
		}
		if err := createSecret(h.CheckpointKeyPath(), []byte(skey+"\n")); err != nil {
			return nil, err
		}
		res.Created = append(res.Created, h.CheckpointKeyPath())
		// The verifier key is derived from the signing key: rewrite it so a
		// stale vkey never outlives its key.
		if err := home.WriteFileAtomic(h.VerifierKeyPath(), []byte(vkey+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("write verifier key: %w", err)
		}
		res.Created = append(res.Created, h.VerifierKeyPath())
	}
	keys, err := LoadKeys(h)
	if err != nil {
		return nil, err
	}
	vkey, err := keys.vkey()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(h.VerifierKeyPath()); errors.Is(err, fs.ErrNotExist) {
		if err := home.WriteFileAtomic(h.VerifierKeyPath(), []byte(vkey+"\n"), 0o644); err != nil {
			return nil, fmt.Errorf("write verifier key: %w", err)
		}
		res.Created = append(res.Created, h.VerifierKeyPath())
	}
	if _, err := os.Stat(indexPath(h)); errors.Is(err, fs.ErrNotExist) {
		// A new state root starts with an empty index; one written before
		// the index existed gets its current ledgers listed.
		l := &Ledger{home: h, keys: keys}
		if err := os.WriteFile(indexPath(h), nil, 0o600); err != nil {
			return nil, fmt.Errorf("create session index: %w", err)
		}
		if err := l.indexExisting(); err != nil {
			return nil, err
		}
		res.Created = append(res.Created, indexPath(h))
	}
	res.VerifierKey = vkey
	return res, nil
}

func createSecret(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o400)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Base(path), err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("sync %s: %w", filepath.Base(path), err)
	}
	return f.Close()
}

// LoadKeys reads the keys under h. Retired HMAC keys, kept as
// keys/hmac-<id>.key, are loaded for verification only.
func LoadKeys(h home.Home) (*Keys, error) {
	// readFile and regular.DirNames, not os.ReadFile and filepath.Glob:
	// no poller set up for three small files on every hook call
	raw, err := readFile(h.HMACKeyPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (missing %s)", ErrNoKey, h.HMACKeyPath())
	}
	if err != nil {
		return nil, fmt.Errorf("read hmac key: %w", err)
	}
	key, err := parseHMACKey(raw)
	if err != nil {
		return nil, fmt.Errorf("read hmac key %s: %w", h.HMACKeyPath(), err)
	}
	k := &Keys{hmacKey: key, hmacID: KeyID(key), retired: map[string][]byte{}}
	names, _ := regular.DirNames(h.KeysDir())
	for _, name := range names {
		if ok, _ := filepath.Match("hmac-*.key", name); !ok {
			continue
		}
		p := filepath.Join(h.KeysDir(), name)
		raw, err := readFile(p)
		if err != nil {
			return nil, fmt.Errorf("read retired hmac key: %w", err)
		}
		old, err := parseHMACKey(raw)
		if err != nil {
			return nil, fmt.Errorf("read retired hmac key %s: %w", p, err)
		}
		k.retired[KeyID(old)] = old
	}
	skey, err := readFile(h.CheckpointKeyPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w (missing %s)", ErrNoKey, h.CheckpointKeyPath())
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint key: %w", err)
	}
	k.skey = strings.TrimSpace(string(skey))
	k.vkey = sync.OnceValues(func() (string, error) {
		if vkey, err := readFile(h.VerifierKeyPath()); err == nil {
			return strings.TrimSpace(string(vkey)), nil
		}
		return verifierFromSigner(k.skey)
	})
	return k, nil
}

// checkpointSigner parses the Ed25519 checkpoint signing key.
func (k *Keys) checkpointSigner() (note.Signer, error) {
	s, err := note.NewSigner(k.skey)
	if err != nil {
		return nil, errors.New("read checkpoint key: malformed signing key")
	}
	return s, nil
}

func parseHMACKey(raw []byte) ([]byte, error) {
	key, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) < 32 {
		return nil, errors.New("malformed key: want at least 64 hex digits")
	}
	return key, nil
}

// verifierFromSigner derives the vkey of a signed-note Ed25519 signing
// key ("PRIVATE+KEY+<name>+<hash>+<base64(alg || seed)>").
func verifierFromSigner(skey string) (string, error) {
	s, err := note.NewSigner(skey)
	if err != nil {
		return "", errors.New("malformed checkpoint signing key")
	}
	msg := []byte("docket vkey derivation\n")
	sig, err := s.Sign(msg)
	if err != nil {
		return "", err
	}
	pub, err := ed25519PublicFromSigner(skey)
	if err != nil {
		return "", err
	}
	vkey, err := note.NewEd25519VerifierKey(s.Name(), pub)
	if err != nil {
		return "", err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil || !v.Verify(msg, sig) {
		return "", errors.New("checkpoint signing key does not match its public half")
	}
	return vkey, nil
}

// mac computes the entry MAC: HMAC-SHA256 over a domain-separated encoding
// binding session, seq and the entry hash.
func mac(key []byte, session string, seq uint64, hash string) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "docket-ledger-mac-v1\n%s\n%d\n%s", session, seq, hash)
	return hex.EncodeToString(m.Sum(nil))
}
