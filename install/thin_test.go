package install

import (
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
