package ledgerhook

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// fillLedger appends n tool-call entries to session, as bench/genledger
// does, and returns the open ledger.
func fillLedger(tb testing.TB, h home.Home, session string, n int) *ledger.Ledger {
	tb.Helper()
	if _, err := ledger.Init(h); err != nil {
		tb.Fatal(err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		tb.Fatal(err)
	}
	for i := 0; i < n; i++ {
		in := fmt.Sprintf(`{"command":"go vet ./pkg%d","description":"vet"}`, i)
		if _, err := l.Append(session, ledger.Record{Kind: ledger.KindToolCall, Runtime: "claude", Event: "PostToolUse", Tool: "Bash",
			ToolUseID: fmt.Sprintf("toolu_%d", i), Args: json.RawMessage(in), Body: map[string]any{"cwd": "/tmp", "exit_code": 0},
			Artifacts: []ledger.Artifact{{Name: "input.json", Data: strings.NewReader(in)}}}); err != nil {
			tb.Fatal(err)
		}
	}
	return l
}

// BenchmarkRecordPrompt is the UserPromptSubmit hook's work (the entry,
// the origin, the trust refresh) on a session of 10 and of 10,000
// entries: it must not grow with the ledger.
//
//	go test ./internal/ledgerhook -run '^$' -bench RecordPrompt -benchtime 50x
func BenchmarkRecordPrompt(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.Setenv("DOCKET_HOME", b.TempDir())
			h, _ := home.Resolve()
			l := fillLedger(b, h, "bench-prompt", n)
			ev := &hooks.Event{Runtime: hooks.Claude, Name: hooks.UserPromptSubmit, SessionID: "bench-prompt", Cwd: "/tmp", Prompt: "go on", HasPrompt: true}
			// the first prompt of a session scans it once
			if err := recordPrompt(h, l, ev, []byte(`{}`), nil, io.Discard); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := recordPrompt(h, l, ev, []byte(`{}`), nil, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
