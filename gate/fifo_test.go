//go:build unix

package gate

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
)

// A transcript replaced by a FIFO does not hold the gate (which would run
// into the runtime's hook timeout, and runtimes let a stop through on a
// timeout): the gate blocks on an unreadable transcript at once.
func TestGateTranscriptFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	g := testGate(t, &memLedger{})
	done := make(chan *Result, 1)
	go func() {
		done <- g.Stop(&hooks.Event{Runtime: hooks.Claude, Name: hooks.Stop, SessionID: "s1", TranscriptPath: p})
	}()
	select {
	case r := <-done:
		if r.Outcome != Block || !strings.Contains(r.Anomaly, "not a regular file") {
			t.Fatalf("outcome %s anomaly %q, want a block naming the FIFO", r.Outcome, r.Anomaly)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the gate did not return within 5 s")
	}
}
