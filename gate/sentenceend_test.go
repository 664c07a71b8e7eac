package gate

import (
	"math/rand"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sentenceEnds finds exactly what the sentenceEnd expression finds: on
// hand-picked cases, on random texts over the characters that matter, and
// on the real messages of the corpus tests.
func TestSentenceEndsMatchesExpression(t *testing.T) {
	check := func(t *testing.T, s string) {
		t.Helper()
		want := sentenceEnd.get().FindAllStringIndex(s, -1)
		if got := sentenceEnds(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %v\nwant %v", s, got, want)
		}
	}
	for _, s := range []string{
		"", "All done — tests pass.", "a.b", "a. b", "a.", "a..", "..x", "x..y. z", "e.g. this", "Done!\"  Next",
		"a.)] b", "a.)]b", "a.)]", "a \n — b", "a\n\n—b", "a — b", "a —b", "a—b", "a  –  b", "a \t— \n b",
		"line\nline", "\n", "\n\n\n", "a;\n", "?", "x ?", " — ", "\xe2\x80 — x", "a.\xe2\x80\x94 b", "a \xe2\x80\x94",
		"end.\r\nnext", "a\f.b", "\"quoted.\" then", "a.' ", "a?!;... ok", "semi;colon; done",
	} {
		check(t, s)
	}
	alphabet := []string{".", "!", "?", ";", "\"", "'", ")", "]", " ", "\n", "\t", "\r", "\f", "—", "–", "-", "a", "é", "\xe2", "\x80", "\x94", "\v"}
	r := rand.New(rand.NewSource(1))
	for n := 0; n < 20000; n++ {
		var b strings.Builder
		for k := r.Intn(24); k > 0; k-- {
			b.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		check(t, b.String())
	}
	for _, s := range corpusTexts(t) {
		check(t, s)
	}
}

// A long run that never ends a sentence is scanned once, not once per
// position.
func TestSentenceEndsLinear(t *testing.T) {
	s := strings.Repeat(".", 1<<20) + "x" + strings.Repeat(" ", 1<<20) + "x"
	if got := sentenceEnds(s); len(got) != 0 {
		t.Fatalf("%d matches", len(got))
	}
}

// corpusTexts are the labelled messages of the claim-detection tests.
func corpusTexts(t *testing.T) []string {
	var out []string
	for _, set := range [][]labelled{
		readLabelled(t, "labels.jsonl"), readLabelled(t, "hard_cases.jsonl"), readLabelled(t, "heldout.jsonl"),
		readLabelledFile(t, filepath.Join("testdata", "claims_adversarial.jsonl")),
		readLabelledFile(t, filepath.Join("testdata", "claims_adversarial_heldout.jsonl")),
	} {
		for _, l := range set {
			out = append(out, l.Text)
		}
	}
	if len(out) < 100 {
		t.Fatalf("%d corpus texts", len(out))
	}
	return out
}
