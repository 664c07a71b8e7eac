package gate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/docket/docket/policies"
)

func mustLexicon(t testing.TB) *policies.Claims {
	t.Helper()
	lex, err := policies.DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	return lex
}

func TestExtract(t *testing.T) {
	lex := mustLexicon(t)
	tests := []struct {
		name string
		msg  string
		want []string // "type: sentence"
	}{
		{"plain", "All done, tests pass.", []string{"done: All done, tests pass.", "tests_pass: All done, tests pass."}},
		{"every claim, not the first", "Fixed the parser. Pushed to main. 32/32 passing.",
			[]string{"fixed: Fixed the parser.", "shipped: Pushed to main.", "tests_pass: 32/32 passing."}},
		{"heading", "# ✅ Done — PR #265 pushed", []string{"done: ✅ Done", "shipped: PR #265 pushed"}},
		{"table cells", "| Task | Status |\n|---|---|\n| parser | ✅ green |", []string{"done: ✅ green", "tests_pass: ✅ green"}},
		{"bold and bullets", "- **Status:** complete", []string{"done: Status: complete"}},
		{"fenced code", "```\nall tests pass\ngit push\n```\nHere is the log.", nil},
		{"tilde fence", "~~~sh\ndone\n~~~", nil},
		{"inline code", "Set `done` to true in `state.go`.", nil},
		{"quote", "> All done, tests pass\nThat is what the issue says.", nil},
		{"negation", "The bug is not fixed yet.", nil},
		{"negation contraction", "I haven't pushed anything.", nil},
		{"negated filler", "Tests are not passing.", nil},
		{"not run", "I have not run the tests.", nil},
		{"future", "Once done I'll open a PR.", nil},
		{"conditional", "I'll ship it once you approve.", nil},
		{"if", "If the tests pass, I'll merge.", nil},
		{"past temporal", "After the fix, all tests pass.", []string{"tests_pass: After the fix, all tests pass."}},
		{"question", "Is the migration done?", nil},
		{"delegation question", "Could you provide the API token?", []string{"delegation: Could you provide the API token?"}},
		{"stuck", "I'm stuck: the sandbox has no network.", []string{"blocked: I'm stuck: the sandbox has no network."}},
		{"partial pass", "30/32 passing.", nil},
		{"adjective fixed", "It uses a fixed-size buffer and a fixed timeout.", nil},
		{"curly apostrophe", "I haven’t verified it.", nil},
		{"link text kept, url dropped", "See [the merged PR](https://github.com/x/y/pull/1).", []string{"shipped: See the merged PR."}},
		{"url only", "Docs: https://example.com/released/done", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range Extract(tt.msg, lex) {
				got = append(got, c.Type+": "+c.Sentence)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Extract(%q)\n got %q\nwant %q", tt.msg, got, tt.want)
			}
		})
	}
}

func TestClaimTypesOf(t *testing.T) {
	got := ClaimTypesOf([]Claim{{Type: "shipped"}, {Type: "done"}, {Type: "shipped"}})
	if fmt.Sprint(got) != "[done shipped]" {
		t.Fatalf("got %v", got)
	}
}

func FuzzExtract(f *testing.F) {
	f.Add("All done, tests pass.")
	f.Add("```\ndone\n```\n| a | ✅ |\n> quoted\n# heading")
	f.Add("`unterminated inline done")
	lex := mustLexicon(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, c := range Extract(s, lex) {
			if !isType(c.Type) || c.Sentence == "" || len(c.Sentence) > MaxSentence+len("…") {
				t.Fatalf("bad claim %+v", c)
			}
		}
	})
}

func ExampleExtract() {
	lex, _ := policies.DefaultClaims()
	msg := "## Summary\n\nFixed the flaky test; all 14 tests pass.\n\n" +
		"```\n$ git push  # done later\n```\n\nI have not pushed yet. Once reviewed I'll merge it."
	for _, c := range Extract(msg, lex) {
		fmt.Printf("%s: %s\n", c.Type, c.Sentence)
	}
	// Output:
	// fixed: Fixed the flaky test;
	// tests_pass: all 14 tests pass.
}
