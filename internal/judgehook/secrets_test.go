//go:build !nostore

package judgehook

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/docket/docket/store/firewall"
)

// With no `docket` to call, token-shaped write-back text is refused.
func TestSecretScanFailsClosedWithoutDocket(t *testing.T) {
	UseDocketDetector()
	t.Setenv("PATH", t.TempDir())
	defer resetScanner()
	if got := firewall.Check("lesson: rotate ghp_R4nd0mT0k3nV4lu3xYzAbCdEfGh1234567890ab"); got == "" {
		t.Fatal("token-shaped text accepted with no detector reachable")
	}
}

// A `docket firewall-check` on PATH is what the hook asks.
func TestSecretScanCallsDocket(t *testing.T) {
	dir := t.TempDir()
	fake := "#!/bin/bash\nwhile IFS= read -r -d \"\" t; do echo fake-rule; done\n"
	if err := os.WriteFile(filepath.Join(dir, "docket"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	resetScanner()
	defer resetScanner()
	for i := 0; i < 2; i++ { // one child answers both
		rule, err := detectViaDocket("token ABCdef1234567890xyz")
		if err != nil || rule != "fake-rule" {
			t.Fatalf("detectViaDocket = %q, %v", rule, err)
		}
	}
}

func resetScanner() {
	stopScanner()
	scanner.Lock()
	scanner.dead = nil
	scanner.Unlock()
}
