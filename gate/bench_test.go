package gate

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeSynthetic writes a transcript of about size bytes: tool-result
// lines of ~10 KiB, then (when withText) a final assistant message split
// over three lines sharing message.id, then a system line.
func writeSynthetic(tb testing.TB, dir string, size int64, withText bool) string {
	tb.Helper()
	p := filepath.Join(dir, fmt.Sprintf("synthetic-%d-%v.jsonl", size, withText))
	f, err := os.Create(p)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pad := strings.Repeat("x", 10<<10)
	var n int64
	for i := 0; n < size; i++ {
		k, _ := fmt.Fprintf(w, `{"type":"user","isSidechain":false,"uuid":"u%d","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"%s"}]}}`+"\n", i, i, pad)
		n += int64(k)
		if i%50 == 0 {
			k, _ := fmt.Fprintf(w, `{"type":"assistant","isSidechain":false,"message":{"id":"msg_%d","content":[{"type":"text","text":"Step %d."}]}}`+"\n", i, i)
			n += int64(k)
		}
	}
	if withText {
		fmt.Fprintln(w, `{"type":"assistant","isSidechain":false,"message":{"id":"msg_final","content":[{"type":"thinking","thinking":"ok"}]}}`)
		fmt.Fprintln(w, `{"type":"assistant","isSidechain":false,"message":{"id":"msg_final","content":[{"type":"text","text":"All done."}]}}`)
		fmt.Fprintln(w, `{"type":"assistant","isSidechain":false,"message":{"id":"msg_final","content":[{"type":"text","text":"All 32 tests pass."}]}}`)
	}
	fmt.Fprintln(w, `{"type":"system","subtype":"stop_hook_summary","isMeta":false}`)
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return p
}

func largestReal(b *testing.B) string {
	d := realdata(b)
	files, _ := filepath.Glob(filepath.Join(d, "transcripts", "*.jsonl"))
	var best string
	var bestSize int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.Size() > bestSize {
			best, bestSize = f, st.Size()
		}
	}
	return best
}

func BenchmarkReadLastAssistantLargestReal(b *testing.B) {
	p := largestReal(b)
	st, _ := os.Stat(p)
	b.Logf("%s, %d bytes", filepath.Base(p), st.Size())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m, err := ReadLastAssistant(p, MainChain)
		if err != nil || m.Text == "" {
			b.Fatal(err, m)
		}
	}
}

func BenchmarkReadLastAssistantSynthetic200MB(b *testing.B) {
	p := writeSynthetic(b, b.TempDir(), 200<<20, true)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := ReadLastAssistant(p, MainChain)
		if err != nil || m.Text != "All done.\n\nAll 32 tests pass." {
			b.Fatal(err, m)
		}
		b.ReportMetric(float64(m.Scanned), "bytes-read/op")
	}
}

// The worst case: 200 MB with no main-chain assistant text at all, read
// to the start (an extraction anomaly).
func BenchmarkReadLastAssistantSynthetic200MBNoText(b *testing.B) {
	dir := b.TempDir()
	p := filepath.Join(dir, "notext.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pad := strings.Repeat("y", 10<<10)
	for n := 0; n < 200<<20; {
		k, _ := fmt.Fprintf(w, `{"type":"user","message":{"content":[{"type":"tool_result","content":"%s"}]}}`+"\n", pad)
		n += k
	}
	w.Flush()
	f.Close()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m, err := ReadLastAssistant(p, MainChain)
		if err != nil || m.Text != "" {
			b.Fatal(err)
		}
	}
}

func BenchmarkExtract(b *testing.B) {
	lex := mustLexicon(b)
	data, err := os.ReadFile(filepath.Join("..", "testdata", "gate", "labels.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	msg := string(data[:64<<10]) // 64 KiB of real message text (JSON-escaped)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		Extract(msg, lex)
	}
}

func BenchmarkGateStopStdin(b *testing.B) {
	m := &memLedger{}
	g := testGate(b, m)
	ev := stopEvent("Fixed the parser; all 14 tests pass. Pushed to main.")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		g.Stop(ev)
	}
}

func BenchmarkNew(b *testing.B) {
	h := testHome(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := New(h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGateStopTranscript runs a whole decision (claims found, no
// evidence, gate_decision appended to the in-memory ledger) with the
// message read from a transcript.
func BenchmarkGateStopTranscript(b *testing.B) {
	paths := map[string]string{"synthetic-200MB": writeSynthetic(b, b.TempDir(), 200<<20, true)}
	b.Run("largest-real", func(b *testing.B) { benchStop(b, largestReal(b)) })
	for name, p := range paths {
		b.Run(name, func(b *testing.B) { benchStop(b, p) })
	}
}

func benchStop(b *testing.B, path string) {
	m := &memLedger{}
	g := testGate(b, m)
	ev := stopEventTranscript(path)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if r := g.Stop(ev); len(r.Claims) == 0 {
			b.Fatal("no claims found")
		}
	}
}
