package policies

import (
	"fmt"
	"strings"
	"testing"
)

func TestDefaultClaimsParse(t *testing.T) {
	c, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	if c.BlockCap != 3 {
		t.Errorf("block cap = %d, want 3", c.BlockCap)
	}
	if len(c.Types) != len(ClaimTypes) {
		t.Fatalf("%d types, want %d", len(c.Types), len(ClaimTypes))
	}
	for i, ty := range ClaimTypes {
		if c.Types[i].Type != ty {
			t.Errorf("types[%d] = %s, want %s", i, c.Types[i].Type, ty)
		}
	}
	if !c.Rule("delegation").InQuestions || c.Rule("done").InQuestions {
		t.Errorf("in_questions not as in the default file")
	}
	if c.Source().Origin != "embedded:claims.yaml" {
		t.Errorf("origin %q", c.Source().Origin)
	}
}

func TestParseClaimsErrors(t *testing.T) {
	base, _ := Default(ClaimsFile)
	tests := []struct {
		name, edit, want string
	}{
		{"unknown key", "version: 1\nbogus: 1\n", "bogus"},
		{"bad version", "version: 2\n", "version"},
		{"unknown type", "version: 1\nclaims:\n  - type: finished\n    patterns: ['x']\n", "unknown claim type"},
		{"missing types", "version: 1\nclaims:\n  - type: done\n    patterns: ['x']\n", "not defined"},
		{"bad regexp", strings.Replace(string(base), `'\ball set\b'`, `'(all set'`, 1), "done.patterns"},
		{"block cap zero", strings.Replace(string(base), "block_cap: 3", "block_cap: 0", 1), "block_cap"},
		{"lonely n group", strings.Replace(string(base), `'\ball set\b'`, `'(?P<n>\d+) all set'`, 1), "named groups"},
		{"duplicate type", strings.Replace(string(base), "  - type: fixed", "  - type: done", 1), "defined twice"},
		{"default parses", string(base), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseClaims(Source{Name: ClaimsFile, Origin: "test", Data: []byte(tt.edit)})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to mention %q", err, tt.want)
			}
			var pe *Error
			if !asError(err, &pe) {
				t.Fatalf("error %T is not *Error", err)
			}
		})
	}
}

func TestWrites(t *testing.T) {
	c, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	tools := []struct {
		tool string
		want bool
	}{
		{"Write", true}, {"Edit", true}, {"MultiEdit", true}, {"NotebookEdit", true},
		{"Read", false}, {"Bash", false}, {"WriteX", false}, {"Grep", false},
		{"mcp__fs__write_file", true}, {"mcp__github__get_issue", false},
	}
	for _, tt := range tools {
		if got := c.IsWriteTool(tt.tool); got != tt.want {
			t.Errorf("IsWriteTool(%q) = %v, want %v", tt.tool, got, tt.want)
		}
	}
	cmds := []struct {
		cmd  string
		want bool
	}{
		{"go test ./...", false},
		{"go test ./... 2>&1 | tail -20", false},
		{"ls -la > /dev/null 2>&1", false},
		{"docket validate --session s1 --claim done --validator go_test_pass --args '{\"package\":\"./...\"}'", false},
		{"cd /repo && docket validate --claim tests_pass --validator go_test_pass --args '{}' 2>&1", false},
		{"git status && git diff HEAD~1", false},
		{"git log --oneline | head", false},
		{"grep -rn 'x > y' .", false},
		{"cat README.md", false},
		{"pytest -q tests/", false},
		{"npm test", false},
		{"echo hi > out.txt", true},
		{"echo hi >> out.txt", true},
		{"cat a | tee b", true},
		{"sed -i 's/a/b/' f.go", true},
		{"perl -pi -e 's/a/b/' f", true},
		{"rm -rf build", true},
		{"cd x && mv a b", true},
		{"mkdir -p out", true},
		{"touch f", true},
		{"git checkout -- f.go", true},
		{"git stash", true},
		{"gofmt -w .", true},
		{"go mod tidy", true},
		{"go generate ./...", true},
		{"npm install", true},
		{"pip install -e .", true},
		{"prettier --write src", true},
		{"ruff format .", true},
		{"cargo fmt", true},
		{"make", true},
		{"make build", true},
		{"make test", false},
		{"find . -name '*.tmp' -delete", true},
		{"python3 -c \"open('x','w').write('y')\"", true},
		{"cat <<'EOF' > f.go\npackage x\nEOF", true},
		{"curl -sS -o out.html http://x", true},
	}
	for _, tt := range cmds {
		if got := c.IsWriteCommand(tt.cmd); got != tt.want {
			t.Errorf("IsWriteCommand(%q) = %v, want %v", tt.cmd, got, tt.want)
		}
	}
}

func asError(err error, target **Error) bool {
	for err != nil {
		if e, ok := err.(*Error); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}

func TestRuleLiterals(t *testing.T) {
	tests := []struct {
		pats []string
		want string
	}{
		{[]string{`\ball set\b`}, "[all set]"},
		{[]string{`\b(?:shipped|pushed)\b`, `\btagged\s+v?\d`}, "[shipped pushed tagged]"},
		{[]string{`(?P<n>\d+)/(?P<m>\d+)`}, "[/]"},
		{[]string{`\bdone\b`, `\d+`}, "[]"},
		{[]string{`(?:✅|✔)`}, "[✅ ✔]"},
	}
	for _, tt := range tests {
		got := ruleLiterals(tt.pats)
		if fmt.Sprint(got) != tt.want {
			t.Errorf("ruleLiterals(%q) = %q, want %s", tt.pats, got, tt.want)
		}
	}
	// The prefilter must never reject a sentence a pattern matches: every
	// default rule with literals is checked against sentences its own
	// patterns match.
	c, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	samples := []string{"All done.", "all set", "Merged and pushed.", "32/32 passing", "CI is green", "I'm stuck",
		"Could you provide the token?", "✅ Complete", "Fixed the bug", "no longer fails", "Tests: 12 passed", "tagged v1.2"}
	for _, r := range c.Types {
		for _, s := range samples {
			matched := false
			for _, p := range r.Patterns {
				if p.Regexp().MatchString(s) {
					matched = true
				}
			}
			if matched && r.Literals != nil {
				ok := false
				for _, l := range r.Literals {
					if strings.Contains(strings.ToLower(s), l) {
						ok = true
					}
				}
				if !ok {
					t.Errorf("%s: %q matches but contains none of %q", r.Type, s, r.Literals)
				}
			}
		}
	}
}
