package ledger

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/docket/docket/internal/canonjson"
)

// Key material never reaches the ledger or the artifact pack: a tool
// output that contains the HMAC key or the checkpoint signing key (an
// agent ran `cat keys/hmac.key`) is stored with each occurrence replaced
// by RedactionMarker, and the entry's body records which artifacts were
// redacted. The encodings searched are the ones the key files use and
// their obvious variants: for every HMAC key (current and retired) the
// raw bytes, hex (lower and upper case), standard and URL base64; for the
// checkpoint key the whole signed-note key string, its base64 field, the
// raw seed and the seed's hex.

// RedactionMarker replaces key material in artifacts and bodies.
const RedactionMarker = "[docket: redacted key material]"

// minSecretLen keeps short encodings (none today) from matching noise.
const minSecretLen = 16

// secretsMu guards building Keys.secretList.
var secretsMu sync.Mutex

// secrets returns the byte strings that must never be stored, longest
// first so that a longer encoding wins over a substring of it.
func (k *Keys) secrets() [][]byte {
	if k == nil {
		return nil
	}
	// one Keys serves concurrent appends in docket serve
	secretsMu.Lock()
	defer secretsMu.Unlock()
	if k.secretList != nil {
		return k.secretList
	}
	var out [][]byte
	seen := map[string]bool{} // URL and standard base64 often agree
	add := func(s []byte) {
		if len(s) >= minSecretLen && !seen[string(s)] {
			seen[string(s)] = true
			out = append(out, s)
		}
	}
	hmacs := [][]byte{k.hmacKey}
	for _, old := range k.retired {
		hmacs = append(hmacs, old)
	}
	for _, key := range hmacs {
		h := hex.EncodeToString(key)
		add(key)
		add([]byte(h))
		add([]byte(strings.ToUpper(h)))
		add([]byte(base64.StdEncoding.EncodeToString(key)))
		add([]byte(base64.RawStdEncoding.EncodeToString(key)))
		add([]byte(base64.URLEncoding.EncodeToString(key)))
		add([]byte(base64.RawURLEncoding.EncodeToString(key)))
		add([]byte(strings.TrimRight(base32.StdEncoding.EncodeToString(key), "=")))
		// The key file holds the hex text, so `base64 hmac.key` and
		// `base32 hmac.key` encode h (and its newline), wrapped at 76
		// columns. Whole groups of h's first 57 (45) bytes encode the
		// same whatever follows: exactly the first wrapped line.
		if len(h) >= 57 { // always: a key has at least 32 bytes
			add([]byte(base64.StdEncoding.EncodeToString([]byte(h[:57]))))
			add([]byte(base64.URLEncoding.EncodeToString([]byte(h[:57]))))
			add([]byte(base32.StdEncoding.EncodeToString([]byte(h[:45]))))
		}
	}
	if k.skey != "" {
		add([]byte(k.skey))
		// PRIVATE+KEY+<name>+<hash>+<key>: the key field is standard
		// base64 and may itself contain '+'
		if parts := strings.SplitN(k.skey, "+", 5); len(parts) == 5 {
			field := parts[4]
			add([]byte(field))
			if raw, err := base64.StdEncoding.DecodeString(field); err == nil && len(raw) > 1 {
				add(raw)
				add(raw[1:])
				add([]byte(hex.EncodeToString(raw[1:])))
				add([]byte(strings.ToUpper(hex.EncodeToString(raw[1:]))))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	k.secretList = out
	return out
}

// redactBytes replaces every secret in b and reports how many it replaced.
func redactBytes(b []byte, secrets [][]byte) ([]byte, int) {
	n := 0
	for _, s := range secrets {
		if !bytes.Contains(b, s) {
			continue
		}
		n += bytes.Count(b, s)
		b = bytes.ReplaceAll(b, s, []byte(RedactionMarker))
	}
	return b, n
}

// redactChunk is how much a redactReader reads at a time.
const redactChunk = 32 << 10

// redactReader streams r with every secret replaced. It keeps back the
// last maxLen-1 bytes of each chunk so a secret split across reads is
// still found.
type redactReader struct {
	r       io.Reader
	secrets [][]byte
	keep    int
	chunk   []byte
	buf     []byte // read but not yet released
	out     []byte // released, not yet returned
	eof     bool
	count   int
}

func newRedactReader(r io.Reader, secrets [][]byte) *redactReader {
	keep := 0
	for _, s := range secrets {
		keep = max(keep, len(s)-1)
	}
	return &redactReader{r: r, secrets: secrets, keep: keep}
}

func (rr *redactReader) Read(p []byte) (int, error) {
	for len(rr.out) == 0 {
		if rr.eof {
			if len(rr.buf) == 0 {
				return 0, io.EOF
			}
			var n int
			rr.out, n = redactBytes(rr.buf, rr.secrets)
			rr.count += n
			rr.buf = nil
			break
		}
		if rr.chunk == nil {
			rr.chunk = make([]byte, redactChunk)
		}
		n, err := rr.r.Read(rr.chunk)
		rr.buf = append(rr.buf, rr.chunk[:n]...)
		if errors.Is(err, io.EOF) {
			rr.eof = true
			continue
		}
		if err != nil {
			return 0, err
		}
		if len(rr.buf) <= 2*rr.keep {
			continue
		}
		red, c := redactBytes(rr.buf, rr.secrets)
		rr.count += c
		// Hold back a tail that might be the start of a secret: every
		// complete secret is replaced already.
		cut := len(red) - rr.keep
		rr.out = append([]byte(nil), red[:cut]...)
		rr.buf = append([]byte(nil), red[cut:]...)
	}
	n := copy(p, rr.out)
	rr.out = rr.out[n:]
	return n, nil
}

// addRedactedToBody returns body with a "redacted" member listing names.
func addRedactedToBody(body []byte, names []string) ([]byte, error) {
	m := map[string]json.RawMessage{}
	if len(body) > 0 {
		if err := json.Unmarshal(body, &m); err != nil {
			return nil, err
		}
	}
	list, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	m["redacted"] = list
	return canonjson.Marshal(m)
}
