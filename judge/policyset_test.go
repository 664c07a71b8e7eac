package judge

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

func TestDelegatePaths(t *testing.T) {
	got := DelegatePaths("/p", "/p/a/b", "builder")
	want := []string{"/p/.docket/judges.md", "/p/a/.docket/judges.md", "/p/a/b/.docket/judges.md", "/p/.docket/judges.builder.md"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DelegatePaths = %v, want %v", got, want)
	}
	if got := DelegatePaths("/p", "/elsewhere", "../x"); !reflect.DeepEqual(got, []string{"/p/.docket/judges.md"}) {
		t.Errorf("cwd outside the project or a bad agent type: %v", got)
	}
}

func TestPolicySetCache(t *testing.T) {
	h, _ := home.At(t.TempDir())
	if err := os.MkdirAll(h.PoliciesDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	// not the default byte for byte (that one is pre-decoded, never cached)
	td, _ := policies.Default(policies.ToolsFile)
	edited := string(td) + "\n# edited\n"
	write(t, filepath.Join(h.PoliciesDir(), policies.ToolsFile), edited)
	s1, err := LoadPolicySet(h)
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(h.RunDir(), "policy-cache", strings.TrimPrefix(s1.Version, "pv1:")+".json")
	if _, err := os.Stat(cache); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	s2, err := LoadPolicySet(h)
	if err != nil || s2.Version != s1.Version || len(s2.Tools.Rules) != len(s1.Tools.Rules) || s2.Judges.Prose != s1.Judges.Prose {
		t.Fatalf("cached set differs: %v", err)
	}
	// a changed source misses the cache and is parsed (and validated)
	bad := strings.Replace(string(td), "schema: docket.tools.v1", "schema: docket.tools.v0", 1)
	write(t, filepath.Join(h.PoliciesDir(), policies.ToolsFile), bad)
	if _, err := LoadPolicySet(h); err == nil || FailureKind(err) != KindPolicyInvalid {
		t.Errorf("invalid tools.yaml served from cache or wrong error: %v", err)
	}
	// a cache entry whose content claims another version is ignored
	write(t, filepath.Join(h.PoliciesDir(), policies.ToolsFile), edited)
	write(t, cache, `{"Version":"pv1:other","Tools":{},"Judges":{}}`)
	s3, err := LoadPolicySet(h)
	if err != nil || len(s3.Tools.Rules) != len(s1.Tools.Rules) {
		t.Errorf("bad cache entry used: %v", err)
	}
}
