package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// A settings file is edited as an ordered JSON tree so that everything
// docket does not own survives a rewrite with its key order and its
// number literals intact. Values are *object, []any, string, json.Number,
// bool or nil.

// member is one key of an object, in file order.
type member struct {
	key string
	val any
}

// object is a JSON object that keeps its key order.
type object struct {
	members []member
}

// get returns the value of key (the last one when a file repeats a key,
// as encoding/json does) and whether it is present.
func (o *object) get(key string) (any, bool) {
	for i := len(o.members) - 1; i >= 0; i-- {
		if o.members[i].key == key {
			return o.members[i].val, true
		}
	}
	return nil, false
}

// set replaces key's value in place, or appends key.
func (o *object) set(key string, v any) {
	for i := len(o.members) - 1; i >= 0; i-- {
		if o.members[i].key == key {
			o.members[i].val = v
			return
		}
	}
	o.members = append(o.members, member{key, v})
}

// del removes every occurrence of key.
func (o *object) del(key string) {
	kept := o.members[:0]
	for _, m := range o.members {
		if m.key != key {
			kept = append(kept, m)
		}
	}
	o.members = kept
}

// maxSettingsSize bounds a settings file docket will edit.
const maxSettingsSize = 8 << 20

var errNotObject = errors.New("top level is not a JSON object")

// parseDocument parses a settings file. Empty or all-whitespace input is
// an empty object (a file the user just created).
func parseDocument(b []byte) (*object, error) {
	if len(b) > maxSettingsSize {
		return nil, fmt.Errorf("larger than %d bytes", maxSettingsSize)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return &object{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	o, ok := v.(*object)
	if !ok {
		return nil, errNotObject
	}
	return o, nil
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v", kt)
				}
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				o.members = append(o.members, member{k, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil // string, json.Number, bool, nil
	}
}

// detectIndent returns the indentation unit of a pretty-printed JSON
// file: the leading whitespace of its first indented line, else two
// spaces.
func detectIndent(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed != "" && len(trimmed) < len(line) {
			return line[:len(line)-len(trimmed)]
		}
	}
	return "  "
}

// encodeDocument renders o pretty-printed with indent, keys in order,
// strings without HTML escaping, and a final newline.
func encodeDocument(o *object, indent string) []byte {
	var b bytes.Buffer
	encodeValue(&b, o, indent, 0)
	b.WriteByte('\n')
	return b.Bytes()
}

func encodeValue(b *bytes.Buffer, v any, indent string, depth int) {
	nl := func(d int) {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(indent, d))
	}
	switch t := v.(type) {
	case *object:
		if len(t.members) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteByte('{')
		for i, m := range t.members {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			writeString(b, m.key)
			b.WriteString(": ")
			encodeValue(b, m.val, indent, depth+1)
		}
		nl(depth)
		b.WriteByte('}')
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			nl(depth + 1)
			encodeValue(b, e, indent, depth+1)
		}
		nl(depth)
		b.WriteByte(']')
	case string:
		writeString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	case int:
		fmt.Fprintf(b, "%d", t)
	default:
		panic(fmt.Sprintf("install: cannot encode %T", v))
	}
}

func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(s) // a string always encodes
	b.Truncate(b.Len() - 1)
}

// sameJSON reports whether a and b are the same JSON value, key order
// and number spelling aside.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}
