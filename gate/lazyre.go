package gate

import (
	"regexp"
	"strings"
	"sync"
)

// lazyRe is a regular expression compiled on first use, with a cheap
// prefilter: a text that contains none of the runes in anyOf (when it is
// set) cannot match, and gets the no-match answer without compiling. The
// gate links a dozen text expressions; most messages need only a few.
type lazyRe struct {
	expr  string
	anyOf string
	re    func() *regexp.Regexp
}

func newLazyRe(expr, anyOf string) *lazyRe {
	return &lazyRe{expr: expr, anyOf: anyOf, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })}
}

// skip reports whether s cannot match.
func (l *lazyRe) skip(s string) bool { return l.anyOf != "" && !strings.ContainsAny(s, l.anyOf) }

func (l *lazyRe) MatchString(s string) bool { return !l.skip(s) && l.re().MatchString(s) }

func (l *lazyRe) FindStringSubmatch(s string) []string {
	if l.skip(s) {
		return nil
	}
	return l.re().FindStringSubmatch(s)
}

func (l *lazyRe) FindStringIndex(s string) []int {
	if l.skip(s) {
		return nil
	}
	return l.re().FindStringIndex(s)
}

func (l *lazyRe) FindAllStringIndex(s string, n int) [][]int {
	if l.skip(s) {
		return nil
	}
	return l.re().FindAllStringIndex(s, n)
}

func (l *lazyRe) ReplaceAllString(s, repl string) string {
	if l.skip(s) {
		return s
	}
	return l.re().ReplaceAllString(s, repl)
}

func (l *lazyRe) ReplaceAllStringFunc(s string, f func(string) string) string {
	if l.skip(s) {
		return s
	}
	return l.re().ReplaceAllStringFunc(s, f)
}
