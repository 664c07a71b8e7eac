package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// nested is {"a": [[...[v]...]]} with depth levels of nesting in all.
func nested(depth int, v string) []byte {
	b := []byte(`{"a":`)
	b = append(b, bytes.Repeat([]byte("["), depth-1)...)
	b = append(b, v...)
	b = append(b, bytes.Repeat([]byte("]"), depth-1)...)
	return append(b, '}')
}

// A deeply nested body is refused before the walks that name a bad field
// (their cost grows with depth × size): at 400000 levels with an invalid
// UTF-8 string inside, the walk alone took minutes of CPU.
func TestDecodeNesting(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		deep bool
	}{
		{"at the limit", nested(MaxNesting, `"x"`), false},
		{"one past", nested(MaxNesting+1, `"x"`), true},
		{"deep, invalid UTF-8", nested(400000, "\"\xff\""), true},
		{"deep, duplicate key", nested(9000, `{"k":1,"k":2}`), true},
		{"brackets in a string do not count", []byte(`{"a":"` + strings.Repeat("[", 1000) + `"}`), false},
		{"escaped quote keeps the string open", []byte(`{"a":"\"` + strings.Repeat("{", 1000) + `"}`), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v struct {
				A json.RawMessage `json:"a"`
			}
			err := decode(tc.body, &v)
			var ae *Error
			deep := errors.As(err, &ae) && strings.Contains(ae.Message, "nested deeper")
			if deep != tc.deep {
				t.Fatalf("decode: %v; want nesting refused = %v", err, tc.deep)
			}
			if !tc.deep && err != nil {
				t.Fatalf("decode: %v", err)
			}
		})
	}
}

// The walks that name a field: the path of the first bad key or value.
func TestDecodeNamesField(t *testing.T) {
	tests := []struct {
		body, field string
	}{
		{"{\"a\":{\"b\":[\"ok\",\"\xff\"]}}", "a.b.1"},
		{"{\"a\":{\"\xff\":1}}", "a.\xff"},
		{`{"a":[{"k":1},{"k":1,"k":2}]}`, "a.1.k"},
		{`{"a":{"k":1},"b":{"k":1}}`, ""},
		{`{"a":1,"a":2}`, "a"},
	}
	for _, tc := range tests {
		var v struct {
			A json.RawMessage `json:"a"`
			B json.RawMessage `json:"b"`
		}
		err := decode([]byte(tc.body), &v)
		var ae *Error
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%q: %v", tc.body, err)
		case tc.field != "" && (!errors.As(err, &ae) || ae.Field != tc.field):
			t.Errorf("%q: %v; want field %q", tc.body, err, tc.field)
		}
	}
}
