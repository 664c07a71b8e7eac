package hooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/tidwall/gjson"
)

// The helpers every runtime's decoder uses: reading stdin within bounds
// and the first checks on the payload's shape.

// ReadPayload reads all of r, up to MaxPayload.
func ReadPayload(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPayload+1))
	if err != nil {
		return nil, fmt.Errorf("read hook payload: %w", err)
	}
	if len(b) > MaxPayload {
		return nil, ErrPayloadTooLarge
	}
	return b, nil
}

// checkObject rejects a payload that is not one JSON object.
func checkObject(payload []byte) error {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return errNotObject
	}
	return nil
}

// stringFields rejects a payload whose named fields are present with a
// type other than string (null counts as absent).
func stringFields(p gjson.Result, names ...string) error {
	for _, n := range names {
		v := p.Get(n)
		if v.Exists() && v.Type != gjson.String && v.Type != gjson.Null {
			return &FieldError{Field: n, Reason: "not a string"}
		}
	}
	return nil
}

// topFields sets out[i] to the member names[i] of the object p, as
// p.Get(names[i]) returns it (the first member of that name; names are
// plain, without gjson path syntax), in one pass over p: each Get scans
// the payload from its start, past a tool output of any size, and most
// of the names are absent from any one runtime's payload.
func topFields(p gjson.Result, names []string, out []gjson.Result) {
	p.ForEach(func(key, value gjson.Result) bool {
		for i, n := range names {
			if key.Str == n && !out[i].Exists() {
				out[i] = value
				break
			}
		}
		return true
	})
}
