package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/docket/docket/internal/canonjson"
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

// encodeEntry renders e as its ledger line, without the newline: the
// bytes encoding/json writes for Entry with HTML escaping off (FORMAT.md,
// "Entries"), produced without reflection (appendEntry). The body is
// validated and compacted as encoding/json does a json.RawMessage.
func encodeEntry(e *Entry) ([]byte, error) {
	line, err := appendEntry(make([]byte, 0, entryLineCap(e)), e)
	if err != nil {
		return nil, err
	}
	if len(line) > MaxEntryLine {
		return nil, errEntryTooLong
	}
	return line, nil
}

// entryLineCap is room for e's line: its variable parts plus the member
// names, numbers and the hash and MAC.
func entryLineCap(e *Entry) int {
	return 400 + len(e.Session) + len(e.Time) + len(e.Kind) + len(e.Runtime) + len(e.Event) +
		len(e.Tool) + len(e.ToolUseID) + len(e.AgentID) + len(e.Args) + len(e.Manifest) +
		len(e.Body) + len(e.Prev) + len(e.KeyID)
}

// appendEntry appends e's canonical line to dst: Entry's fields in their
// declared order, the omitempty ones left out when empty, strings escaped
// as encoding/json escapes them without HTML escaping (canonjson.AppendString).
// TestEncodeEntryMatchesEncodingJSON and FuzzEncodeEntry hold it to
// encoding/json's bytes.
func appendEntry(dst []byte, e *Entry) ([]byte, error) {
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, int64(e.V), 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, e.Seq, 10)
	dst = appendMember(dst, `,"session":`, e.Session)
	dst = appendMember(dst, `,"time":`, e.Time)
	dst = appendMember(dst, `,"kind":`, string(e.Kind))
	dst = appendOptional(dst, `,"runtime":`, e.Runtime)
	dst = appendOptional(dst, `,"event":`, e.Event)
	dst = appendOptional(dst, `,"tool":`, e.Tool)
	dst = appendOptional(dst, `,"tool_use_id":`, e.ToolUseID)
	dst = appendOptional(dst, `,"agent_id":`, e.AgentID)
	dst = appendOptional(dst, `,"args":`, e.Args)
	dst = appendOptional(dst, `,"manifest":`, e.Manifest)
	if e.Artifacts != 0 {
		dst = append(dst, `,"artifacts":`...)
		dst = strconv.AppendInt(dst, e.Artifacts, 10)
	}
	if len(e.Body) > 0 {
		dst = append(dst, `,"body":`...)
		var err error
		if dst, err = appendCompactJSON(dst, e.Body); err != nil {
			return nil, fmt.Errorf("encode entry: body: %w", err)
		}
	}
	dst = appendMember(dst, `,"prev":`, e.Prev)
	dst = appendMember(dst, `,"hash":`, e.Hash)
	dst = appendMember(dst, `,"key_id":`, e.KeyID)
	dst = appendMember(dst, `,"mac":`, e.MAC)
	return append(dst, '}'), nil
}

func appendMember(dst []byte, name, v string) []byte {
	return canonjson.AppendString(append(dst, name...), v)
}

func appendOptional(dst []byte, name, v string) []byte {
	if v == "" {
		return dst
	}
	return appendMember(dst, name, v)
}

// appendCompactJSON appends raw compacted, as encoding/json writes a
// json.RawMessage: an invalid value is an error. A body is canonical
// JSON already, so the common case checks and copies it.
func appendCompactJSON(dst, raw []byte) ([]byte, error) {
	b := bytes.NewBuffer(dst)
	if err := json.Compact(b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// entryHash is hex(SHA-256("docket-ledger-entry-v1\n" || line)) where line
// is the entry encoded with empty hash and mac.
func entryHash(e *Entry) (string, error) {
	c := *e
	c.Hash, c.MAC = "", ""
	var buf [1024]byte
	line, err := appendEntry(buf[:0], &c)
	if err != nil {
		return "", err
	}
	if len(line) > MaxEntryLine {
		return "", errEntryTooLong
	}
	h := sha256.New()
	h.Write([]byte("docket-ledger-entry-v1\n"))
	h.Write(line)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])), nil
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
