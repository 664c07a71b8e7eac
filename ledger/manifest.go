package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// parseManifestFast decodes a manifest in the canonical form writeBundle
// writes it, {"files":[{"name":…,"sha256":…,"size":…},…],"v":N}, with
// names that need no escaping. Anything else (ok false) is left to the
// JSON decoder, which accepts what it accepts today. The caller has
// checked the manifest's digest, so the bytes are the writer's.
func parseManifestFast(b []byte) (m Manifest, ok bool) {
	p := b
	eat := func(s string) bool {
		if !bytes.HasPrefix(p, []byte(s)) {
			return false
		}
		p = p[len(s):]
		return true
	}
	str := func() (string, bool) {
		i := bytes.IndexByte(p, '"')
		if i < 0 {
			return "", false
		}
		v := p[:i]
		for _, c := range v {
			if c < 0x20 || c == '\\' || c >= 0x80 {
				return "", false
			}
		}
		p = p[i+1:]
		return string(v), true
	}
	num := func() (int64, bool) {
		i := 0
		for i < len(p) && p[i] >= '0' && p[i] <= '9' {
			i++
		}
		if i == 0 || i > 18 || (i > 1 && p[0] == '0') {
			return 0, false
		}
		n, err := strconv.ParseInt(string(p[:i]), 10, 64)
		p = p[i:]
		return n, err == nil
	}
	if !eat(`{"files":[`) {
		return m, false
	}
	for first := true; ; first = false {
		if eat(`]`) {
			break
		}
		if !first && !eat(`,`) {
			return m, false
		}
		var f ManifestFile
		var ok1, ok2, ok3 bool
		if !eat(`{"name":"`) {
			return m, false
		}
		if f.Name, ok1 = str(); !ok1 || !eat(`,"sha256":"`) {
			return m, false
		}
		if f.SHA256, ok2 = str(); !ok2 || !eat(`,"size":`) {
			return m, false
		}
		if f.Size, ok3 = num(); !ok3 || !eat(`}`) {
			return m, false
		}
		m.Files = append(m.Files, f)
	}
	if !eat(`,"v":`) {
		return m, false
	}
	v, ok := num()
	if !ok || v > 1<<30 || !eat(`}`) || len(p) != 0 {
		return m, false
	}
	m.V = int(v)
	return m, true
}

// fileMatches reports whether data, read whole, is file i of the bundle.
func (b *bundle) fileMatches(i int, data []byte) bool {
	mf := b.manifest.Files[i]
	sum := sha256.Sum256(data)
	return int64(len(data)) == mf.Size && hex.EncodeToString(sum[:]) == mf.SHA256
}
