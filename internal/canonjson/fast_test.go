package canonjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var fastSeeds = []string{
	`{"command":"export NVM_DIR=\"$HOME/.nvm\"; [ -s \"$NVM_DIR/nvm.sh\" ] && . \"$NVM_DIR/nvm.sh\"; nvm install 24 2>&1 | tail -5","description":"Install Node 24 via nvm","run_in_background":true}`,
	` { "b" : [ 1 , -0.5e+3 , true , false , null , { } , [ ] ] , "a" : "<&>" } `,
	`{"x":"\u00e9\u2028\u0000\/\b\f\n\r\t\\\"","é":1,"e":2,"E":3}`,
	"{\"raw\":\"\u2029 é 😀\"}",
	`{"a":1,"a":2}`,
	`"\ud83d\ude00"`, `"\udc90"`, "\"\xff\"", "\"a\x01\"",
	`[1,2,]`, `{"a":1,}`, `01`, `1.`, `-`, `1e`, `.5`, `tru`, `nul`, `{"a"}`, `{"a":1} x`, ``, ` `,
	manyKeys(40), manyKeys(25), manyKeys(24),
	`123`, `-0`, `0.0e-0`, `"x"`, `[]`, `{}`, `[[[[[]]]]]`, `{"a":{"c":{"b":1,"a":2}}}`,
}

// manyKeys is an object of n members in descending key order.
func manyKeys(n int) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := n; i > 0; i-- {
		if i < n {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%03d":%d`, i, i)
	}
	return b.String() + "}"
}

// The fast path writes encoding/json's bytes whenever it answers, and
// answers for the usual tool arguments.
func FuzzCanonicalFast(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		fast, ok := canonicalFast(raw)
		slow, err := canonicalDecoded(raw)
		if !ok {
			return
		}
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", raw, err)
		}
		if !bytes.Equal(fast, slow) {
			t.Fatalf("canonical(%q):\nfast %q\nslow %q", raw, fast, slow)
		}
	})
}

func TestCanonicalFastAgreesAndAnswers(t *testing.T) {
	answers := map[string]bool{ // whether the fast path handles it
		manyKeys(40): true, manyKeys(24): true,
		fastSeeds[0]: true, fastSeeds[1]: true, fastSeeds[2]: true, fastSeeds[3]: true,
		`{"a":1,"a":2}`: false, `"\ud83d\ude00"`: false, "\"\xff\"": false, `[1,2,]`: false, `{"a":1} x`: false,
	}
	for _, s := range fastSeeds {
		fast, ok := canonicalFast([]byte(s))
		slow, err := canonicalDecoded([]byte(s))
		if want, listed := answers[s]; listed && ok != want {
			t.Errorf("canonicalFast(%q) ok = %v, want %v", s, ok, want)
		}
		if ok && (err != nil || !bytes.Equal(fast, slow)) {
			t.Errorf("canonicalFast(%q) = %q, encoding/json %q, %v", s, fast, slow, err)
		}
		// Canonical itself gives encoding/json's answer either way.
		got, gerr := Canonical([]byte(s))
		if (gerr != nil) != (err != nil) || !bytes.Equal(got, slow) {
			t.Errorf("Canonical(%q) = %q, %v; want %q, %v", s, got, gerr, slow, err)
		}
	}
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "<&>", "\x00\x01\b\f\n\r\t\x1f\x7f", "a\xffb", "\u2028\u2029", "é😀"} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := AppendString(nil, s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func TestMarshalFastMatchesEncodingJSON(t *testing.T) {
	tests := []struct {
		v      map[string]any
		answer bool // the fast path handles it
	}{
		{map[string]any{"failed": false, "tool_kind": "shell", "cwd": "/w <&>", "exit_code": 1, "duration_ms": int64(12)}, true},
		{map[string]any{"peer": map[string]any{"uid": uint32(1), "gid": int32(-2), "pid": 3}, "u": uint64(1 << 63)}, true},
		{map[string]any{"redacted": []string{"body", "q\"x"}, "none": []string(nil), "nil": nil, "list": []any{1, "a", nil, []any{}}}, true},
		{map[string]any{"é": 1, "e": 2, "E": 3, "\u2028": "\x00\xff", "": true}, true},
		{map[string]any{"nilmap": map[string]any(nil), "nilany": []any(nil)}, true},
		{map[string]any{}, true},
		{map[string]any{"f": 1.5}, false},
		{map[string]any{"n": json.Number("1.50")}, false},
		{map[string]any{"s": struct{ B, A int }{1, 2}}, false},
		{map[string]any{"deep": []any{map[string]any{"f": 0.1}}}, false},
	}
	for _, tt := range tests {
		fast, ok := marshalFast(tt.v)
		if ok != tt.answer {
			t.Errorf("marshalFast(%v) ok = %v, want %v", tt.v, ok, tt.answer)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(tt.v); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if ok && !bytes.Equal(fast, want) {
			t.Errorf("marshalFast(%v) = %s, want %s", tt.v, fast, want)
		}
		if got, err := Marshal(tt.v); err != nil || !bytes.Equal(got, want) {
			t.Errorf("Marshal(%v) = %s, %v; want %s", tt.v, got, err, want)
		}
	}
}
