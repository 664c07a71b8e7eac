package validators

import (
	"strings"
	"testing"
)

// FuzzAnalyzeScript: the analysis never panics, is deterministic, and
// appending `|| true` to any script it accepts makes it trivial.
func FuzzAnalyzeScript(f *testing.F) {
	for _, s := range []string{"go test ./...", "true", "a && b || c", "echo 'x' | tee y", "sh -c 'make test'",
		"FOO=1 env -u X timeout 5 go vet", "set -o pipefail; a | b", "! false", "exit", "a \"$(b)\" `c`", "x 2>&1 >out"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v1, err1 := analyzeScript(s)
		v2, err2 := analyzeScript(s)
		if (err1 == nil) != (err2 == nil) || v1.st != v2.st {
			t.Fatalf("not deterministic on %q", s)
		}
		if err1 != nil || strings.ContainsAny(s, "#\\") {
			return
		}
		v, err := analyzeScript(s + " || true")
		if err == nil && v.st != stOK {
			t.Fatalf("%q || true classified %v, want trivially successful", s, v.st)
		}
	})
}

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
