package judge

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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

// approvedJudgeHome is a state root whose policy files (the defaults
// unless files names others) are approved, with the cache clock moved
// past the settle time.
func approvedJudgeHome(t *testing.T, files map[string]string) home.Home {
	t.Helper()
	h, _ := home.At(filepath.Join(t.TempDir(), "state"))
	for _, d := range []string{h.KeysDir(), h.PoliciesDir(), h.RunDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write(t, h.HMACKeyPath(), "k1")
	for name, data := range files {
		write(t, filepath.Join(h.PoliciesDir(), name), data)
	}
	if _, err := policies.Approve(h, "alice", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(policies.SetCacheClock(func() time.Time { return time.Now().Add(10 * time.Second) }))
	return h
}

func judgeCached(h home.Home, dels []string) bool {
	_, ok := policies.ReadCompiled(h, policies.CompiledKindJudge, dels)
	return ok
}

// editedTools is the default tools.yaml with one more deny rule.
func editedTools(t *testing.T) string {
	t.Helper()
	td, _ := policies.Default(policies.ToolsFile)
	s := strings.Replace(string(td), "\nrules:\n", "\nrules:\n  - id: no-curl-pipe\n    effect: deny\n    tool: Bash\n    command: \"curl * | sh\"\n    reason: piping downloads into a shell\n", 1)
	if s == string(td) {
		t.Fatal("default tools.yaml has no rules list")
	}
	return s
}

// A cache hit gives the set a fresh load gives: the defaults, an edited
// tools.yaml, a delegate judges.md, a replaced directives.yaml.
func TestPolicySetCompiledSameAsParse(t *testing.T) {
	dd, _ := policies.Default(policies.DirectivesFile)
	tests := []struct {
		name     string
		files    map[string]string
		delegate string
	}{
		{"defaults", nil, ""},
		{"defaults written", map[string]string{policies.ToolsFile: func() string { b, _ := policies.Default(policies.ToolsFile); return string(b) }()}, ""},
		{"edited tools", map[string]string{policies.ToolsFile: editedTools(t)}, ""},
		{"delegate", nil, "---\nschema: docket.judges.v1\nclasses:\n  high_risk:\n    human: true\n---\nBe careful.\n"},
		{"directives replaced", map[string]string{policies.DirectivesFile: string(dd) + "\n# reviewed\n"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := approvedJudgeHome(t, tc.files)
			proj := t.TempDir()
			dels := DelegatePaths(proj, proj, "")
			if tc.delegate != "" {
				os.MkdirAll(filepath.Join(proj, ".docket"), 0o700)
				write(t, dels[0], tc.delegate)
			}
			fresh, err := LoadPolicySet(h, dels...)
			if err != nil {
				t.Fatal(err)
			}
			if fresh.Unapproved != "" {
				t.Fatalf("unapproved: %s", fresh.Unapproved)
			}
			if !judgeCached(h, dels) {
				t.Fatal("approved set not cached")
			}
			hit, err := LoadPolicySet(h, dels...)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(hit, fresh) {
				t.Errorf("cache hit differs from the fresh load:\n got %+v\nwant %+v", hit, fresh)
			}
			if tc.delegate != "" && len(hit.Delegates) != 1 {
				t.Errorf("delegates %v", hit.Delegates)
			}
		})
	}
}

// Attacks on the judge's cache entry and on the files it was built from.
func TestPolicySetCompiledAttacks(t *testing.T) {
	t.Run("tools edited, size and mtime restored", func(t *testing.T) {
		h := approvedJudgeHome(t, map[string]string{policies.ToolsFile: editedTools(t)})
		if _, err := LoadPolicySet(h); err != nil || !judgeCached(h, nil) {
			t.Fatalf("not cached: %v", err)
		}
		p := filepath.Join(h.PoliciesDir(), policies.ToolsFile)
		st, _ := os.Stat(p)
		write(t, p, strings.Replace(editedTools(t), "effect: deny", "effect: allo", 1))
		os.Chtimes(p, st.ModTime(), st.ModTime())
		set, err := LoadPolicySet(h)
		if err == nil && set.Unapproved == "" {
			t.Fatal("edited tools.yaml served as approved")
		}
	})
	t.Run("tools edited and re-approved", func(t *testing.T) {
		h := approvedJudgeHome(t, nil)
		if _, err := LoadPolicySet(h); err != nil || !judgeCached(h, nil) {
			t.Fatalf("not cached: %v", err)
		}
		write(t, filepath.Join(h.PoliciesDir(), policies.ToolsFile), editedTools(t))
		if _, err := policies.Approve(h, "alice", time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
		set, err := LoadPolicySet(h)
		if err != nil || set.Unapproved != "" {
			t.Fatalf("%v %s", err, set.Unapproved)
		}
		if _, ok := rule(set, "no-curl-pipe"); !ok {
			t.Error("the approved edit is not in force (stale cache served)")
		}
	})
	t.Run("invalid tools approved", func(t *testing.T) {
		h := approvedJudgeHome(t, nil)
		LoadPolicySet(h)
		td, _ := policies.Default(policies.ToolsFile)
		write(t, filepath.Join(h.PoliciesDir(), policies.ToolsFile), strings.Replace(string(td), "schema: docket.tools.v1", "schema: docket.tools.v0", 1))
		policies.Approve(h, "alice", time.Unix(0, 0))
		if _, err := LoadPolicySet(h); err == nil || FailureKind(err) != KindPolicyInvalid {
			t.Errorf("invalid tools.yaml served from cache or wrong error: %v", err)
		}
	})
	t.Run("delegate created after the cache", func(t *testing.T) {
		h := approvedJudgeHome(t, nil)
		proj := t.TempDir()
		dels := DelegatePaths(proj, proj, "")
		if _, err := LoadPolicySet(h, dels...); err != nil || !judgeCached(h, dels) {
			t.Fatalf("not cached: %v", err)
		}
		os.MkdirAll(filepath.Join(proj, ".docket"), 0o700)
		write(t, dels[0], "---\nschema: docket.judges.v1\nclasses:\n  high_risk:\n    human: true\n---\n")
		set, err := LoadPolicySet(h, dels...)
		if err != nil || len(set.Delegates) != 1 {
			t.Fatalf("delegate not applied: %v %v", err, set.Delegates)
		}
	})
	t.Run("entry of another project", func(t *testing.T) {
		h := approvedJudgeHome(t, nil)
		a, b := t.TempDir(), t.TempDir()
		da, db := DelegatePaths(a, a, ""), DelegatePaths(b, b, "")
		os.MkdirAll(filepath.Join(b, ".docket"), 0o700)
		write(t, db[0], "---\nschema: docket.judges.v1\nclasses:\n  high_risk:\n    human: true\n---\n")
		if _, err := LoadPolicySet(h, da...); err != nil || !judgeCached(h, da) {
			t.Fatalf("not cached: %v", err)
		}
		copyFile(t, compiledJudgePath(t, h, da), compiledJudgePath(t, h, db))
		if judgeCached(h, db) {
			t.Fatal("another project's entry trusted")
		}
		set, err := LoadPolicySet(h, db...)
		if err != nil || len(set.Delegates) != 1 {
			t.Fatalf("delegate not applied: %v %v", err, set.Delegates)
		}
	})
	t.Run("forged payload", func(t *testing.T) {
		h := approvedJudgeHome(t, map[string]string{policies.ToolsFile: editedTools(t)})
		LoadPolicySet(h)
		p := compiledJudgePath(t, h, nil)
		b, _ := os.ReadFile(p)
		forged := strings.Replace(string(b), `"Effect":"deny"`, `"Effect":"allow"`, 1)
		if forged == string(b) {
			t.Fatal("no deny rule in the cache")
		}
		write(t, p, forged)
		if judgeCached(h, nil) {
			t.Fatal("forged entry trusted")
		}
		set, err := LoadPolicySet(h)
		if err != nil {
			t.Fatal(err)
		}
		if r, _ := rule(set, "no-curl-pipe"); r.Effect != policies.EffectDeny {
			t.Errorf("rule effect %q", r.Effect)
		}
	})
	t.Run("unapproved is not cached", func(t *testing.T) {
		h := approvedJudgeHome(t, nil)
		write(t, filepath.Join(h.PoliciesDir(), policies.ToolsFile), editedTools(t))
		for i := 0; i < 2; i++ {
			set, err := LoadPolicySet(h)
			if err != nil || set.Unapproved == "" {
				t.Fatalf("%v: unapproved edit not reported", err)
			}
			if judgeCached(h, nil) {
				t.Fatal("unapproved set cached")
			}
		}
	})
}

func compiledJudgePath(t *testing.T, h home.Home, dels []string) string {
	t.Helper()
	return policies.CompiledPath(h, policies.CompiledKindJudge, dels)
}

// rule finds a rule of the set by id.
func rule(set *PolicySet, id string) (policies.Rule, bool) {
	for _, r := range set.Tools.Rules {
		if r.ID == id {
			return r, true
		}
	}
	return policies.Rule{}, false
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	write(t, to, string(b))
}

// A payload that passed the MAC but is malformed (truncated, flipped)
// never panics and never decodes into a set with fewer sources.
func TestCompiledSetGarbage(t *testing.T) {
	dd, _ := policies.Default(policies.DirectivesFile)
	h := approvedJudgeHome(t, map[string]string{policies.ToolsFile: editedTools(t), policies.DirectivesFile: string(dd) + "\n# reviewed\n"})
	set, err := LoadPolicySet(h)
	if err != nil {
		t.Fatal(err)
	}
	full, err := encodeCompiledSet(set, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeCompiledSet(string(full)); !reflect.DeepEqual(got, set) {
		t.Fatal("round trip differs")
	}
	for n := 0; n < len(full); n += 1 + n/5 {
		if decodeCompiledSet(string(full[:n])) != nil {
			t.Fatalf("truncated payload (%d of %d bytes) decoded", n, len(full))
		}
	}
	for i := 0; i < len(full); i += 13 {
		b := append([]byte(nil), full...)
		b[i] ^= 0xff
		decodeCompiledSet(string(b))
	}
}
