// Package canonjson produces the canonical JSON encoding docket hashes:
// object keys sorted bytewise, no insignificant white space, no HTML
// escaping, numbers kept as written. Invalid UTF-8 and lone surrogates are
// replaced by U+FFFD (as encoding/json decodes them), so the same input
// always yields the same bytes.
package canonjson

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Canonical re-encodes one JSON value canonically. Trailing data after the
// value is an error.
func Canonical(raw []byte) ([]byte, error) {
	if out, ok := canonicalFast(raw); ok {
		return out, nil
	}
	return canonicalDecoded(raw)
}

// canonicalDecoded is Canonical through encoding/json.
func canonicalDecoded(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonical json: trailing data after value")
	}
	return Marshal(v)
}

// Marshal encodes v canonically. Go structs keep their field order, so pass
// maps, slices and scalars (or values decoded with UseNumber) when the
// bytes must be canonical across implementations.
func Marshal(v any) ([]byte, error) {
	if raw, ok := v.(json.RawMessage); ok {
		return Canonical(raw)
	}
	if m, ok := v.(map[string]any); ok {
		if out, ok := marshalFast(m); ok {
			return out, nil
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// A struct may hold maps; round-trip once more so every object,
	// wherever it came from, has sorted keys.
	if _, isMap := v.(map[string]any); !isMap {
		var again any
		dec := json.NewDecoder(bytes.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&again); err != nil {
			return nil, fmt.Errorf("canonical json: %w", err)
		}
		buf.Reset()
		if err := enc.Encode(again); err != nil {
			return nil, fmt.Errorf("canonical json: %w", err)
		}
		out = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	return out, nil
}

// Digest returns "sha256:<hex>" of the canonical encoding of raw. An empty
// or absent value digests as JSON null.
func Digest(raw []byte) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("null")
	}
	c, err := Canonical(raw)
	if err != nil {
		return "", err
	}
	return SHA256(c), nil
}

// SHA256 returns "sha256:<hex>" of b.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
