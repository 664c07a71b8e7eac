package gate

// sentenceEnds returns what sentenceEnd.FindAllStringIndex(s, -1)
// returns, without compiling the expression: every stop message is split
// into sentences, so the gate paid for that compilation at every stop.
// The expression, leftmost-first, is
//
//	[.!?;]+(?:["')\]]*)(?:\s+|$)   A: end punctuation, closers, then space or the end
//	\s+[—–]\s+                     B: a dash between spaces
//	\n                             C: a line break
//
// where \s is [\t\n\f\r ]. Each alternative's greedy runs are followed by
// a character the run cannot hold, so backtracking never finds a shorter
// match: A matches at i exactly when the whole punctuation run from i and
// the closers after it are followed by space (all of it taken) or the
// end; B exactly when the whole space run from i is followed by a dash
// and a space run (all taken). None matches the empty string. A run that
// fails from its start fails from every later position in it, so the
// scan is linear (TestSentenceEndsMatchesExpression compares the two).
func sentenceEnds(s string) [][]int {
	var out [][]int
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' }
	isPunct := func(c byte) bool { return c == '.' || c == '!' || c == '?' || c == ';' }
	isCloser := func(c byte) bool { return c == '"' || c == '\'' || c == ')' || c == ']' }
	spaceRun := func(i int) int {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		return i
	}
	dashAt := func(i int) bool { // — U+2014 or – U+2013
		return i+3 <= len(s) && s[i] == 0xE2 && s[i+1] == 0x80 && (s[i+2] == 0x94 || s[i+2] == 0x93)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case isPunct(c):
			j := i
			for j < len(s) && isPunct(s[j]) {
				j++
			}
			k := j
			for k < len(s) && isCloser(s[k]) {
				k++
			}
			if k == len(s) || isSpace(s[k]) {
				end := spaceRun(k)
				out = append(out, []int{i, end})
				i = end
				continue
			}
			i = j // no later start in this run matches either
		case isSpace(c):
			j := spaceRun(i)
			if dashAt(j) {
				if end := spaceRun(j + 3); end > j+3 {
					out = append(out, []int{i, end})
					i = end
					continue
				}
			}
			// B fails from every start in this run: each line break in it
			// is a match of its own (C).
			for k := i; k < j; k++ {
				if s[k] == '\n' {
					out = append(out, []int{k, k + 1})
				}
			}
			i = j
		default:
			i++
		}
	}
	return out
}
