package install

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
)

// Sealed wiring through docket-hook is still recognised as docket's, as
// the right hook, so uninstall and doctor treat it like the hook binaries.
func TestThinWiring(t *testing.T) {
	for _, w := range Wiring(hooks.Claude) {
		w.Thin = true
		w.Args = append(w.Args, "--socket", "/run/docket/docket.sock")
		cmd := w.Command("/opt/docket bin", hooks.Claude)
		if !strings.HasPrefix(cmd, "'/opt/docket bin/docket-hook' "+hookSub[w.Binary]+" --runtime claude") {
			t.Errorf("%s: command %q", w.Binary, cmd)
		}
		if got := DocketBinary(cmd); got != w.Binary {
			t.Errorf("DocketBinary(%q) = %q, want %q", cmd, got, w.Binary)
		}
	}
	for _, cmd := range []string{"/usr/bin/docket-hook", "/usr/bin/docket-hook version", "/usr/bin/not-docket-hook judge"} {
		if got := DocketBinary(cmd); got != "" {
			t.Errorf("DocketBinary(%q) = %q, want none", cmd, got)
		}
	}
}

// What install --sealed writes passes doctor's wiring check.
func TestThinWiringChecks(t *testing.T) {
	dir := t.TempDir()
	o := Options{Runtime: hooks.Claude, Scope: Project, BinDir: "/opt/docket", ProjectDir: dir, Socket: "/run/docket/docket.sock", Thin: true}
	c, err := PlanInstall(o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c.New), "docket-hook gate --runtime claude --timeout 12s --socket /run/docket/docket.sock") {
		t.Fatalf("not wired through docket-hook:\n%s", c.New)
	}
	if p := CheckWiring(hooks.Claude, c.New, "/opt/docket", 0); len(p) != 0 {
		t.Fatalf("problems: %q", p)
	}
	// and uninstall takes it all out
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.Path, c.New, 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := PlanUninstall(o)
	if err != nil {
		t.Fatal(err)
	}
	if u.Removed != 6 || strings.Contains(string(u.New), "docket-hook") {
		t.Fatalf("uninstall removed %d:\n%s", u.Removed, u.New)
	}
}
