package policies

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// The full alternation, compiled as the cue set used to be: the answers
// of the prefiltered CueSet must be the same on every text.
func fullCueRegexp(t *testing.T, c *CueSet) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(c.pre + strings.Join(c.alts, "|") + `)`)
	if err != nil {
		t.Fatal(err)
	}
	return re
}

func cueTexts(t *testing.T) []string {
	texts := []string{
		"", "All done — tests pass.", "I did not run the tests.", "Tests won't pass until tomorrow.",
		"Will you run it?", "Is it done?", "Les tests ne passent pas.", "Die Tests laufen nicht.",
		"テストは完了していません", "NOT DONE", "nOt", "I can't say it works", "Everything will be green later.",
		"Ⓝot", "ſo", "ΟΧΙ", "όχι ακόμα", "ΔΕΝ", "\xff\xfe not", "no", "know", "nothing", "maybe later",
		"Können wir das später machen?", "Não está pronto", "NÃO ESTÁ", "todavía no", "还没有完成", "아직 안 됐어요",
	}
	for _, f := range []string{"../gate/testdata/claims_adversarial.jsonl", "../gate/testdata/claims_adversarial_heldout.jsonl"} {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var v struct{ Text string }
			if json.Unmarshal(sc.Bytes(), &v) == nil {
				texts = append(texts, v.Text)
				// every word and every tail of the text, as the gate's
				// windows cut it
				w := strings.Fields(v.Text)
				for i := range w {
					texts = append(texts, w[i], strings.Join(w[i:], " "), strings.ToUpper(strings.Join(w[:i+1], " ")))
				}
			}
		}
		fh.Close()
	}
	return texts
}

func TestCueSetSameAsFullAlternation(t *testing.T) {
	lex, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	texts := cueTexts(t)
	// each cue itself, upper-cased and title-cased, must be found
	sets := map[string]*CueSet{"negation": lex.Negation, "negation.after": lex.NegationAfter, "future": lex.Future,
		"temporal": lex.Temporal, "starters": lex.QuestionStarters, "tails": lex.QuestionTails}
	for name, c := range sets {
		if len(c.alts) == 0 {
			t.Fatalf("%s: no cues", name)
		}
		all := append([]string(nil), texts...)
		for _, cue := range c.Cues {
			if regexp.QuoteMeta(cue) == cue {
				all = append(all, cue, strings.ToUpper(cue), "x "+cue+" y", "- "+strings.ToUpper(cue))
			}
		}
		full := fullCueRegexp(t, c)
		matched := 0
		for _, s := range all {
			if got, want := c.MatchString(s), full.MatchString(s); got != want {
				t.Errorf("%s.MatchString(%q) = %v, full alternation %v", name, s, got, want)
			}
			if got, want := c.FindIndex(s), full.FindStringIndex(s); !reflect.DeepEqual(got, want) {
				t.Errorf("%s.FindIndex(%q) = %v, full alternation %v", name, s, got, want)
			}
			if full.MatchString(s) {
				matched++
			}
		}
		if matched < len(c.Cues) {
			t.Errorf("%s: only %d of %d texts matched; the test texts miss cues", name, matched, len(all))
		}
	}
}

// The prefilter folds as (?i) does: a text that matches only through a
// case fold strings.ToLower does not make must still match.
func TestCueSetFolding(t *testing.T) {
	tests := []struct {
		cue, text string
		want      bool
	}{
		{"'so", "'ſO", true},   // long s folds with s
		{"σας", "ΣΑΣ", true},   // capital sigma
		{"σας", "σας", true},   // final sigma folds with σ
		{"ok", "OK", true},     // Kelvin sign
		{"İs", "İS", true},     // dotted capital I folds only with itself
		{"is", "İs", false},    // not with i
		{"stop", "sto", false}, // literal absent
		{"(?:stop|halt)", "HALT", true},
		{"wo(?:n't)", "WON'T", true},
		{`x\d+y`, "X12Y", true}, // literal x or y required
		{`\d+`, "12", true},     // no literal: always tried
		{`\d+`, "ab", false},
	}
	for _, tc := range tests {
		c, err := newCueSet("t", []string{tc.cue}, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.MatchString(tc.text); got != tc.want {
			t.Errorf("cue %q on %q = %v, want %v", tc.cue, tc.text, got, tc.want)
		}
		if got := fullCueRegexp(t, c).MatchString(tc.text); got != tc.want {
			t.Errorf("cue %q on %q: full regexp says %v (test expectation wrong)", tc.cue, tc.text, got)
		}
	}
	// foldString maps every rune of a fold orbit to one rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !unicode.IsPrint(r) && r > 0x7f {
			continue
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if foldString(string(f)) != foldString(string(r)) {
				t.Fatalf("foldString(%q) != foldString(%q)", f, r)
			}
		}
	}
}

// A cue set compiles only the cues a text may contain, once per choice.
func TestCueSetCompilesLittle(t *testing.T) {
	lex, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	c := lex.Negation
	if c.MatchString("All done — tests pass.") {
		t.Fatal("negation found in a plain claim")
	}
	for i := 0; i < 3; i++ {
		if !c.MatchString("tests do not pass") {
			t.Fatal("not: no negation found")
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.re {
		if n := strings.Count(k, ","); n > len(c.alts)/4 {
			t.Errorf("compiled %d of %d cues for one text", n, len(c.alts))
		}
	}
	if len(c.re) > 2 {
		t.Errorf("%d compiled alternations for two texts", len(c.re))
	}
}

// lookupKnown searches knownExprsList, which must be sorted and finds
// every entry.
func TestKnownExprsSorted(t *testing.T) {
	for i, k := range knownExprsList {
		if i > 0 && knownExprsList[i-1].expr >= k.expr {
			t.Fatalf("knownExprsList not sorted at %d: %q >= %q", i, knownExprsList[i-1].expr, k.expr)
		}
		if got, ok := lookupKnown(k.expr); !ok || got.expr != k.expr {
			t.Fatalf("lookupKnown(%q) missed", k.expr)
		}
	}
	if _, ok := lookupKnown("(?i)not in the table"); ok {
		t.Fatal("lookupKnown found what is not there")
	}
}

// A long-running process matching many texts keeps a bounded number of
// compiled alternations.
func TestCueSetBounded(t *testing.T) {
	lex, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	c := lex.Negation
	for i, cue := range c.Cues {
		c.MatchString("x " + cue + " y")
		c.MatchString(strings.Repeat("z ", i) + cue)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.re) > maxCueRegexps {
		t.Fatalf("%d compiled alternations kept", len(c.re))
	}
}
