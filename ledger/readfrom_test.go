package ledger

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// ReadFrom reads only what was appended after an offset: its cost does
// not grow with the ledger (it never reads the lines before off), and
// every entry it returns is chained to the verified head.
func TestReadFrom(t *testing.T) {
	setup := func(t *testing.T) (*Ledger, int64, sessionFiles) {
		l := newTestLedger(t)
		appendN(t, l, "s1", 40)
		sf := filesFor(l.home, "s1")
		fi, err := os.Stat(sf.ledger)
		if err != nil {
			t.Fatal(err)
		}
		appendN(t, l, "s1", 10)
		l.testingOnlyFullReads, l.testingOnlyVerifiedEntries = 0, 0
		return l, fi.Size(), sf
	}
	t.Run("the entries after off", func(t *testing.T) {
		l, off, _ := setup(t)
		es, err := l.ReadFrom("s1", off, 40)
		if err != nil || len(es) != 10 || es[0].Seq != 40 || es[9].Seq != 49 {
			t.Fatalf("ReadFrom = seqs %v, %v", seqs(es), err)
		}
		if l.testingOnlyFullReads != 0 {
			t.Errorf("%d full reads", l.testingOnlyFullReads)
		}
		// an offset before seq: the earlier entries are skipped
		if es, err := l.ReadFrom("s1", 0, 45); err != nil || len(es) != 5 || es[0].Seq != 45 {
			t.Fatalf("ReadFrom(0, 45) = seqs %v, %v", seqs(es), err)
		}
		// at the end: nothing new
		fi, _ := os.Stat(filesFor(l.home, "s1").ledger)
		if es, err := l.ReadFrom("s1", fi.Size(), 50); err != nil || len(es) != 0 || l.testingOnlyFullReads != 0 {
			t.Fatalf("ReadFrom(end) = seqs %v, %v, %d full reads", seqs(es), err, l.testingOnlyFullReads)
		}
	})
	t.Run("lines before off are not read", func(t *testing.T) {
		l, off, sf := setup(t)
		// spoil entry 3 (the next ReadVerified and docket verify catch it)
		spoil(t, sf, 3)
		if es, err := l.ReadFrom("s1", off, 40); err != nil || len(es) != 10 || l.testingOnlyFullReads != 0 {
			t.Fatalf("ReadFrom = seqs %v, %v, %d full reads", seqs(es), err, l.testingOnlyFullReads)
		}
		if _, err := l.ReadVerified("s1"); err == nil {
			t.Fatal("ReadVerified missed the edit")
		}
	})
	t.Run("an edited entry after off fails", func(t *testing.T) {
		l, off, sf := setup(t)
		spoil(t, sf, 44)
		var ve *VerifyError
		if _, err := l.ReadFrom("s1", off, 40); !errors.As(err, &ve) {
			t.Fatalf("ReadFrom of an edited ledger: %v", err)
		}
	})
	t.Run("a wrong offset falls back", func(t *testing.T) {
		l, off, _ := setup(t)
		for _, o := range []int64{off + 7, -1, 1 << 40} {
			es, err := l.ReadFrom("s1", o, 40)
			if err != nil || len(es) != 10 || es[0].Seq != 40 {
				t.Fatalf("ReadFrom(%d) = seqs %v, %v", o, seqs(es), err)
			}
		}
		if l.testingOnlyFullReads != 3 {
			t.Errorf("%d full reads, want 3", l.testingOnlyFullReads)
		}
	})
	t.Run("no ledger", func(t *testing.T) {
		l := newTestLedger(t)
		if es, err := l.ReadFrom("nope", 0, 0); err != nil || es != nil {
			t.Fatalf("%v %v", es, err)
		}
	})
}

// spoil changes one byte of entry seq's body in the ledger file.
func spoil(t *testing.T, sf sessionFiles, seq int) {
	t.Helper()
	b, err := os.ReadFile(sf.ledger)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	i := bytes.Index(lines[seq], []byte(`"/work"`))
	if i < 0 {
		t.Fatalf("entry %d has no cwd: %s", seq, lines[seq])
	}
	lines[seq][i+2] = 'W'
	if err := os.WriteFile(sf.ledger, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}
