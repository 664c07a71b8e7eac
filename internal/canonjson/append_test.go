package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// refEncode is encoding/json's Encoder without HTML escaping, the
// encoding appendValue must reproduce byte for byte.
func refEncode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// refCanonical is Canonical as it was before appendValue: decode with
// UseNumber, encode with encoding/json.
func refCanonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data")
	}
	return refEncode(v)
}

var tricky = []string{
	`{"b":1,"a":{"d":[1,2],"c":"<x>&y"}}`,
	`{"z":null,"y":true,"x":false,"w":[],"v":{},"u":""}`,
	`["\u0000\u0001\u001f\u007f","\b\f\n\r\t\"\\/","\u2028\u2029","\ud800","\udc90x","é😀"]`,
	`[-0,0.5e+10,1E-2,-12.340,123456789012345678901234567890]`,
	`{"":1,"a\u0000":2,"é":3,"e":4,"E":5,"\u2028":6}`,
	`{"k":[{"b":[{"d":1,"c":2}],"a":"x"}]}`,
	`"plain"`, `17`, `null`,
}

func TestAppendValueMatchesEncodingJSON(t *testing.T) {
	for _, in := range tricky {
		want, err := refCanonical([]byte(in))
		if err != nil {
			t.Fatalf("ref(%s): %v", in, err)
		}
		got, err := Canonical([]byte(in))
		if err != nil {
			t.Fatalf("Canonical(%s): %v", in, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Canonical(%s) = %s, encoding/json gives %s", in, got, want)
		}
	}
}

// Values built in Go (not decoded) may hold invalid UTF-8, empty or bad
// json.Numbers and types appendValue does not know; Marshal must still
// answer what encoding/json answers.
func TestMarshalMapMatchesEncodingJSON(t *testing.T) {
	tests := []map[string]any{
		{"s": "a\xffb\xc3", "n": json.Number(""), "l": []any{"x\x00", nil, true}},
		{"f": 1.5, "i": 3, "s": []string{"b", "a"}, "m": map[string]int{"b": 2, "a": 1}},
		{"nil map": map[string]any(nil), "nil slice": []any(nil), "u": "\u2028<&>"},
		{"struct": struct{ B, A int }{1, 2}},
	}
	for _, m := range tests {
		want, err := refEncode(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Marshal(m)
		if err != nil {
			t.Fatalf("Marshal(%v): %v", m, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Marshal(%v) = %s, encoding/json gives %s", m, got, want)
		}
	}
	// a json.Number that is not a number is an error, as in encoding/json
	if _, err := Marshal(map[string]any{"n": json.Number("1x")}); err == nil {
		t.Error("Marshal accepted json.Number(\"1x\")")
	}
}

func TestValidNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-0": true, "1.5": true, "1e5": true, "1E+5": true, "-1.25e-3": true, "123": true,
		"": false, "-": false, "01": false, "1.": false, ".5": false, "1e": false, "1e+": false,
		"+1": false, "0x1": false, "1.5.5": false, "NaN": false, " 1": false,
	} {
		if got := validNumber(s); got != want {
			t.Errorf("validNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

func FuzzCanonicalMatchesEncodingJSON(f *testing.F) {
	for _, in := range tricky {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		want, werr := refCanonical(in)
		got, err := Canonical(in)
		if (err == nil) != (werr == nil) {
			t.Fatalf("Canonical(%q) err %v, encoding/json err %v", in, err, werr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("Canonical(%q) = %s, encoding/json gives %s", in, got, want)
		}
		// and appendString on the raw bytes as a Go string
		s := string(in)
		w, _ := refEncode(s)
		if g := appendString(nil, s); !bytes.Equal(g, w) {
			t.Fatalf("appendString(%q) = %s, encoding/json gives %s", s, g, w)
		}
	})
}
