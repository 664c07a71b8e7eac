package ledger

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"
)

// BenchmarkAppend compares one append (with its artifact, fsync, tree
// update and signed head) on an empty ledger and on one of 100,000
// entries: the cost must not grow with the ledger's length.
//
//	go test -run=NONE -bench=BenchmarkAppend -benchtime=2000x ./ledger
func BenchmarkAppend(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"empty", 0}, {"100k", 100_000}} {
		b.Run(size.name, func(b *testing.B) {
			l := newTestLedger(b)
			l.testingOnlyNoSync = true
			for i := 0; i < size.n; i++ {
				if _, err := l.Append("s1", Record{Kind: KindToolCall, Tool: "Bash", Body: map[string]any{"i": i}}); err != nil {
					b.Fatal(err)
				}
			}
			l.testingOnlyNoSync = false
			syscall.Sync() // flush the build's dirty pages outside the timing
			args := json.RawMessage(`{"command":"go test ./...","description":"run the tests"}`)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, err := l.Append("s1", Record{
					Kind: KindToolCall, Runtime: "claude", Event: "PostToolUse", Tool: "Bash", Args: args,
					Body:      map[string]any{"cwd": "/work", "failed": false},
					Artifacts: []Artifact{{Name: "stdout", Data: strings.NewReader("ok  ./... 0.2s\n")}},
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
