package gate

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// TestLazyReSameAnswers: the prefilter never hides a match. Every lazy
// expression answers as the compiled expression does, on texts built to
// match each of them and on texts that only just miss.
func TestLazyReSameAnswers(t *testing.T) {
	res := map[string]*lazyRe{
		"fenceRe": fenceRe, "inlineCode": inlineCode, "linkRe": linkRe, "urlRe": urlRe,
		"headingRe": headingRe, "bulletRe": bulletRe, "strongRe": strongRe, "emphasisRe": emphasisRe,
		"tableSepRe": tableSepRe, "htmlTagRe": htmlTagRe, "sentenceEnd": sentenceEnd,
		"htmlComment": htmlComment, "questionClause": questionClause, "clauseBreak": clauseBreak,
	}
	texts := []string{
		"", "plain words", "```go", "  ~~~", "use `go test` here", "[docs](http://x)", "![img](a.png)",
		"see https://example.com/x", "file:///tmp/a", "## Heading", "   # h", "- item", "* item", "+ item",
		"• item", "12) item", "3. item", "**bold** and __b__ and ~~s~~", "_em_ *em*", "| --- | :-: |",
		"|a|b|", "<b>bold</b>", "<!-- c --> x", "<!-- open", "Done. Next!", "a — b", "a\nb",
		"x, y; z: w", "a - b", "but however though", "all done and tested", "但是", "Ａll ｄone",
		"tests pass ✅", "\t- tab bullet", "9 tests", "x:y", "a]b", "a<b", "#", "*", "_", "~",
	}
	for name, l := range res {
		re := regexp.MustCompile(l.expr)
		for _, s := range texts {
			for _, v := range []string{s, "  " + s, s + " end", strings.ToUpper(s)} {
				if got, want := l.MatchString(v), re.MatchString(v); got != want {
					t.Errorf("%s.MatchString(%q) = %v, want %v", name, v, got, want)
				}
				if got, want := l.FindStringSubmatch(v), re.FindStringSubmatch(v); !reflect.DeepEqual(got, want) {
					t.Errorf("%s.FindStringSubmatch(%q) = %q, want %q", name, v, got, want)
				}
				if got, want := l.FindAllStringIndex(v, -1), re.FindAllStringIndex(v, -1); !reflect.DeepEqual(got, want) {
					t.Errorf("%s.FindAllStringIndex(%q) = %v, want %v", name, v, got, want)
				}
				if got, want := l.FindStringIndex(v), re.FindStringIndex(v); !reflect.DeepEqual(got, want) {
					t.Errorf("%s.FindStringIndex(%q) = %v, want %v", name, v, got, want)
				}
				if got, want := l.ReplaceAllString(v, "<$1>"), re.ReplaceAllString(v, "<$1>"); got != want {
					t.Errorf("%s.ReplaceAllString(%q) = %q, want %q", name, v, got, want)
				}
				if got, want := l.ReplaceAllStringFunc(v, strings.ToUpper), re.ReplaceAllStringFunc(v, strings.ToUpper); got != want {
					t.Errorf("%s.ReplaceAllStringFunc(%q) = %q, want %q", name, v, got, want)
				}
			}
		}
	}
	// a prefilter that is wrong is caught: "x" cannot stand for `\d`
	bad := newLazyRe(`\d`, "x")
	if bad.MatchString("7") == regexp.MustCompile(`\d`).MatchString("7") {
		t.Fatal("a wrong prefilter went unnoticed")
	}
}
