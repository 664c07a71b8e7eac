package gate

import (
	"html"
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
// and quoted (">") lines is not read; the rest is normalised (NFKC,
// invisible characters dropped, look-alike letters folded) before it is
// matched; negated, future or conditional phrasings and questions are
// not claims unless the lexicon says so for the claim type. In a
// question, only the interrogative part is a question: "All tests pass
// now, want me to push?" claims tests_pass.
func Extract(text string, lex *policies.Claims) []Claim {
	var out []Claim
	seen := map[[2]string]bool{}
	for _, seg := range segments(text) {
		for _, s := range sentences(seg) {
			for _, c := range sentenceClaims(s, lex) {
				if k := [2]string{c.Type, c.Sentence}; !seen[k] {
					seen[k] = true
					out = append(out, c)
				}
			}
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

// Compiled on first use; the second argument lists runes one of which a
// text must contain to match (checked first), "" for none.
var (
	fenceRe     = &lazyRe{expr: "^ {0,3}(`{3,}|~{3,})", anyOf: "`~"}
	inlineCode  = &lazyRe{expr: "(`+)[^`]*?(?:`+)", anyOf: "`"}
	linkRe      = &lazyRe{expr: `!?\[([^\]]*)\]\([^)]*\)`, anyOf: "]"}
	urlRe       = &lazyRe{expr: `\b(?:https?|ftp|file)://\S+`, anyOf: ":"}
	headingRe   = &lazyRe{expr: `^\s{0,3}#{1,6}\s+`, anyOf: "#"}
	bulletRe    = &lazyRe{expr: `^\s*(?:[-*+•]|\d{1,3}[.)])\s+`, anyOf: "-*+•0123456789"}
	strongRe    = &lazyRe{expr: `\*\*|__|~~`, anyOf: "*_~"}
	emphasisRe  = &lazyRe{expr: `(?:^|\s)[*_]|[*_](?:\s|$)`, anyOf: "*_"}
	tableSepRe  = &lazyRe{expr: `^[\s|:\-]+$`, anyOf: ""}
	htmlTagRe   = &lazyRe{expr: `</?[a-zA-Z][a-zA-Z0-9-]*(?:\s[^<>]*)?>`, anyOf: "<"}
	sentenceEnd = &lazyRe{expr: `[.!?;]+(?:["')\]]*)(?:\s+|$)|\s+[—–]\s+|\n`, anyOf: ""}
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
		for _, t := range lineVariants(t) {
			t = inlineCode.ReplaceAllString(t, " code ")
			t = linkRe.ReplaceAllString(t, "$1")
			t = urlRe.ReplaceAllString(t, " url ")
			t = htmlTagRe.ReplaceAllStringFunc(t, htmlTag)
			if strings.Contains(t, "&") {
				t = html.UnescapeString(t)
			}
			if strings.HasPrefix(t, "|") || strings.Count(t, "|") >= 2 {
				if tableSepRe.MatchString(t) {
					continue
				}
				// A cell after the first is read under the row's first
				// cell: "| tests | all passing |" reads "tests", "tests:
				// all passing".
				var head string
				for i, cell := range strings.Split(strings.Trim(t, "|"), "|") {
					c := clean(cell)
					switch {
					case c == "":
					case i == 0:
						head = c
						out = append(out, c)
					case head != "":
						out = append(out, head+": "+c)
					default:
						out = append(out, c)
					}
				}
				continue
			}
			if c := clean(t); c != "" {
				out = append(out, c)
			}
		}
	}
	n := len(out)
	for i := 0; i < n; i++ {
		if strings.ContainsRune(out[i], '\u202e') {
			out = append(out, normalize(reverseOverrides(out[i])))
		}
		out[i] = normalize(out[i])
	}
	return out
}

// lineVariants returns the ways a line may be read: a line with an HTML
// comment is read without it ("d<!-- -->one" renders "done") and with
// its text (a terminal shows it). (A segment with a right-to-left
// override is likewise read as typed, as a terminal without bidi shows
// it, and with the overridden runs reversed, as a bidi renderer does.)
func lineVariants(t string) []string {
	if strings.Contains(t, "<!--") {
		return []string{htmlComment.ReplaceAllString(t, ""), strings.NewReplacer("<!--", " ", "-->", " ").Replace(t)}
	}
	return []string{t}
}

var htmlComment = &lazyRe{expr: `<!--.*?(?:-->|$)`, anyOf: "<"}

// reverseOverrides reverses each run after U+202E (right-to-left
// override) up to U+202C or U+2069 or the end of the line.
func reverseOverrides(s string) string {
	var b strings.Builder
	for {
		i := strings.IndexRune(s, '\u202e')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		s = s[i+len("\u202e"):]
		j := strings.IndexAny(s, "\u202c\u2069")
		run := s
		if j >= 0 {
			run, s = s[:j], s[j:]
		} else {
			s = ""
		}
		r := []rune(run)
		for k, l := 0, len(r)-1; k < l; k, l = k+1, l-1 {
			r[k], r[l] = r[l], r[k]
		}
		b.WriteString(string(r))
	}
}

// htmlTag replaces an HTML tag: inline tags (which render their text
// run on with what surrounds it: "<b>d</b>one" is "done") by nothing,
// others by a space.
func htmlTag(tag string) string {
	name := strings.TrimLeft(tag, "</")
	if i := strings.IndexAny(name, " \t\n/>"); i >= 0 {
		name = name[:i]
	}
	switch strings.ToLower(name) {
	case "b", "i", "em", "strong", "u", "s", "del", "ins", "mark", "span", "sub", "sup", "small", "big", "font", "kbd", "abbr", "a", "wbr", "tt", "q", "cite", "dfn", "var", "samp", "bdi", "bdo":
		return ""
	}
	return " "
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
	// An asterisk left inside a word is emphasis too: "d*o*ne" renders
	// "done".
	s = strings.ReplaceAll(s, "*", "")
	return strings.TrimSpace(strings.Join(strings.Fields(s), " "))
}

// sentence is one sentence of a segment.
type sentence struct {
	text     string
	question bool
}

// questionStart returns where the interrogative part of a question
// sentence begins: 0 when the sentence opens with a question word or has
// a single clause, else the start of its last clause (or its last "¿").
func questionStart(text string, lex *policies.Claims) int {
	if i := strings.LastIndex(text, "¿"); i >= 0 {
		return i
	}
	if lex.QuestionStarters.MatchString(text) {
		return 0
	}
	locs := questionClause.FindAllStringIndex(text, -1)
	if len(locs) == 0 {
		if loc := lex.QuestionTails.FindIndex(text); loc != nil {
			return loc[0]
		}
		return 0
	}
	last := locs[len(locs)-1][1]
	if strings.TrimSpace(strings.Trim(text[last:], "?!. ")) == "" {
		// "Done, right?" has a last clause; "Done, ?" does not.
		if len(locs) == 1 {
			return 0
		}
		last = locs[len(locs)-2][1]
	}
	return last
}

// questionClause separates the clauses of a question sentence.
var questionClause = &lazyRe{expr: `[,;:、]|\s[—–-]\s`, anyOf: ""}

func sentences(seg string) []sentence {
	var out []sentence
	start := 0
	add := func(end int, term string) {
		t := strings.TrimSpace(seg[start:end])
		if t != "" {
			out = append(out, sentence{text: t, question: strings.Contains(term, "?")})
		}
	}
	for _, m := range sentenceEnds(seg) {
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
var clauseBreak = &lazyRe{expr: `(?i)[,:()\[\]、]|\bbut\b|\bhowever\b|\balthough\b|\bthough\b|\bwhile\b|\band\b|\bpero\b|\baber\b|\bmais\b|\bmas\b|但`, anyOf: ""}

func sentenceClaims(s sentence, lex *policies.Claims) []Claim {
	var out []Claim
	lower := strings.ToLower(s.text)
	qStart := len(s.text) + 1 // matches starting before it are declarative
	if s.question {
		qStart = questionStart(s.text, lex)
	}
	for i := range lex.Types {
		rule := &lex.Types[i]
		limit := qStart
		if rule.InQuestions {
			limit = len(s.text) + 1
		}
		if limit == 0 {
			continue
		}
		if rule.Literals != nil && !containsAny(lower, rule.Literals) {
			continue
		}
		if m, ok := firstValidMatch(s.text, lower, limit, rule, lex); ok {
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

// firstValidMatch returns the first match of the rule that ends by limit
// and is neither excluded, negated nor in future tense. Patterns
// whose literals are not in lower are neither compiled nor run.
func firstValidMatch(text, lower string, limit int, rule *policies.ClaimRule, lex *policies.Claims) (string, bool) {
	for _, p := range rule.Patterns {
		if !p.MayMatch(lower) {
			continue
		}
		re := p.Regexp()
		n, m := -1, -1
		if p.NM {
			n, m = re.SubexpIndex("n"), re.SubexpIndex("m")
		}
		for _, loc := range re.FindAllStringSubmatchIndex(text, -1) {
			if loc[0] >= limit {
				break
			}
			if loc[1] > limit {
				continue // reaches into the interrogative part
			}
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
			if rule.Negatable && (negated(before, lex) || negatedInside(text[start:end], lex) || negatedAfter(text[end:], lex)) {
				continue
			}
			if !rule.InFuture && (future(text, before, lex) || futureInside(text[start:end], lex)) {
				continue
			}
			return text[start:end], true
		}
	}
	return "", false
}

// excluded reports whether an exclude pattern's match overlaps [start,end).
func excluded(text string, start, end int, excl []*policies.Pattern) bool {
	folded := ""
	for i, p := range excl {
		if i == 0 {
			folded = policies.FoldString(text)
		}
		if !p.MayMatchFolded(folded) {
			continue // none of its literals occurs: it cannot match
		}
		for _, l := range p.Regexp().FindAllStringIndex(text, -1) {
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
	return lex.Negation.MatchString(lastWords(before, lex.NegationWindow))
}

// negatedAfter reports whether a cue of the languages that negate after
// the verb follows the match in its clause ("Die Tests bestehen nicht").
func negatedAfter(after string, lex *policies.Claims) bool {
	if loc := clauseBreak.FindStringIndex(after); loc != nil {
		after = after[:loc[0]]
	}
	if i := strings.IndexAny(after, ".!?;"); i >= 0 {
		after = after[:i]
	}
	return lex.NegationAfter.MatchString(firstWords(after, lex.NegationAfterWindow))
}

// negatedInside reports whether a negation cue sits between the first and
// last word of a match, where a pattern's filler words may have let it in
// ("tests are not passing").
func negatedInside(match string, lex *policies.Claims) bool {
	f := strings.Fields(match)
	if len(f) < 3 {
		return false
	}
	return lex.Negation.MatchString(strings.Join(f[1:len(f)-1], " "))
}

// futureInside reports whether a future or conditional cue sits between
// the first and last word of a match ("tests would pass").
func futureInside(match string, lex *policies.Claims) bool {
	f := strings.Fields(match)
	if len(f) < 3 {
		return false
	}
	return lex.Future.MatchString(strings.Join(f[1:len(f)-1], " "))
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
	if lex.Future.MatchString(lastWords(w, lex.FutureWindow)) {
		return true
	}
	if !lex.Temporal.MatchString(before) {
		return false
	}
	return lex.Temporal.MatchString(lastWords(before, 2)) || lex.Future.MatchString(text)
}

func lastWords(s string, n int) string {
	f := strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) })
	if len(f) > n {
		f = f[len(f)-n:]
	}
	return strings.Join(f, " ")
}

func firstWords(s string, n int) string {
	f := strings.Fields(s)
	if len(f) > n {
		f = f[:n]
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
