//go:build unix

package gate

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/regular/regulartest"
)

// A transcript replaced by a FIFO does not hold the gate (which would run
// into the runtime's hook timeout, and runtimes let a stop through on a
// timeout): the gate blocks on an unreadable transcript at once.
func TestGateTranscriptFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	regulartest.Mkfifo(t, p)
	g := testGate(t, &memLedger{})
	regulartest.Within(t, 5*time.Second, "the gate's stop", func() {
		r := g.Stop(&hooks.Event{Runtime: hooks.Claude, Name: hooks.Stop, SessionID: "s1", TranscriptPath: p})
		if r.Outcome != Block || !strings.Contains(r.Anomaly, "not a regular file") {
			t.Errorf("outcome %s anomaly %q, want a block naming the FIFO", r.Outcome, r.Anomaly)
		}
	})
}

// The exported readers open a transcript the same way.
func TestReadersTranscriptFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	regulartest.Mkfifo(t, p)
	regulartest.Within(t, 5*time.Second, "ReadLastAssistant", func() {
		if _, err := ReadLastAssistant(p, MainChain); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadLastAssistant(FIFO) = %v, want a refusal", err)
		}
	})
	regulartest.Within(t, 5*time.Second, "ReadTurn", func() {
		if _, err := ReadTurn(p, MainChain); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("ReadTurn(FIFO) = %v, want a refusal", err)
		}
	})
}
