package ledger

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/docket/docket/internal/canonjson"
)

// The fast manifest parser agrees with the JSON decoder on what the
// writer writes, and declines (leaving it to the decoder) anything else.
func TestParseManifestFast(t *testing.T) {
	canon := func(m Manifest) string {
		b, err := canonjson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	h := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name string
		in   string
		fast bool
	}{
		{"written", canon(Manifest{V: 1, Files: []ManifestFile{{"payload.json", 552, h}, {"input.json", 0, h}}}), true},
		{"no files", canon(Manifest{V: 1}), false}, // "files":null: the decoder's
		{"empty files", `{"files":[],"v":1}`, true},
		{"escaped name", canon(Manifest{V: 1, Files: []ManifestFile{{`a"b`, 1, h}}}), false},
		{"unicode name", canon(Manifest{V: 1, Files: []ManifestFile{{"é", 1, h}}}), false},
		{"unknown field", `{"files":[{"name":"a","sha256":"` + h + `","size":1,"x":1}],"v":1}`, false},
		{"field order", `{"files":[{"sha256":"` + h + `","name":"a","size":1}],"v":1}`, false},
		{"negative size", `{"files":[{"name":"a","sha256":"` + h + `","size":-1}],"v":1}`, false},
		{"leading zero", `{"files":[{"name":"a","sha256":"` + h + `","size":01}],"v":1}`, false},
		{"trailing bytes", `{"files":[],"v":1} `, false},
		{"space", `{"files": [],"v":1}`, false},
		{"truncated", `{"files":[{"name":"a"`, false},
		{"huge size", `{"files":[{"name":"a","sha256":"` + h + `","size":99999999999999999999}],"v":1}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseManifestFast([]byte(tc.in))
			if ok != tc.fast {
				t.Fatalf("fast = %v, want %v", ok, tc.fast)
			}
			if !ok {
				return
			}
			var want Manifest
			dec := json.NewDecoder(strings.NewReader(tc.in))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&want); err != nil {
				t.Fatalf("the decoder rejects what the fast parser took: %v", err)
			}
			if len(want.Files) == 0 {
				want.Files = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("fast %+v, decoder %+v", got, want)
			}
		})
	}
}
