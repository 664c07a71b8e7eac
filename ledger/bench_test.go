package ledger

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkAppend compares one append (with its artifact, fsync, tree
// update, signed head and verified-prefix state) on an empty ledger and
// on one of 100,000 entries: the cost must not grow with the ledger's
// length. The nosync runs leave out the fsyncs, which dominate and vary
// with the disk, so the rest of the work shows.
//
//	go test -run=NONE -bench=BenchmarkAppend -benchtime=2000x ./ledger
func BenchmarkAppend(b *testing.B) {
	for _, size := range []struct {
		name   string
		n      int
		noSync bool
	}{{"empty", 0, false}, {"100k", 100_000, false}, {"empty/nosync", 0, true}, {"100k/nosync", 100_000, true}} {
		b.Run(size.name, func(b *testing.B) {
			l := newTestLedger(b)
			l.testingOnlyNoSync = true
			for i := 0; i < size.n; i++ {
				if _, err := l.Append("s1", Record{Kind: KindToolCall, Tool: "Bash", Body: map[string]any{"i": i}}); err != nil {
					b.Fatal(err)
				}
			}
			l.testingOnlyNoSync = size.noSync
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

// BenchmarkRead is one stop's read of the ledger at 10, 10,000 and
// 100,000 entries built by appends alone. "cold-once" is the first read
// after the build (no reader ran in between), timed once, with the number
// of entries it verified in full,
// then each iteration appends (not timed) and reads: ReadRelevant is the
// gate's read (the indexed entries and the tail after the newest pass),
// ReadVerified returns every entry; "after100" reads after 100 appends,
// the last a validator pass so that the tail the gate reads stays short.
// Appends advance the verified-prefix state, so no read verifies more
// than what an append could not vouch for; ReadVerified still parses and
// hashes the whole prefix, ReadRelevant does not touch it.
//
//	go test -run=NONE -bench=BenchmarkRead -benchtime=20x ./ledger
func BenchmarkRead(b *testing.B) {
	for _, n := range []int{10, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			l := benchSession(b, n)
			start := time.Now()
			if _, err := l.ReadRelevant("s1", pass); err != nil { // cold: no reader ran yet
				b.Fatal(err)
			}
			cold, verified := time.Since(start), l.testingOnlyVerifiedEntries
			// One measurement, reported as its own line.
			b.Run("ReadRelevant/cold-once", func(b *testing.B) {
				b.ReportMetric(float64(cold.Nanoseconds()), "ns/op")
				b.ReportMetric(float64(verified), "verified-entries")
			})
			for _, read := range []struct {
				name    string
				appends int
				fn      func() error
			}{
				{"ReadRelevant", 1, func() error { _, err := l.ReadRelevant("s1", pass); return err }},
				{"ReadRelevant/after100", 100, func() error { _, err := l.ReadRelevant("s1", pass); return err }},
				{"ReadVerified", 1, func() error { _, err := l.ReadVerified("s1"); return err }},
			} {
				b.Run(read.name, func(b *testing.B) {
					full := l.testingOnlyFullReads
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						appendN(b, l, "s1", read.appends-1)
						if read.appends > 1 { // ends with a pass: the gate's tail stays short
							appendPass(b, l)
						} else {
							appendN(b, l, "s1", 1)
						}
						b.StartTimer()
						if err := read.fn(); err != nil {
							b.Fatal(err)
						}
					}
					if l.testingOnlyFullReads != full {
						b.Fatal("a read verified the whole ledger")
					}
				})
			}
		})
	}
}

// BenchmarkAppendState is the verified-prefix state's share of one
// append, alone: read and MAC-check the state, extend it with one line,
// rewrite it. indexed is the number of index lines the state carries
// (validator results and seals so far), the only part that grows.
//
//	go test -run=NONE -bench=BenchmarkAppendState ./ledger
func BenchmarkAppendState(b *testing.B) {
	for _, indexed := range []int{1, 100, 1000} {
		b.Run(fmt.Sprint(indexed), func(b *testing.B) {
			l := newTestLedger(b)
			l.testingOnlyNoSync = true
			for i := 0; i < indexed; i++ {
				if _, err := l.Append("s1", Record{Kind: KindValidatorPass, Runtime: "docket", Body: map[string]any{"i": i}}); err != nil {
					b.Fatal(err)
				}
			}
			sf := filesFor(l.home, "s1")
			st, err := l.readState(sf, "s1")
			if err != nil || len(st.Index) != indexed {
				b.Fatalf("state: %v", err)
			}
			line := []byte(`{"v":1,"seq":0,"session":"s1","kind":"tool_call","runtime":"claude","tool":"Bash","body":{"cwd":"/work","failed":false},"prev":"","hash":"","key_id":"","mac":""}`)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st, err := l.readState(sf, "s1")
				if err != nil {
					b.Fatal(err)
				}
				w := &writer{l: l, sf: sf, session: "s1", n: st.Size, end: st.End, last: st.Last, packEnd: st.Pack}
				w.startState(st)
				if w.st == nil {
					b.Fatal("state not adopted")
				}
				w.extendState(line, &Entry{Kind: KindToolCall})
				w.n, w.end = w.n+1, w.end+int64(len(line))+1 // as write does
				w.saveState()
			}
		})
	}
}

func appendPass(b *testing.B, l *Ledger) {
	if _, err := l.Append("s1", Record{Kind: KindValidatorPass, Runtime: "docket", Tool: "go_test_pass", Body: map[string]any{"claim": "done", "result": "pass"}}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReadRelevantStops is the gate's read at a stop as a session
// grows and accumulates stops: ledgers of 10, 10,000 and 100,000 tool
// calls with a pass 5 entries from the end, then with 1,000 gate
// decisions (one per stop, the main agent's and a few subagents') after
// that pass. Each read must cost about the same.
//
//	go test -run=NONE -bench=BenchmarkReadRelevantStops ./ledger
func BenchmarkReadRelevantStops(b *testing.B) {
	for _, n := range []int{10, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchStops(b, n) })
	}
}

// benchSession is a ledger whose session s1 holds n shell calls, the
// fifth from the end a validator pass.
func benchSession(b *testing.B, n int) *Ledger {
	l := newTestLedger(b)
	l.testingOnlyNoSync = true
	for i := 0; i < n; i++ {
		r := Record{Kind: KindToolCall, Runtime: "claude", Event: "PostToolUse", Tool: "Bash",
			Args:      json.RawMessage(`{"command":"go test ./..."}`),
			Body:      map[string]any{"cwd": "/work", "failed": false},
			Artifacts: []Artifact{{Name: "stdout", Data: strings.NewReader("ok  ./... 0.2s\n")}}}
		if i == n-5 {
			r = Record{Kind: KindValidatorPass, Runtime: "docket", Tool: "go_test_pass", Body: map[string]any{"claim": "done", "result": "pass"}}
		}
		if _, err := l.Append("s1", r); err != nil {
			b.Fatal(err)
		}
	}
	return l
}

// pass is the relevant-read cut at the last validator pass (else the
// last entry).
func pass(es []*Entry) uint64 {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Kind == KindValidatorPass {
			return es[i].Seq
		}
	}
	return es[len(es)-1].Seq
}

func benchStops(b *testing.B, n int) {
	{
		l := benchSession(b, n)
		for _, stops := range []int{0, 1000} {
			for i := 0; i < stops; i++ {
				agent := ""
				if i%50 == 0 {
					agent = fmt.Sprintf("agent%d", i%7)
				}
				appendGate(b, l, "s1", map[bool]string{true: "Stop", false: "SubagentStop"}[agent == ""], agent)
			}
			b.Run(fmt.Sprintf("stops=%d", stops), func(b *testing.B) {
				full := l.testingOnlyFullReads
				for i := 0; i < b.N; i++ {
					es, err := l.ReadRelevant("s1", pass)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(float64(len(es)), "entries")
				}
				if l.testingOnlyFullReads != full {
					b.Fatal("a read verified the whole ledger")
				}
			})
		}
	}
}
