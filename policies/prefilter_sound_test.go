package policies

import (
	"math/rand/v2"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode"
)

// The claim prefilter (MayMatch: Literals and AllOf) never rejects a
// text its pattern matches: for every default claim pattern, texts
// generated from the pattern itself, alone and amid other words, that
// the pattern matches all pass MayMatch.
func TestMayMatchIsSound(t *testing.T) {
	c, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	checked, factors := 0, 0
	for _, r := range c.Types {
		for _, p := range r.Patterns {
			re, err := syntax.Parse(p.expr, syntax.Perl)
			if err != nil {
				t.Fatal(err)
			}
			re = re.Simplify()
			if p.AllOf != nil {
				factors++
			}
			for i := 0; i < 300; i++ {
				s := genMatch(rng, re)
				if i%3 == 1 {
					s = "so " + s + " now"
				}
				if !p.Regexp().MatchString(s) {
					continue
				}
				checked++
				if !p.MayMatch(strings.ToLower(s)) {
					t.Errorf("%s: %q matches %q but MayMatch says no (literals %q, all of %q)", r.Type, p.Source, s, p.Literals, p.AllOf)
				}
			}
		}
	}
	if checked < 10000 || factors < 20 {
		t.Fatalf("only %d matching texts and %d patterns with AllOf checked", checked, factors)
	}
}

// genMatch returns a random string built to match re (anchors and word
// boundaries are left to chance; callers keep only real matches).
func genMatch(rng *rand.Rand, re *syntax.Regexp) string {
	var b strings.Builder
	var gen func(re *syntax.Regexp)
	reps := func(lo, hi int) int {
		if hi < lo {
			hi = lo + 2
		}
		return lo + rng.IntN(hi-lo+1)
	}
	gen = func(re *syntax.Regexp) {
		switch re.Op {
		case syntax.OpLiteral:
			for _, r := range re.Rune {
				if re.Flags&syntax.FoldCase != 0 && rng.IntN(2) == 0 {
					r = unicode.ToUpper(r)
				}
				b.WriteRune(r)
			}
		case syntax.OpCharClass:
			if len(re.Rune) == 0 {
				return
			}
			i := rng.IntN(len(re.Rune)/2) * 2
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi > lo+64 {
				hi = lo + 64
			}
			b.WriteRune(lo + rune(rng.IntN(int(hi-lo)+1)))
		case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
			b.WriteByte('x')
		case syntax.OpCapture:
			gen(re.Sub[0])
		case syntax.OpStar:
			for n := reps(0, 2); n > 0; n-- {
				gen(re.Sub[0])
			}
		case syntax.OpPlus:
			for n := reps(1, 3); n > 0; n-- {
				gen(re.Sub[0])
			}
		case syntax.OpQuest:
			if rng.IntN(2) == 0 {
				gen(re.Sub[0])
			}
		case syntax.OpRepeat:
			for n := reps(re.Min, re.Max); n > 0; n-- {
				gen(re.Sub[0])
			}
		case syntax.OpConcat:
			for _, sub := range re.Sub {
				gen(sub)
			}
		case syntax.OpAlternate:
			gen(re.Sub[rng.IntN(len(re.Sub))])
		}
	}
	gen(re)
	return b.String()
}
