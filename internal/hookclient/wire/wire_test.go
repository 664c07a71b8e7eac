package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// What the client writes by hand, encoding/json reads back exactly.
func TestEncodeReadsBack(t *testing.T) {
	tests := []Request{
		{Args: []string{}, Stdin: nil},
		{Args: []string{"--runtime", "claude"}, Stdin: []byte(`{"session_id":"s"}`)},
		{Args: []string{`quote " and \ backslash`, "tab\tnew\nline\x00nul\x1f", "ünïcode ✓", "</script>&"}, Stdin: []byte{0, 1, 2, 255}},
		{Args: []string{"--args", `{"command":["go","test"]}`}, Env: map[string]string{"DOCKET_HEADLESS": "1", "DOCKET_JUDGE_TRACE": `"x"`}},
	}
	for _, req := range tests {
		var got Request
		if err := json.Unmarshal(Encode(req), &got); err != nil {
			t.Fatalf("%q: %v\n%s", req.Args, err, Encode(req))
		}
		if len(req.Stdin) == 0 {
			req.Stdin = []byte{}
		}
		if !reflect.DeepEqual(got, req) {
			t.Errorf("read back %#v, want %#v", got, req)
		}
	}
}

// What the daemon writes with encoding/json, the client reads exactly;
// anything else is refused.
func TestDecode(t *testing.T) {
	for _, r := range []Response{
		{Exit: 0},
		{Exit: 2, Stderr: []byte("docket: error: x\n")},
		{Exit: -1, Stdout: []byte(`{"decision":"block","reason":"a \"quoted\" reason"}`), Stderr: []byte{}},
		{Exit: 0, Stdout: []byte(strings.Repeat("é", 5000))},
	} {
		b, _ := json.Marshal(r)
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if got.Exit != r.Exit || string(got.Stdout) != string(r.Stdout) || string(got.Stderr) != string(r.Stderr) {
			t.Errorf("Decode(%s) = %+v", b, got)
		}
	}
	for _, bad := range []string{``, `{}`, `[]`, `{"exit":"0"}`, `{"exit":0,"exit":1}`, `{"exit":0,"stdout":"!!"}`, `{"exit":0,"other":1}`, `{"exit":0,"stdout":"YQ==`, `{"exit":0`, `{"exit":0,"stdout":12}`} {
		if r, err := Decode([]byte(bad)); err == nil {
			t.Errorf("Decode(%q) = %+v, want an error", bad, r)
		}
	}
}
