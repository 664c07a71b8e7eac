package worktree

import "testing"

func TestWildmatch(t *testing.T) {
	tests := []struct {
		p, s string
		want bool
	}{
		{"*.go", "x.go", true},
		{"*.go", "x.gox", false},
		{"*", "a/b", false},
		{"a/*", "a/b", true},
		{"a/*", "a/b/c", false},
		{"**/foo", "foo", true},
		{"**/foo", "a/b/foo", true},
		{"**/foo", "a/b/xfoo", false},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "ab", false},
		{"a/**", "a/x/y", true},
		{"a/**", "a", false},
		{"a**b", "axxb", true},
		{"a**b", "ax/xb", false},
		{"?.c", "a.c", true},
		{"?.c", "/.c", false},
		{"[abc].c", "b.c", true},
		{"[!abc].c", "b.c", false},
		{"[^abc].c", "d.c", true},
		{"[a-c]x", "cx", true},
		{"[a-c]x", "dx", false},
		{"[]]x", "]x", true},
		{"[x", "[x", true},
		{`\*x`, "*x", true},
		{`\*x`, "ax", false},
		{"foo", "foo", true},
		{"foo", "fo", false},
		{"*a*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
	}
	for _, tt := range tests {
		if got := wildmatch(tt.p, tt.s); got != tt.want {
			t.Errorf("wildmatch(%q, %q) = %v, want %v", tt.p, tt.s, got, tt.want)
		}
	}
}

func TestIgnored(t *testing.T) {
	root := parseIgnore([]byte("# comment\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/*.md\n\\#hash\ntrail\\ \n  \n"), "")
	sub := parseIgnore([]byte("*.tmp\n!important.log\n"), "sub")
	pats := append(root, sub...)
	tests := []struct {
		rel   string
		dir   bool
		want  bool
		label string
	}{
		{"a.log", false, true, "basename glob"},
		{"x/y/a.log", false, true, "basename glob at depth"},
		{"keep.log", false, false, "negation"},
		{"build", true, true, "dir-only matches a dir"},
		{"build", false, false, "dir-only skips a file"},
		{"x/build", true, true, "dir-only at depth"},
		{"top.txt", false, true, "anchored"},
		{"x/top.txt", false, false, "anchored not at depth"},
		{"docs/a.md", false, true, "middle slash anchors"},
		{"x/docs/a.md", false, false, "middle slash anchors to base"},
		{"#hash", false, true, "escaped hash"},
		{"trail ", false, true, "escaped trailing space"},
		{"sub/a.tmp", false, true, "sub pattern"},
		{"a.tmp", false, false, "sub pattern only below sub"},
		{"sub/important.log", false, false, "deeper negation wins"},
		{"main.go", false, false, "unmatched"},
	}
	for _, tt := range tests {
		if got := ignored(pats, tt.rel, tt.dir); got != tt.want {
			t.Errorf("%s: ignored(%q) = %v, want %v", tt.label, tt.rel, got, tt.want)
		}
	}
}
