package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// decode reads one JSON object from body into v, strictly: valid UTF-8
// (an invalid string names its field), exactly one object with nothing
// after it, no fields v does not have, the JSON types v expects, and every
// path in required present and not null (an empty string counts as
// missing). It decodes into v only; callers decode into a temporary.
func decode(body []byte, v any, required ...string) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("body", "empty request body; send one JSON object")
	}
	// the walks below cost depth × size; bound the depth first
	if nestingDepth(body) > MaxNesting {
		return badRequest("body", "JSON nested deeper than %d levels", MaxNesting)
	}
	if !utf8.Valid(body) {
		return badRequest(invalidUTF8Field(body), "invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("body", "trailing data after the JSON object")
	}
	if !gjson.ValidBytes(body) {
		return badRequest("body", "not valid JSON")
	}
	if f := duplicateKey(gjson.ParseBytes(body), ""); f != "" {
		return badRequest(f, "duplicate key")
	}
	for _, path := range required {
		r := gjson.GetBytes(body, path)
		if !r.Exists() || r.Type == gjson.Null || (r.Type == gjson.String && strings.TrimSpace(r.Str) == "") {
			return badRequest(path, "required")
		}
	}
	return nil
}

// MaxNesting bounds how deeply a request body's arrays and objects nest.
const MaxNesting = 64

// nestingDepth is the deepest nesting of arrays and objects in body, in
// one pass that skips strings; it does not validate.
func nestingDepth(body []byte) int {
	depth, deepest, inStr, esc := 0, 0, false, false
	for _, c := range body {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			if depth++; depth > deepest {
				deepest = depth
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}

func decodeError(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return badRequest("body", "malformed JSON at byte %d: %v", se.Offset, se)
	case errors.As(err, &te):
		f := te.Field
		if f == "" {
			f = "body"
		}
		return badRequest(f, "want a JSON %s, got %s", jsonKind(te.Type.Kind().String()), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest("body", "truncated JSON")
	}
	if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		f, _ = strconv.Unquote(f)
		return badRequest(f, "unknown field")
	}
	// a MaxBytesError surfaces here
	return err
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "slice", "array":
		return "array"
	case "struct", "map":
		return "object"
	}
	return "number"
}

// invalidUTF8Field names the first field whose key or string value is not
// valid UTF-8, as a dotted path ("query.summary", "lessons.0").
func invalidUTF8Field(body []byte) string {
	f := firstPath(gjson.ParseBytes(body), "",
		func(k gjson.Result, _ map[string]bool) bool { return !utf8.ValidString(k.Raw) },
		func(v gjson.Result) bool { return v.Type == gjson.String && !utf8.ValidString(v.Raw) })
	return nonEmpty(f, "body")
}

// firstPath walks r depth first and returns the dotted path of the first
// object key badKey reports (seen holds the keys before it in the same
// object, for badKey to use) or scalar badLeaf reports, or "".
func firstPath(r gjson.Result, path string, badKey func(k gjson.Result, seen map[string]bool) bool, badLeaf func(gjson.Result) bool) string {
	found := ""
	switch {
	case r.IsObject():
		seen := map[string]bool{}
		r.ForEach(func(k, v gjson.Result) bool {
			p := join(path, k.Str)
			if badKey(k, seen) {
				found = p
				return false
			}
			found = firstPath(v, p, badKey, badLeaf)
			return found == ""
		})
	case r.IsArray():
		i := 0
		r.ForEach(func(_, v gjson.Result) bool {
			found = firstPath(v, join(path, strconv.Itoa(i)), badKey, badLeaf)
			i++
			return found == ""
		})
	case badLeaf(r):
		return path
	}
	return found
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func nonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// duplicateKey names the first key that appears twice in one object (Go
// keeps the last, other parsers the first: the body must mean one thing).
// decode has bounded the nesting depth before it runs.
func duplicateKey(r gjson.Result, path string) string {
	return firstPath(r, path,
		func(k gjson.Result, seen map[string]bool) bool {
			dup := seen[k.Str]
			seen[k.Str] = true
			return dup
		},
		func(gjson.Result) bool { return false })
}
