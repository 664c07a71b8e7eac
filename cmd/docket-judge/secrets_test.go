//go:build !nostore

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/docket/docket/store/firewall"
)

// With no `docket` to call, token-shaped write-back text is refused.
func TestSecretScanFailsClosedWithoutDocket(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if got := firewall.Check("lesson: rotate ghp_R4nd0mT0k3nV4lu3xYzAbCdEfGh1234567890ab"); got == "" {
		t.Fatal("token-shaped text accepted with no detector reachable")
	}
}

// A `docket firewall-check` on PATH is what the hook asks.
func TestSecretScanCallsDocket(t *testing.T) {
	dir := t.TempDir()
	fake := "#!/bin/sh\ncat >/dev/null\necho fake-rule\n"
	if err := os.WriteFile(filepath.Join(dir, "docket"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	rule, err := execDetector("token ABCdef1234567890xyz")
	if err != nil || rule != "fake-rule" {
		t.Fatalf("execDetector = %q, %v", rule, err)
	}
}
