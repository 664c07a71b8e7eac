package server

import (
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzParse feeds arbitrary bodies to every request parser: none may
// panic, every refusal is an *Error with a field and status 400 (or an
// error the store's validation owns), and nothing invalid is accepted.
func FuzzParse(f *testing.F) {
	f.Add([]byte(decisionBody("k", "block", `"memory_to_write":{"lessons":["x"]}`)))
	f.Add([]byte(`{"schema_version":"openbrain.judge.recall.v1","request_id":"r","workspace_id":"w","action_id":"a","query":{"summary":"s"}}`))
	f.Add([]byte(proposalBody("p", "Bash", "read_only", "flow", []byte(`{"command":"ls"}`))))
	f.Add([]byte(`{"action":"confirm","as":"can_use_as_instruction"}`))
	f.Add([]byte(`{"a":"\xff"}`))
	f.Add([]byte(`{"a":1}{"a":2}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(err error) {
			if err == nil {
				if !utf8.Valid(body) {
					t.Fatalf("accepted invalid UTF-8: %q", body)
				}
				return
			}
			var ae *Error
			if errors.As(err, &ae) && (ae.Status != 400 || ae.Field == "") {
				t.Fatalf("refusal without a field: %+v", ae)
			}
		}
		_, err := parseDecision(body)
		check(err)
		_, err = parseRecall(body)
		check(err)
		_, _, _, err = parseProposal(body)
		check(err)
		_, err = parseReview(body, "rev_x", "token:t")
		check(err)
		_, err = parseApproval(body, "token:t")
		check(err)
	})
}
