package policies

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// Pattern is one regular expression of the claim lexicon, compiled on
// first use: a gate run compiles only the patterns whose literals occur
// in the message, so its start-up cost does not grow with the lexicon.
type Pattern struct {
	// Source is the pattern as written in claims.yaml.
	Source string
	// Literals, when not nil, are lowercase strings at least one of which
	// every match contains (see MayMatch).
	Literals []string
	// NM: the pattern has the named groups n and m ("32/32 passing"
	// matches only when n equals m).
	NM bool

	expr  string
	never bool // on a compile error, match nothing (exclude patterns)
	once  sync.Once
	re    *regexp.Regexp
}

// matchAll and matchNone stand in for an expression that does not
// compile (impossible for a lexicon ParseClaims accepted), whichever
// fails closed: a claim pattern matches everywhere, an exclude pattern or
// a cue nowhere. Compiled on first use, not at start-up: every hook
// links this package and none of them normally needs either.
var (
	matchAll  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?s)^.*`) })
	matchNone = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^\x00-\x{10FFFF}]`) })
)

// Regexp returns the compiled pattern.
func (p *Pattern) Regexp() *regexp.Regexp {
	p.once.Do(func() {
		re, err := regexp.Compile(p.expr)
		switch {
		case err != nil && p.never:
			re = matchNone()
		case err != nil:
			re = matchAll()
		}
		p.re = re
	})
	return p.re
}

// MayMatch reports whether the pattern can match text whose lowercased
// form is lower: false only when none of its literals occurs in it.
func (p *Pattern) MayMatch(lower string) bool {
	if p.Literals == nil {
		return true
	}
	for _, l := range p.Literals {
		if strings.Contains(lower, l) {
			return true
		}
	}
	return false
}

func (p *Pattern) String() string { return p.expr }

// CueSet is a list of cue phrases (negation, future, question starters)
// matched as whole words, case-insensitively, through one alternation
// compiled on first use.
type CueSet struct {
	Cues []string
	expr string
	once sync.Once
	re   *regexp.Regexp
}

// MatchString reports whether any cue occurs in s.
func (c *CueSet) MatchString(s string) bool {
	if c == nil || c.expr == "" {
		return false
	}
	return c.regexp().MatchString(s)
}

// FindIndex returns where the first cue in s begins and ends, or nil.
func (c *CueSet) FindIndex(s string) []int {
	if c == nil || c.expr == "" {
		return nil
	}
	return c.regexp().FindStringIndex(s)
}

func (c *CueSet) regexp() *regexp.Regexp {
	c.once.Do(func() {
		re, err := regexp.Compile(c.expr)
		if err != nil {
			re = matchNone()
		}
		c.re = re
	})
	return c.re
}

// newPatterns wraps each source in pre…post. Each expression is checked
// (and its literals derived, when lits) unless it is in knownExprs, the
// table of the embedded default's expressions, which a test keeps in
// step with claims.yaml: parsing 200 expressions costs as much as
// compiling them.
func newPatterns(field string, srcs []string, pre, post string, lits bool) ([]*Pattern, error) {
	var out []*Pattern
	for i, src := range srcs {
		if strings.TrimSpace(src) == "" {
			return nil, fmt.Errorf("%s[%d]: empty pattern", field, i)
		}
		p := &Pattern{Source: src, expr: pre + src + post, never: !lits}
		if k, ok := knownExprs()[p.expr]; ok {
			p.NM = k.nm
			if lits && !k.noLits {
				p.Literals = k.lits
			}
		} else {
			info, err := checkExpr(p.expr)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
			}
			if info.hasN != info.hasM {
				return nil, fmt.Errorf("%s[%d]: pattern %q: named groups n and m go together", field, i, src)
			}
			p.NM = info.hasN
			if lits {
				p.Literals = info.lits
			}
		}
		out = append(out, p)
	}
	return out, nil
}

type exprInfo struct {
	hasN, hasM bool
	lits       []string
}

// checkExpr parses expr as regexp.Compile would and derives its literals.
func checkExpr(expr string) (exprInfo, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return exprInfo{}, err
	}
	var info exprInfo
	for _, n := range re.CapNames() {
		info.hasN = info.hasN || n == "n"
		info.hasM = info.hasM || n == "m"
	}
	info.lits = required(re.Simplify())
	return info, nil
}

// newCueSet builds the alternation of cues. A cue matches at word
// boundaries where it begins or ends with a letter or digit (a cue
// starting with a non-letter, "n't" or "'ll", matches as a word suffix;
// CJK cues match anywhere, as CJK has no spaces between words). With
// anchored, a cue matches only at the start of the text (after
// punctuation and spaces).
func newCueSet(field string, cues []string, anchored bool) (*CueSet, error) {
	c := &CueSet{}
	var alts []string
	for i, cue := range cues {
		cue = strings.TrimSpace(cue)
		if cue == "" {
			return nil, fmt.Errorf("%s[%d]: empty cue", field, i)
		}
		alt := cueExpr(cue)
		if _, ok := knownExprs()[alt]; !ok {
			if _, err := syntax.Parse(alt, syntax.Perl); err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
			}
		}
		c.Cues = append(c.Cues, cue)
		alts = append(alts, alt)
	}
	if len(alts) == 0 {
		return c, nil
	}
	c.expr = `(?i)(?:` + strings.Join(alts, "|") + `)`
	if anchored {
		c.expr = `(?i)^[\s\pP]*(?:` + strings.Join(alts, "|") + `)`
	}
	return c, nil
}

// Word boundaries that work for any script: RE2's \b knows ASCII only,
// so "não" or "gelöst" would never end at \b.
const (
	wordStart = `(?:^|[^\pL\pN_])`
	wordEnd   = `(?:[^\pL\pN_]|$)`
)

func cueExpr(cue string) string {
	first, _ := utf8.DecodeRuneInString(cue)
	last, _ := utf8.DecodeLastRuneInString(cue)
	pre, post := "", ""
	switch {
	case strings.HasPrefix(cue, "n't") || !isWordRune(first) || isCJK(first):
	case first < utf8.RuneSelf:
		pre = `\b`
	default:
		pre = wordStart
	}
	switch {
	case isCJK(last) || last == '\'' || strings.HasSuffix(cue, `(?:\s|$)`):
		// A cue ending in (?:\s|$) needs a space or the end after it:
		// "non ho" but not "non-blocking".
	case last >= utf8.RuneSelf && isWordRune(last):
		post = wordEnd
	default:
		post = `\b`
	}
	return pre + `(?:` + cue + `)` + post
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// knownExprs is the table of claims_known.go, built on first use so that
// the binaries that never load the lexicon do not pay for it.
var knownExprs = sync.OnceValue(knownExprsTable)

// knownExpr is an entry of knownExprs (claims_known.go).
type knownExpr struct {
	lits   []string
	noLits bool
	nm     bool
}
