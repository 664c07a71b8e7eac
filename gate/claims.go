package gate

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docket/docket/policies"
)

// Claim is one claim found in a final message.
type Claim struct {
	Type string // one of policies.ClaimTypes
	// Sentence is the sentence (or table cell, or heading) the claim was
	// made in, with markdown decoration removed.
	Sentence string
	// Match is the text that matched the lexicon.
	Match string
}

// MaxSentence bounds how much of a sentence a Claim keeps.
const MaxSentence = 240

// Extract returns every claim in text, in message order, at most one per
// claim type and sentence. Text inside fenced code blocks, inline code
// and quoted (">") lines is not read; negated, future or conditional
// phrasings and questions are not claims unless the lexicon says so for
// the claim type.
func Extract(text string, lex *policies.Claims) []Claim {
	var out []Claim
	for _, seg := range segments(text) {
		for _, s := range sentences(seg) {
			out = append(out, sentenceClaims(s, lex)...)
		}
	}
	return out
}

// ClaimTypesOf returns the distinct claim types of claims, in
// policies.ClaimTypes order.
func ClaimTypesOf(claims []Claim) []string {
	seen := map[string]bool{}
	for _, c := range claims {
		seen[c.Type] = true
	}
	var out []string
	for _, t := range policies.ClaimTypes {
		if seen[t] {
			out = append(out, t)
		}
	}
	return out
}

var (
	fenceRe     = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	inlineCode  = regexp.MustCompile("(`+)[^`]*?(?:`+)")
	linkRe      = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	urlRe       = regexp.MustCompile(`\b(?:https?|ftp|file)://\S+`)
	headingRe   = regexp.MustCompile(`^\s{0,3}#{1,6}\s+`)
	bulletRe    = regexp.MustCompile(`^\s*(?:[-*+•]|\d{1,3}[.)])\s+`)
	strongRe    = regexp.MustCompile(`\*\*|__|~~`)
	emphasisRe  = regexp.MustCompile(`(?:^|\s)[*_]|[*_](?:\s|$)`)
	tableSepRe  = regexp.MustCompile(`^[\s|:\-]+$`)
	htmlTagRe   = regexp.MustCompile(`</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?>`)
	sentenceEnd = regexp.MustCompile(`[.!?;]+(?:["')\]]*)(?:\s+|$)|\s+[—–]\s+|\n`)
)

// segments splits a markdown message into the pieces sentences are found
// in: one per line, one per table cell; code and quotes are dropped.
func segments(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.NewReplacer("’", "'", "‘", "'", "ʼ", "'").Replace(text)
	var out []string
	var fence string // the open fence marker, "" outside code
	for _, ln := range strings.Split(text, "\n") {
		if m := fenceRe.FindStringSubmatch(ln); m != nil {
			switch {
			case fence == "":
				fence = m[1]
			case m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(ln[len(m[0]):]) == "":
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		t := strings.TrimSpace(ln)
		if strings.HasPrefix(t, ">") {
			continue
		}
		t = inlineCode.ReplaceAllString(t, " code ")
		t = linkRe.ReplaceAllString(t, "$1")
		t = urlRe.ReplaceAllString(t, " url ")
		t = htmlTagRe.ReplaceAllString(t, " ")
		if strings.HasPrefix(t, "|") || strings.Count(t, "|") >= 2 {
			if tableSepRe.MatchString(t) {
				continue
			}
			for _, cell := range strings.Split(strings.Trim(t, "|"), "|") {
				if c := clean(cell); c != "" {
					out = append(out, c)
				}
			}
			continue
		}
		if c := clean(t); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// clean removes heading, list and emphasis markers.
func clean(s string) string {
	s = strings.TrimSpace(s)
	s = headingRe.ReplaceAllString(s, "")
	for {
		t := bulletRe.ReplaceAllString(s, "")
		if t == s {
			break
		}
		s = t
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "[x] "), "[X] ")
	s = strongRe.ReplaceAllString(s, "")
	s = emphasisRe.ReplaceAllStringFunc(s, func(m string) string {
		if strings.TrimSpace(m) == "" {
			return m
		}
		return strings.Map(func(r rune) rune {
			if r == '*' || r == '_' || r == '~' {
				return -1
			}
			return r
		}, m)
	})
	return strings.TrimSpace(strings.Join(strings.Fields(s), " "))
}

// sentence is one sentence of a segment.
type sentence struct {
	text     string
	question bool
}

func sentences(seg string) []sentence {
	var out []sentence
	start := 0
	add := func(end int, term string) {
		t := strings.TrimSpace(seg[start:end])
		if t != "" {
			out = append(out, sentence{text: t, question: strings.Contains(term, "?")})
		}
	}
	for _, m := range sentenceEnd.FindAllStringIndex(seg, -1) {
		term := seg[m[0]:m[1]]
		if strings.HasPrefix(strings.TrimSpace(term), ".") && isAbbrev(seg[start:m[0]]) {
			continue
		}
		end := m[0]
		if strings.ContainsAny(term[:1], ".!?;") {
			end += len(strings.TrimRightFunc(term, unicode.IsSpace))
		}
		add(end, term)
		start = m[1]
	}
	add(len(seg), "")
	return out
}

// isAbbrev reports whether text ends in an abbreviation whose dot does
// not end a sentence ("e.g", "i.e", "vs", "etc" is a real end).
func isAbbrev(text string) bool {
	f := strings.Fields(text)
	if len(f) == 0 {
		return false
	}
	switch strings.ToLower(f[len(f)-1]) {
	case "e.g", "i.e", "vs", "cf", "approx", "no", "fig", "mr", "ms", "dr":
		return true
	}
	return false
}

// clauseBreak ends the clause a negation cue must share with its match.
var clauseBreak = regexp.MustCompile(`(?i)[,:()\[\]]|\bbut\b|\bhowever\b|\balthough\b|\bthough\b|\bwhile\b|\band\b`)

func sentenceClaims(s sentence, lex *policies.Claims) []Claim {
	var out []Claim
	lower := strings.ToLower(s.text)
	for i := range lex.Types {
		rule := &lex.Types[i]
		if s.question && !rule.InQuestions {
			continue
		}
		if rule.Literals != nil && !containsAny(lower, rule.Literals) {
			continue
		}
		if m, ok := firstValidMatch(s.text, rule, lex); ok {
			out = append(out, Claim{Type: rule.Type, Sentence: truncate(s.text, MaxSentence), Match: m})
		}
	}
	return out
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func firstValidMatch(text string, rule *policies.ClaimRule, lex *policies.Claims) (string, bool) {
	for _, re := range rule.Patterns {
		n, m := re.SubexpIndex("n"), re.SubexpIndex("m")
		for _, loc := range re.FindAllStringSubmatchIndex(text, -1) {
			if n >= 0 && m >= 0 && loc[2*n] >= 0 && loc[2*m] >= 0 {
				if strings.TrimLeft(text[loc[2*n]:loc[2*n+1]], "0") != strings.TrimLeft(text[loc[2*m]:loc[2*m+1]], "0") {
					continue
				}
			}
			start, end := loc[0], loc[1]
			if excluded(text, start, end, rule.Exclude) {
				continue
			}
			before := text[:start]
			if rule.Negatable && (negated(before, lex) || negatedInside(text[start:end], lex)) {
				continue
			}
			if !rule.InFuture && future(text, before, lex) {
				continue
			}
			return text[start:end], true
		}
	}
	return "", false
}

// excluded reports whether an exclude pattern's match overlaps [start,end).
func excluded(text string, start, end int, excl []*regexp.Regexp) bool {
	for _, re := range excl {
		for _, l := range re.FindAllStringIndex(text, -1) {
			if l[0] < end && l[1] > start || l[0] == start && l[1] == start {
				return true
			}
		}
	}
	return false
}

// negated reports whether a negation cue sits in the last window words of
// the clause that ends where the match begins.
func negated(before string, lex *policies.Claims) bool {
	if locs := clauseBreak.FindAllStringIndex(before, -1); len(locs) > 0 {
		before = before[locs[len(locs)-1][1]:]
	}
	w := lastWords(before, lex.NegationWindow)
	for _, re := range lex.Negation {
		if re.MatchString(w) {
			return true
		}
	}
	return false
}

// negatedInside reports whether a negation cue sits between the first and
// last word of a match, where a pattern's filler words may have let it in
// ("tests are not passing").
func negatedInside(match string, lex *policies.Claims) bool {
	f := strings.Fields(match)
	if len(f) < 3 {
		return false
	}
	inner := strings.Join(f[1:len(f)-1], " ")
	for _, re := range lex.Negation {
		if re.MatchString(inner) {
			return true
		}
	}
	return false
}

// future reports whether the match is in future or conditional tense:
// a strong cue in the window before it, or a temporal cue in the window
// when the sentence also has a strong cue or the cue is within two words
// of the match.
func future(text, before string, lex *policies.Claims) bool {
	w := before
	if i := strings.LastIndexByte(w, ':'); i >= 0 {
		w = w[i+1:]
	}
	w = lastWords(w, lex.FutureWindow)
	for _, re := range lex.Future {
		if re.MatchString(w) {
			return true
		}
	}
	near := lastWords(before, 2)
	for _, re := range lex.Temporal {
		if !re.MatchString(before) {
			continue
		}
		if re.MatchString(near) {
			return true
		}
		for _, f := range lex.Future {
			if f.MatchString(text) {
				return true
			}
		}
	}
	return false
}

func lastWords(s string, n int) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) })
	if len(f) > n {
		f = f[len(f)-n:]
	}
	return strings.Join(f, " ")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
