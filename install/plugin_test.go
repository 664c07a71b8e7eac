package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
)

// TestClaudePlugin checks that the repository's Claude Code plugin parses
// and wires the same events, binaries, timeouts and matchers as
// `docket install --runtime claude`, through ${CLAUDE_PLUGIN_ROOT}/bin.
func TestClaudePlugin(t *testing.T) {
	manifest, err := os.ReadFile(filepath.Join("..", ".claude-plugin", "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name    string          `json:"name"`
		Version string          `json:"version"`
		Hooks   json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		t.Fatalf("plugin.json: %v", err)
	}
	if m.Name != "docket" || m.Version == "" {
		t.Errorf("plugin.json name %q version %q", m.Name, m.Version)
	}
	if m.Hooks != nil {
		t.Error("plugin.json names a hooks file; Claude Code loads hooks/hooks.json by itself and rejects a duplicate")
	}

	b, err := os.ReadFile(filepath.Join("..", "hooks", "hooks.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(b) {
		t.Fatal("hooks/hooks.json is not valid JSON")
	}
	all, err := Handlers(hooks.Claude, b)
	if err != nil {
		t.Fatal(err)
	}
	want := Wiring(hooks.Claude)
	if len(all) != len(want) {
		t.Fatalf("plugin wires %d handlers, want %d: %+v", len(all), len(want), all)
	}
	for i, w := range want {
		g := all[i]
		if g.Event != w.Event || g.Binary != w.Binary || g.Timeout != w.Timeout || g.Matcher != w.Matcher {
			t.Errorf("plugin entry %d = %+v, want %+v", i, g, w)
		}
		if g.Program != "${CLAUDE_PLUGIN_ROOT}/bin/"+w.Binary {
			t.Errorf("plugin entry %d runs %q, want ${CLAUDE_PLUGIN_ROOT}/bin/%s", i, g.Program, w.Binary)
		}
		if !strings.HasPrefix(g.Command, `"`) {
			t.Errorf("plugin command %s is not quoted against spaces in the plugin root", g.Command)
		}
	}
	if p := CheckWiring(hooks.Claude, b, "", DefaultJudgeTimeout()); len(p) > 0 {
		t.Errorf("CheckWiring(plugin): %v", p)
	}
}
