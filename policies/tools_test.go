package policies

import (
	"errors"
	"strings"
	"testing"
)

func TestDefaultTools(t *testing.T) {
	b, err := Default(ToolsFile)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := ParseTools(Source{Name: ToolsFile, Origin: "embedded", Data: b})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool string
		risk RiskClass
		ok   bool
	}{
		{"Read", ReadOnly, true},
		{"Write", ReversibleWrite, true},
		{"Bash", ReversibleWrite, true},
		{"mcp__github__get_issue", ReadOnly, true},
		{"mcp__github__merge_pull_request", HighRisk, true},
		{"mcp__attio__delete-record", HighRisk, true},
		{"mcp__slack__post", "", false},
	} {
		s, ok := tools.Lookup(tc.tool)
		if ok != tc.ok || ok && s.Risk != tc.risk {
			t.Errorf("Lookup(%s) = %s %v, want %s %v", tc.tool, s.Risk, ok, tc.risk, tc.ok)
		}
	}
	if tools.UnknownMCP != ExternalSideEffect {
		t.Errorf("unknown MCP class %s", tools.UnknownMCP)
	}
}

func TestParseToolsErrors(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"schema", "schema: x\n", "schema"},
		{"risk", "schema: docket.tools.v1\ntools: [{tool: A, risk: scary}]\n", "risk"},
		{"exec", "schema: docket.tools.v1\ntools: [{tool: A, risk: read_only, execution: now}]\n", "execution"},
		{"effect", "schema: docket.tools.v1\nrules: [{id: a, effect: maybe, tool: A, reason: r}]\n", "effect"},
		{"dup", "schema: docket.tools.v1\nrules: [{id: a, effect: deny, tool: A, reason: r}, {id: a, effect: deny, tool: B, reason: r}]\n", "duplicate"},
		{"no pattern", "schema: docket.tools.v1\nrules: [{id: a, effect: deny, reason: r}]\n", "no pattern"},
		{"no reason", "schema: docket.tools.v1\nrules: [{id: a, effect: deny, tool: A}]\n", "reason"},
		{"rewrite on deny", "schema: docket.tools.v1\nrules: [{id: a, effect: deny, tool: A, reason: r, rewrite: {from: x}}]\n", "rewrite"},
		{"unknown key", "schema: docket.tools.v1\nbogus: 1\n", "malformed"},
		{"utf8", "schema: docket.tools.v1\n# \xff\n", "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTools(Source{Origin: "t", Data: []byte(tc.data)})
			var pe *Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want policy error with %q", err, tc.want)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		ok   bool
	}{
		{"*", "", true},
		{"mcp__*", "mcp__a__b", true},
		{"mcp__*__get_*", "mcp__github__get_issue", true},
		{"mcp__*__get_*", "mcp__github__list", false},
		{"git push* --force", "git push origin x --force", true},
		{"git push* --force", "git push --force-with-lease", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"*/.env", "/p/.env", true},
		{"*/.env", "/p/.envrc", false},
	} {
		if Glob(tc.p, tc.s) != tc.ok {
			t.Errorf("Glob(%q, %q) = %v", tc.p, tc.s, !tc.ok)
		}
	}
}

func TestStricter(t *testing.T) {
	if Stricter(ReadOnly, HighRisk) != HighRisk || Stricter(ExternalSideEffect, ReversibleWrite) != ExternalSideEffect || Stricter("bogus", ReadOnly) != HighRisk {
		t.Error("Stricter")
	}
}

func FuzzParseTools(f *testing.F) {
	b, _ := Default(ToolsFile)
	f.Add(b)
	f.Add([]byte("schema: docket.tools.v1\nrules: [{id: a, effect: revise, tool: A, reason: r, rewrite: {from: x}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tools, err := ParseTools(Source{Name: ToolsFile, Origin: "fuzz", Data: data})
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("not a policy error: %v", err)
			}
			return
		}
		for _, s := range tools.Tools {
			if !s.Risk.Valid() || s.Execution == "" || s.Validation == "" {
				t.Fatalf("entry not validated: %+v", s)
			}
		}
		if !tools.Unknown.Valid() || !tools.UnknownMCP.Valid() {
			t.Fatal("defaults not filled")
		}
	})
}

func FuzzGlob(f *testing.F) {
	f.Add("a*b?c", "axxbyc")
	f.Fuzz(func(t *testing.T, p, s string) {
		if Glob(s, s) != true && !strings.ContainsAny(s, "*?") {
			t.Fatalf("literal %q does not match itself", s)
		}
		if !Glob("*", s) {
			t.Fatal("* must match anything")
		}
		if len(p) <= 12 && len(s) <= 24 && Glob(p, s) != refGlob(p, s) {
			t.Fatalf("Glob(%q, %q) = %v, reference says %v", p, s, Glob(p, s), refGlob(p, s))
		}
	})
}

// refGlob is the obvious exponential matcher the linear one must agree with.
func refGlob(p, s string) bool {
	if p == "" {
		return s == ""
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if refGlob(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && refGlob(p[1:], s[1:])
	}
	return s != "" && p[0] == s[0] && refGlob(p[1:], s[1:])
}
