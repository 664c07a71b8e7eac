package install

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
)

var settingsSeeds = []string{
	userSettings,
	`{}`, ``, `{"hooks":{}}`, `{"hooks":{"Stop":[]}}`, `{"a":1e400,"b":-0.0,"c":"\u00e9\ud83d\ude00"}`,
	`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"/x/docket-gate"}]},7,"s",{"hooks":"x"}]}}`,
	`{"version":1,"hooks":{"stop":[{"command":"/x/docket-gate"},{"command":"say hi"}]}}`,
	`{"dup":1,"dup":2}`, `[]`, `{"a":`, "{\"a\":\"\xff\"}",
}

// FuzzParseDocument: a parsed settings file re-encodes to the same JSON
// value, and re-encoding is stable.
func FuzzParseDocument(f *testing.F) {
	for _, s := range settingsSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseDocument(b)
		if err != nil {
			return
		}
		out := encodeDocument(d, "  ")
		d2, err := parseDocument(out)
		if err != nil {
			t.Fatalf("re-encoded document does not parse: %v\n%s", err, out)
		}
		if out2 := encodeDocument(d2, "  "); string(out2) != string(out) {
			t.Fatalf("encoding not stable:\n%s\n%s", out, out2)
		}
		var orig map[string]any
		if json.Unmarshal(b, &orig) == nil && !sameJSON(b, out) {
			t.Fatalf("meaning changed:\n%s\n%s", b, out)
		}
	})
}

// FuzzInstall: on any settings file docket accepts, install then install
// plans no change, the wiring checks clean, and uninstall leaves no
// docket handler.
func FuzzInstall(f *testing.F) {
	for _, s := range settingsSeeds {
		for i := range hooks.Runtimes {
			f.Add([]byte(s), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, r uint8) {
		rt := hooks.Runtimes[int(r)%len(hooks.Runtimes)]
		o := Options{Runtime: rt, Scope: Project, BinDir: "/opt/docket bin", ProjectDir: "/p"}
		c := &Change{Path: "/p/settings.json", Existed: true, Old: b}
		if err := edit(c, o, true); err != nil {
			return
		}
		if p := CheckWiring(rt, c.New, o.BinDir, DefaultJudgeTimeout()); len(p) > 0 {
			t.Fatalf("wiring after install: %v\n%s", p, c.New)
		}
		c2 := &Change{Path: c.Path, Existed: true, Old: c.New}
		if err := edit(c2, o, true); err != nil || c2.Changed() {
			t.Fatalf("second install: %v\n%s", err, c2.Diff())
		}
		u := &Change{Path: c.Path, Existed: true, Old: c.New}
		if err := edit(u, o, false); err != nil {
			t.Fatal(err)
		}
		if u.Removed != len(Wiring(rt)) {
			t.Fatalf("uninstall removes %d handlers, want %d", u.Removed, len(Wiring(rt)))
		}
		if w, _ := Wired(rt, u.New); len(w) > 0 {
			t.Fatalf("docket handlers left after uninstall: %+v", w)
		}
	})
}

// FuzzCodexConfig: on any config.toml, planning docket's block never
// panics; what it plans to write parses, keeps the user's lines before
// the block, is stable when planned again, and uninstall takes it out
// again.
func FuzzCodexConfig(f *testing.F) {
	for _, s := range []string{"", "model = \"x\"\n", "[hooks]\nstate = {}\n", "[sandbox_workspace_write]\nwritable_roots = []\n",
		"[hooks.state.\"/p/.codex/hooks.json:stop:0:0\"]\ntrusted_hash = \"sha256:x\"\n", "a = 1", "[[[", codexBlockBegin + "\n" + codexBlockEnd + "\n"} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	hooksPath := filepath.Join(dir, ".codex", "hooks.json")
	c := &Change{Path: hooksPath}
	if err := edit(c, Options{Runtime: hooks.Codex, Scope: Project, BinDir: "/opt/docket bin", ProjectDir: dir}, true); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg := filepath.Join(t.TempDir(), "config.toml")
		if err := os.WriteFile(cfg, b, 0o600); err != nil {
			t.Fatal(err)
		}
		o := CodexOptions{ConfigPath: cfg, Hooks: []CodexHooksFile{{hooksPath, c.New}}, ProjectDir: dir, TrustProject: true, StateRoot: "/state root"}
		p, err := PlanCodexConfig(o)
		if err != nil || !p.Change.Changed() {
			return
		}
		if _, err := parseCodexConfig(p.Change.New); err != nil {
			t.Fatalf("planned config does not parse: %v\n%s", err, p.Change.New)
		}
		rest := stripCodexBlock(b)
		if !strings.HasPrefix(string(p.Change.New), strings.TrimRight(string(rest), "\n")) {
			t.Fatalf("user lines changed:\n%q\n%q", b, p.Change.New)
		}
		os.WriteFile(cfg, p.Change.New, 0o600)
		if p2, err := PlanCodexConfig(o); err != nil || p2.Change.Changed() {
			t.Fatalf("second plan: %v\n%s", err, p2.Change.Diff())
		}
		u, err := PlanCodexUninstall(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(u.New), codexBlockBegin) {
			t.Fatalf("block left after uninstall:\n%s", u.New)
		}
	})
}
