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
// Declared as &lazyRe{expr: …, anyOf: …}, a package-level one is laid out
// by the linker: no code runs for it at start-up.
type lazyRe struct {
	expr  string
	anyOf string
	once  sync.Once
	re    *regexp.Regexp
}

func newLazyRe(expr, anyOf string) *lazyRe { return &lazyRe{expr: expr, anyOf: anyOf} }

// get compiles the expression on first use.
func (l *lazyRe) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.expr) })
	return l.re
}

// skip reports whether s cannot match.
func (l *lazyRe) skip(s string) bool { return l.anyOf != "" && !strings.ContainsAny(s, l.anyOf) }

func (l *lazyRe) MatchString(s string) bool { return !l.skip(s) && l.get().MatchString(s) }

func (l *lazyRe) FindStringSubmatch(s string) []string {
	if l.skip(s) {
		return nil
	}
	return l.get().FindStringSubmatch(s)
}

func (l *lazyRe) FindStringIndex(s string) []int {
	if l.skip(s) {
		return nil
	}
	return l.get().FindStringIndex(s)
}

func (l *lazyRe) FindAllStringIndex(s string, n int) [][]int {
	if l.skip(s) {
		return nil
	}
	return l.get().FindAllStringIndex(s, n)
}

func (l *lazyRe) ReplaceAllString(s, repl string) string {
	if l.skip(s) {
		return s
	}
	return l.get().ReplaceAllString(s, repl)
}

func (l *lazyRe) ReplaceAllStringFunc(s string, f func(string) string) string {
	if l.skip(s) {
		return s
	}
	return l.get().ReplaceAllStringFunc(s, f)
}
