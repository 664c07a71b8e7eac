package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Alone, with the daemon down and no full hook binary beside it to write
// the runtime's fail-closed answer, docket-hook still fails closed: exit 2,
// which the runtimes treat as a block.
func TestFailsClosedAlone(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "docket-hook")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, hook := range []string{"judge", "ledger", "gate"} {
		cmd := exec.Command(bin, hook, "--socket", filepath.Join(dir, "none.sock"))
		cmd.Stdin = strings.NewReader(`{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`)
		out, err := cmd.CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "could not write the fail-closed answer") {
			t.Errorf("%s: %v\n%s", hook, err, out)
		}
	}
}
