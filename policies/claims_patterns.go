package policies

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
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
	// AllOf are more such sets, one per part of the pattern that requires
	// a literal: every match contains a string of each (see MayMatch).
	// "tests? ... pass" needs a "test" and a "pass", not just either.
	AllOf [][]string
	// NM: the pattern has the named groups n and m ("32/32 passing"
	// matches only when n equals m).
	NM bool

	expr  string
	never bool // on a compile error, match nothing (exclude patterns)
	once  sync.Once
	re    *regexp.Regexp

	// fold are foldString'd literals one of which every match contains
	// (nil: none), from the known table (foldKnown) or derived on first
	// use.
	fold      []string
	foldKnown bool
	foldOnce  sync.Once
}

// MayMatchFolded reports whether the pattern can match text whose
// foldString is folded: false only when none of its folded literals
// occurs in it. Unlike MayMatch it is sound for any pattern, with or
// without (?i): a match's text folds to a string containing a literal's
// fold.
func (p *Pattern) MayMatchFolded(folded string) bool {
	p.foldOnce.Do(func() {
		if p.foldKnown {
			return
		}
		if re, err := syntax.Parse(p.expr, syntax.Perl); err == nil {
			p.fold = requiredLiterals(re.Simplify(), foldString)
		}
	})
	return p.fold == nil || containsAny(folded, p.fold)
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
	if p.Literals != nil && !containsAny(lower, p.Literals) {
		return false
	}
	for _, set := range p.AllOf {
		if !containsAny(lower, set) {
			return false
		}
	}
	return true
}

func (p *Pattern) String() string { return p.expr }

// CueSet is a list of cue phrases (negation, future, question starters)
// matched as whole words, case-insensitively, through one alternation.
// The alternation is compiled on first use, and only of the cues that
// can match the text at hand: each cue's required literals (case-folded)
// are looked for in the case-folded text first, and a cue none of whose
// literals occurs cannot match and is left out. Leaving out cues that
// cannot match changes no answer, also not FindIndex's (leftmost, then
// the first cue in order), so the result is that of the whole
// alternation; the full alternation of 70 cues with Unicode word
// boundaries costs milliseconds to compile, a few cues microseconds.
type CueSet struct {
	Cues []string
	alts []string // cueExpr of each cue
	pre  string   // before the alternation: (?i) or the anchored prefix

	once sync.Once
	lits [][]string // folded literals per cue, nil: no prefilter
	// litsKnown: lits were derived ahead (the compiled-policy cache,
	// the compiled default lexicon)
	litsKnown bool

	mu sync.Mutex
	re map[string]*regexp.Regexp // by the chosen cues' indexes
}

// MatchString reports whether any cue occurs in s.
func (c *CueSet) MatchString(s string) bool {
	re := c.regexpFor(s)
	return re != nil && re.MatchString(s)
}

// FindIndex returns where the first cue in s begins and ends, or nil.
func (c *CueSet) FindIndex(s string) []int {
	re := c.regexpFor(s)
	if re == nil {
		return nil
	}
	return re.FindStringIndex(s)
}

// maxCueRegexps bounds the compiled alternations a CueSet keeps.
const maxCueRegexps = 64

// regexpFor returns the alternation of the cues that may match s, or nil
// when none may.
func (c *CueSet) regexpFor(s string) *regexp.Regexp {
	if c == nil || len(c.alts) == 0 {
		return nil
	}
	c.derived()
	folded := foldString(s)
	var key []byte
	var alts []string
	for i, alt := range c.alts {
		if c.lits[i] != nil && !containsAny(folded, c.lits[i]) {
			continue
		}
		key = strconv.AppendInt(append(key, ','), int64(i), 10)
		alts = append(alts, alt)
	}
	if alts == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if re, ok := c.re[string(key)]; ok {
		return re
	}
	re, err := regexp.Compile(c.pre + strings.Join(alts, "|") + `)`)
	if err != nil {
		re = matchNone()
	}
	if c.re == nil || len(c.re) >= maxCueRegexps {
		c.re = map[string]*regexp.Regexp{} // a long-running process keeps a few
	}
	c.re[string(key)] = re
	return re
}

// derived makes sure the cues' literals are derived.
func (c *CueSet) derived() {
	if !c.litsKnown {
		c.once.Do(c.deriveLiterals)
	}
}

// deriveLiterals sets each cue's folded literals: a cue without regexp
// syntax is its own literal; any other is parsed (as it is matched,
// case-insensitively) and gets the literals one of which every match
// contains, or none (always tried) if it has no such literals.
func (c *CueSet) deriveLiterals() {
	c.lits = make([][]string, len(c.Cues))
	for i, cue := range c.Cues {
		if regexp.QuoteMeta(cue) == cue {
			c.lits[i] = []string{foldString(cue)}
			continue
		}
		re, err := syntax.Parse(`(?i)(?:`+cue+`)`, syntax.Perl)
		if err != nil {
			continue
		}
		c.lits[i] = requiredLiterals(re.Simplify(), foldString)
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// FoldString is foldString, for MayMatchFolded's callers.
func FoldString(s string) string { return foldString(s) }

// foldString maps every rune of s to the smallest rune of its simple
// case-folding orbit, the equivalence (?i) matches under: a literal
// matches case-insensitively at some place in s exactly when its
// foldString occurs in s's there. (strings.ToLower is not that: "ς" and
// "ſ" are lower case and fold with "σ" and "s".) Invalid UTF-8 becomes
// U+FFFD, as the regexp reads it.
func foldString(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		b := []byte(s)
		for i, ch := range b {
			if 'a' <= ch && ch <= 'z' {
				b[i] = ch - 'a' + 'A'
			}
		}
		return string(b)
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteRune(minFold(r))
	}
	return b.String()
}

func minFold(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < m {
			m = f
		}
	}
	return m
}

// requiredLiterals returns literals, folded by fold, one of which any
// match of re must contain, or nil when there is no such set: a
// concatenation requires what any of its parts requires, an alternation
// the union of its branches, a small character class (e.g. ✅|✔
// factored by the parser) is a set of one-rune literals. fold is
// strings.ToLower for the rule prefilters, foldString where the text is
// folded the way (?i) folds.
func requiredLiterals(re *syntax.Regexp, fold func(string) string) []string {
	switch re.Op {
	case syntax.OpLiteral:
		return []string{fold(string(re.Rune))}
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > 8 || len(out) > 16 {
				return nil
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				out = append(out, fold(string(r)))
			}
		}
		return out
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0], fold)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0], fold)
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			if l := requiredLiterals(sub, fold); l != nil && (best == nil || shortest(l) > shortest(best)) {
				best = l
			}
		}
		return best
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			l := requiredLiterals(sub, fold)
			if l == nil {
				return nil
			}
			out = append(out, l...)
		}
		return out
	}
	return nil
}

// requiredFactors returns the literal sets of each part of re's top
// concatenation that requires one (requiredLiterals of the part): a
// match of re is a match of every part, so it contains a string of each
// set. Nil when fewer than two parts require literals, which
// requiredLiterals covers alone.
func requiredFactors(re *syntax.Regexp, fold func(string) string) [][]string {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	if re.Op != syntax.OpConcat {
		return nil
	}
	var out [][]string
	for _, sub := range re.Sub {
		if l := requiredLiterals(sub, fold); l != nil {
			out = append(out, l)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
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
		if k, ok := lookupKnown(p.expr); ok {
			p.NM = k.nm
			if lits && !k.noLits {
				p.Literals, p.AllOf = k.lits, k.allOf
			}
			p.fold, p.foldKnown = k.fold, true
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
				p.Literals, p.AllOf = info.lits, info.allOf
			}
		}
		out = append(out, p)
	}
	return out, nil
}

type exprInfo struct {
	hasN, hasM bool
	lits       []string
	allOf      [][]string
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
	simple := re.Simplify()
	info.lits = requiredLiterals(simple, strings.ToLower)
	info.allOf = requiredFactors(simple, strings.ToLower)
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
		if _, ok := lookupKnown(alt); !ok {
			if _, err := syntax.Parse(alt, syntax.Perl); err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
			}
		}
		c.Cues = append(c.Cues, cue)
		alts = append(alts, alt)
	}
	c.alts = alts
	c.pre = `(?i)(?:`
	if anchored {
		c.pre = `(?i)^[\s\pP]*(?:`
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

// lookupKnown finds expr in the table of claims_known.go (sorted static
// data: nothing is built at start-up).
func lookupKnown(expr string) (knownExpr, bool) {
	i := sort.Search(len(knownExprsList), func(i int) bool { return knownExprsList[i].expr >= expr })
	if i < len(knownExprsList) && knownExprsList[i].expr == expr {
		return knownExprsList[i], true
	}
	return knownExpr{}, false
}

// knownExpr is an entry of knownExprsList (claims_known.go).
type knownExpr struct {
	expr   string
	lits   []string
	allOf  [][]string
	noLits bool
	nm     bool
	// fold: literals (foldString'd) one of which every match contains;
	// nil for none. The write and exclude patterns use it (MayMatchFolded).
	fold []string
}
