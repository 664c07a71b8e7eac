package hooks

import "testing"

// A map literal with a key twice does not compile; a table does, and
// only its first entry would count. Every table keeps its keys unique.
func TestTablesHaveUniqueKeys(t *testing.T) {
	check := func(name string, keys []string) {
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k] {
				t.Errorf("%s: %q listed twice", name, k)
			}
			seen[k] = true
		}
	}
	check("toolKinds", keysOf(toolKinds))
	check("cursorNames", keysOf(cursorNames))
	check("geminiNames", keysOf(geminiNames))
	if dup := keysOf(table[int]{{"a", 1}, {"a", 2}}); len(dup) != 2 {
		t.Fatalf("keysOf dropped a key: %v", dup)
	}
}

func TestTableLookup(t *testing.T) {
	tab := table[ToolKind]{{"Bash", KindShell}, {"Read", KindRead}, {"Bash", KindOther}}
	for _, tc := range []struct {
		key  string
		want ToolKind
		ok   bool
	}{
		{"Bash", KindShell, true}, // the first entry wins
		{"Read", KindRead, true},
		{"bash", "", false},
		{"", "", false},
	} {
		got, ok := tab.lookup(tc.key)
		if got != tc.want || ok != tc.ok {
			t.Errorf("lookup(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
}

func keysOf[V any](t table[V]) []string {
	var out []string
	for _, p := range t {
		out = append(out, p.key)
	}
	return out
}
