package judgehook

import (
	"encoding/json"
	"testing"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/hookclient"
)

// WithPeer gives the ledger the bytes a decoded map with "peer" set
// would: the body's members, canonical, with the caller's peer, which
// replaces any "peer" the body brought.
func TestWithPeer(t *testing.T) {
	peer := &hookclient.Peer{UID: 1000, GID: 1001, PID: 4242}
	type decision struct {
		Decision string         `json:"decision"`
		Reasons  []string       `json:"reasons"`
		Extra    map[string]int `json:"extra,omitempty"`
	}
	for _, tc := range []struct {
		name string
		body any
	}{
		{"struct", decision{Decision: "block", Reasons: []string{"a", "<b>"}, Extra: map[string]int{"z": 1, "a": 2}}},
		{"map", map[string]any{"zeta": 1, "alpha": "x\u2028"}},
		{"empty object", map[string]any{}},
		{"raw object", json.RawMessage(`{"b": 1, "a": [1, 2]}`)},
		{"a peer of its own", map[string]any{"peer": map[string]any{"uid": 0}, "decision": "allow"}},
		{"raw with a peer", json.RawMessage(`{"peer":{"uid":0},"x":1}`)},
		{"nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := canonjson.Marshal(WithPeer(tc.body, peer))
			if err != nil {
				t.Fatal(err)
			}
			// what it must equal: the body decoded, "peer" set, canonical
			b, _ := json.Marshal(tc.body)
			m := map[string]any{}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if m == nil { // a nil body: the peer alone
				m = map[string]any{}
			}
			pb, _ := json.Marshal(peer)
			var pv any
			json.Unmarshal(pb, &pv)
			m["peer"] = pv
			want, err := canonjson.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
	// not an object: left as it is
	for _, body := range []any{"text", 3, []int{1}, json.RawMessage(`[1]`)} {
		if got := WithPeer(body, peer); !sameJSON(t, got, body) {
			t.Errorf("WithPeer(%v) = %v, want it unchanged", body, got)
		}
	}
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
