package ledger

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// Settle covers what a killed writer left past the head, as the next
// append would, and appends nothing of its own: verify passes right
// after, every answered entry is there, adopted (not sealed).
func TestSettleAdoptsWhatACrashLeft(t *testing.T) {
	l, other, g := groupLedger(t)
	appendN(t, l, "s1", 3)
	appendN(t, l, "s2", 2)
	g.Flush()
	crashBeforeHead(t, l, g, "s1", 4)
	for s, want := range map[string]bool{"s1": true, "s2": false, "s3": false} {
		if got, err := other.Behind(s); err != nil || got != want {
			t.Fatalf("Behind(%s) = %v, %v; want %v", s, got, err, want)
		}
	}
	settled, err := other.SettleAll()
	if err != nil || len(settled) != 1 || settled[0] != "s1" {
		t.Fatalf("SettleAll = %v, %v; want [s1]", settled, err)
	}
	verifyOK(t, other, "s1", 7)
	es, err := other.ReadVerified("s1")
	if err != nil || len(es) != 7 {
		t.Fatalf("after settling: %d entries, %v", len(es), err)
	}
	for _, e := range es {
		if e.Kind != KindToolCall {
			t.Fatalf("entry %d is %s: settling appends nothing, and adopts what is valid", e.Seq, e.Kind)
		}
	}
	if behind, _ := other.Behind("s1"); behind {
		t.Fatal("still behind after settling")
	}
	// settled already: a second settle changes no byte
	before := ledgerBytes(t, other, "s1")
	if err := other.Settle("s1"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, ledgerBytes(t, other, "s1")) {
		t.Fatal("settling a settled ledger changed it")
	}
}

// What an attacker (or a torn write) puts past the head is not adopted:
// a line that does not check out is sealed, its bytes kept, exactly as
// the next append would.
func TestSettleSealsAForgedTail(t *testing.T) {
	_, other, g := groupLedger(t)
	appendN(t, other, "s1", 2)
	g.Flush()
	path := other.home.LedgerPath("s1")
	lines := bytes.SplitAfter(ledgerBytes(t, other, "s1"), []byte("\n"))
	forged := bytes.Replace(lines[1], []byte(`"seq":1`), []byte(`"seq":2`), 1)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(forged)
	f.Close()
	if behind, err := other.Behind("s1"); err != nil || !behind {
		t.Fatalf("Behind = %v, %v after a line past the head", behind, err)
	}
	if err := other.Settle("s1"); err != nil {
		t.Fatal(err)
	}
	es, err := other.ReadVerified("s1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(es); n != 3 || es[2].Kind != KindSeal {
		t.Fatalf("after settling a forged tail: %d entries, last %s; want the 2 and a seal", n, es[n-1].Kind)
	}
	rep, _ := Verify(other.home, "s1", verifyOpts(other))
	if rep.OK || !strings.Contains(rep.Failure.Reason, "seal") {
		t.Fatalf("verify without accepting seals = %+v; the seal must show", rep)
	}
}

// A writer killed after it wrote an entry's bundle and before its line
// leaves bytes in the pack that no entry accounts for, and the ledger
// itself no longer than its head. That session is behind too: settling
// it seals the bundle (a seal entry keeps the count of its bytes), as
// the next append would, and verify accepting seals passes before
// anything else is appended.
func TestSettleSealsAnOrphanBundle(t *testing.T) {
	_, other, g := groupLedger(t)
	appendN(t, other, "s1", 2)
	g.Flush()
	pack := other.home.SessionArtifactsDir("s1") + "/" + PackName
	f, err := os.OpenFile(pack, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("a bundle whose line was never written\n"))
	f.Close()
	if behind, err := other.Behind("s1"); err != nil || !behind {
		t.Fatalf("Behind = %v, %v with an orphan bundle in the pack", behind, err)
	}
	settled, err := other.SettleAll()
	if err != nil || len(settled) != 1 {
		t.Fatalf("SettleAll = %v, %v", settled, err)
	}
	es, err := other.ReadVerified("s1")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(es); n != 3 || es[2].Kind != KindSeal {
		t.Fatalf("after settling: %d entries, last %s; want the 2 and a seal", n, es[n-1].Kind)
	}
	opts := verifyOpts(other)
	opts.AcceptSealed = true
	if rep, err := Verify(other.home, "s1", opts); err != nil || !rep.OK {
		t.Fatalf("verify accepting seals: %v %+v", err, rep.Failure)
	}
	if behind, _ := other.Behind("s1"); behind {
		t.Fatal("still behind after settling")
	}
}

func ledgerBytes(t *testing.T, l *Ledger, session string) []byte {
	t.Helper()
	var all []byte
	for _, p := range []string{l.home.LedgerPath(session), strings.TrimSuffix(l.home.LedgerPath(session), ".jsonl") + ".head"} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	return all
}

// BenchmarkSettleAllNothingBehind is what `docket serve` pays at start
// per session when no ledger is behind: a stat and a head read.
func BenchmarkSettleAllNothingBehind(b *testing.B) {
	l := newTestLedger(b)
	const sessions = 200
	for i := 0; i < sessions; i++ {
		appendN(b, l, fmt.Sprintf("s%d", i), 1)
	}
	b.ResetTimer()
	for b.Loop() {
		if settled, err := l.SettleAll(); err != nil || len(settled) != 0 {
			b.Fatal(settled, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/sessions, "µs/session")
}
