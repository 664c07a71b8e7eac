package canonjson

import "testing"

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":{"d":[1,2],"c":"<x>"}}`, `{"a":{"c":"<x>","d":[1,2]},"b":1}`},
		{` [ 1.50 , true ,null ] `, `[1.50,true,null]`},
		{`"\udc90"`, "\"\ufffd\""},
		{`{"a":"\u00e9"}`, `{"a":"é"}`},
	}
	for _, tt := range tests {
		got, err := Canonical([]byte(tt.in))
		if err != nil {
			t.Fatalf("Canonical(%s): %v", tt.in, err)
		}
		if string(got) != tt.want {
			t.Errorf("Canonical(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{`{"a":1} x`, `{`, ``} {
		if _, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("Canonical(%q) succeeded, want error", bad)
		}
	}
}

func TestDigestStableAcrossKeyOrder(t *testing.T) {
	a, _ := Digest([]byte(`{"x":1,"y":[{"q":2,"p":1}]}`))
	b, _ := Digest([]byte(`{"y":[{"p":1,"q":2}],"x":1}`))
	if a != b {
		t.Fatalf("digests differ: %s vs %s", a, b)
	}
	n, _ := Digest(nil)
	if n != SHA256([]byte("null")) {
		t.Fatalf("empty digest = %s", n)
	}
}

func TestMarshalStructSortsNestedMaps(t *testing.T) {
	type s struct {
		Z int            `json:"z"`
		A map[string]int `json:"a"`
	}
	got, err := Marshal(s{Z: 1, A: map[string]int{"b": 2, "a": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"a":1,"b":2},"z":1}`; string(got) != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
}
