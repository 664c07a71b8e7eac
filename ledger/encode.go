package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MaxEntryLine bounds one encoded entry. Bulk belongs in artifacts; an
// entry line this long is malformed.
const MaxEntryLine = 1 << 20

// zeroHash is the prev of the first entry.
var zeroHash = strings.Repeat("0", 64)

var (
	errNonCanonical = errors.New("entry is not canonically encoded")
	errEntryTooLong = errors.New("entry line exceeds 1 MiB")
)

// encodeEntry renders e as its ledger line, without the newline.
func encodeEntry(e *Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encode entry: %w", err)
	}
	line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(line) > MaxEntryLine {
		return nil, errEntryTooLong
	}
	return line, nil
}

// entryHash is hex(SHA-256("docket-ledger-entry-v1\n" || line)) where line
// is the entry encoded with empty hash and mac.
func entryHash(e *Entry) (string, error) {
	c := *e
	c.Hash, c.MAC = "", ""
	line, err := encodeEntry(&c)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte("docket-ledger-entry-v1\n"))
	h.Write(line)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ParseEntry decodes one ledger line (without its newline). It rejects
// unknown fields, trailing data, and any line that is not exactly the
// canonical encoding of the entry it decodes to.
func ParseEntry(line []byte) (*Entry, error) {
	if len(line) > MaxEntryLine {
		return nil, errEntryTooLong
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var tmp Entry
	if err := dec.Decode(&tmp); err != nil {
		return nil, fmt.Errorf("decode entry: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode entry: trailing data")
	}
	again, err := encodeEntry(&tmp)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(again, line) {
		return nil, errNonCanonical
	}
	e := tmp
	return &e, nil
}
