package policies

import (
	"bytes"
	"testing"
)

// FuzzCompiledDecode: the compiled-form decoder never panics on any
// payload, and what it decodes encodes back to the same bytes.
func FuzzCompiledDecode(f *testing.F) {
	for _, claims := range []string{"", customClaims(f)} {
		lex := mustDefaultClaims(f)
		if claims != "" {
			var err error
			if lex, err = ParseClaims(Source{Name: ClaimsFile, Origin: "x", Data: []byte(claims)}); err != nil {
				f.Fatal(err)
			}
		}
		bdata, _ := Default(BindingFile)
		b, err := ParseBinding(Source{Name: BindingFile, Origin: "y", Data: bdata})
		if err != nil {
			f.Fatal(err)
		}
		var e encoder
		encodeClaims(&e, lex)
		encodeBinding(&e, b)
		f.Add(e.b)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		d := decoder{s: string(payload)}
		lex := decodeCompiledClaims(&d)
		b := decodeCompiledBinding(&d)
		if d.err != nil || d.s != "" || lex == nil || b == nil {
			return
		}
		var e encoder
		encodeClaims(&e, lex)
		if !encodeBinding(&e, b) {
			t.Fatal("a decoded binding does not encode")
		}
		d2 := decoder{s: string(e.b)}
		lex2, b2 := decodeCompiledClaims(&d2), decodeCompiledBinding(&d2)
		if d2.err != nil || lex2 == nil || b2 == nil {
			t.Fatal("re-encoded payload does not decode")
		}
		var e2 encoder
		encodeClaims(&e2, lex2)
		encodeBinding(&e2, b2)
		if !bytes.Equal(e.b, e2.b) {
			t.Fatal("encoding is not stable")
		}
	})
}
