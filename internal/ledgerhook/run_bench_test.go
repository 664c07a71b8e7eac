package ledgerhook

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/docket/docket/internal/home"
)

// BenchmarkRunToolCall is docket-ledger's whole work on a real
// PostToolUse payload, in-process (ledger.Open included, as the binary
// pays it): the bytes and allocations per call show what each process
// pays in fresh heap pages.
//
//	go test -run=NONE -bench=BenchmarkRunToolCall -benchmem ./internal/ledgerhook
func BenchmarkRunToolCall(b *testing.B) {
	payload, err := os.ReadFile("../../testdata/realdata/payloads/PostToolUse__serverless-plugins__002.json")
	if err != nil {
		b.Fatal(err)
	}
	root := b.TempDir()
	b.Setenv("DOCKET_HOME", root)
	h, _ := home.At(root)
	fillLedger(b, h, "warm", 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := Run(context.Background(), nil, bytes.NewReader(payload), io.Discard, io.Discard, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
