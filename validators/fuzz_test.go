package validators

import (
	"testing"
)

// FuzzParsePytestSummary: never panics; a parsed line has sane counts.
func FuzzParsePytestSummary(f *testing.F) {
	for _, s := range []string{"=== 1 failed, 2 passed in 0.05s ===", "no tests ran in 0.01s", "3 passed in 1.00s (0:00:01)", "collected 2 items"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, ok := parsePytestSummary(line)
		if !ok && s != (pytestSummary{}) {
			t.Fatalf("unparsed line %q yields %+v", line, s)
		}
		if s.Passed < 0 || s.Failed < 0 || s.Errors < 0 {
			t.Fatalf("negative counts from %q: %+v", line, s)
		}
	})
}
