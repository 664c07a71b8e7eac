package trust

import (
	"net/url"
	"testing"
)

// pathEscape must write exactly what url.PathEscape writes: summaries
// written before it existed are read with it, and MACs cover the bytes.
func TestPathEscapeMatchesNetURL(t *testing.T) {
	var all []byte
	for c := 0; c < 256; c++ {
		all = append(all, byte(c))
	}
	for _, s := range []string{
		"", "claude", "claude-code/subagent", "repo:github.com/x/y", "a b", "100%", "a;b,c?d/e",
		"$&+:=@", "-_.~", "é", "\x00\xff", "日本", "%41", string(all),
	} {
		if got, want := pathEscape(s), url.PathEscape(s); got != want {
			t.Errorf("pathEscape(%q) = %q, want %q", s, got, want)
		}
	}
}

func FuzzPathEscape(f *testing.F) {
	f.Add("agent scope/x?y")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := pathEscape(s), url.PathEscape(s); got != want {
			t.Fatalf("pathEscape(%q) = %q, want %q", s, got, want)
		}
	})
}
