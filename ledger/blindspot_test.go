package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func appendTo(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// Garbage appended to a ledger is sealed by the next append, and the seal
// is a finding: verify fails unless seals are accepted.
func TestSealedGarbageIsAFinding(t *testing.T) {
	for _, garbage := range []string{
		"garbage\n",
		`{"v":1,"seq":3,"session":"s1","kind":"validator_pass"}` + "\n",
		"no newline at all",
	} {
		l := newTestLedger(t)
		appendN(t, l, "s1", 3)
		appendTo(t, l.home.LedgerPath("s1"), garbage)
		appendN(t, l, "s1", 1)
		rep, err := Verify(l.home, "s1", verifyOpts(l))
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK || rep.Failure == nil || rep.Failure.Seq != 3 || !strings.Contains(rep.Failure.Reason, "sealed") {
			t.Fatalf("verify after sealed %q = ok %v, %+v", garbage, rep.OK, rep.Failure)
		}
		if len(rep.Sealed) != 1 || rep.Sealed[0].Length != int64(len(garbage)) {
			t.Fatalf("sealed = %+v", rep.Sealed)
		}
		opts := verifyOpts(l)
		opts.AcceptSealed = true
		if rep, _ := Verify(l.home, "s1", opts); !rep.OK {
			t.Fatalf("verify --accept-sealed = %+v", rep.Failure)
		}
		// The gate still works after a crash's torn tail was sealed.
		if es, err := l.ReadVerified("s1"); err != nil || len(es) != 5 {
			t.Fatalf("read verified: %d entries, %v", len(es), err)
		}
	}
}

// Bytes appended to the pack are reported; the next append seals them in
// place and verify reports the seal.
func TestUnaccountedPackBytes(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 3)
	pack := filepath.Join(l.home.SessionArtifactsDir("s1"), PackName)
	appendTo(t, pack, "hidden payload")
	rep, err := Verify(l.home, "s1", verifyOpts(l))
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || !strings.Contains(rep.Failure.Reason, "14 bytes at offset") {
		t.Fatalf("verify with extra pack bytes = ok %v, %+v", rep.OK, rep.Failure)
	}
	// Without artifacts the gate would miss nothing it relies on, but it
	// must not read a half-written bundle as evidence either: the
	// bytes are reported there too.
	if _, err := l.ReadVerified("s1"); err == nil {
		t.Fatal("read verified accepted unaccounted pack bytes")
	}
	appendN(t, l, "s1", 1)
	rep, _ = Verify(l.home, "s1", verifyOpts(l))
	if rep.OK || len(rep.Sealed) != 1 || rep.Sealed[0].PackLength != 14 {
		t.Fatalf("after the next append: ok %v, sealed %+v, failure %+v", rep.OK, rep.Sealed, rep.Failure)
	}
	es, err := l.ReadVerified("s1")
	if err != nil || len(es) != 5 || es[3].Kind != KindSeal {
		t.Fatalf("read verified: %d entries, %v", len(es), err)
	}
	r, err := l.OpenArtifact(es[3], "torn-pack")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 64)
	n, _ := r.Read(b)
	r.Close()
	if string(b[:n]) != "hidden payload" {
		t.Fatalf("torn-pack = %q", b[:n])
	}
}

// Bytes inserted in the pack between two bundles are reported at the
// entry whose bundle follows them.
func TestPackGapIsReported(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 2)
	pack := filepath.Join(l.home.SessionArtifactsDir("s1"), PackName)
	appendTo(t, pack, "gap")
	// Forge a head that covers the gap, as a writer without the check
	// would have: append under a ledger that ignores the pack end.
	sf := filesFor(l.home, "s1")
	c, _, err := readHead(sf.head, l.keys.headVerifiers())
	if err != nil {
		t.Fatal(err)
	}
	c.Pack = -1 // a head from before the pack end was recorded
	msg, _ := signCheckpoint(c, newHeadMAC(l.keys.hmacKey))
	if err := writeHeadSlot(sf.head, c.Size, msg); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, "s1", 1)
	rep, _ := Verify(l.home, "s1", verifyOpts(l))
	if rep.OK || rep.Failure.Seq != 2 || !strings.Contains(rep.Failure.Reason, "3 bytes at offset") {
		t.Fatalf("verify = ok %v, %+v", rep.OK, rep.Failure)
	}
}

// A crash can make a line durable before its bundle: the next append must
// not adopt an entry whose bundle is missing, but seal it.
func TestLineWithoutBundleIsSealed(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 2)
	sf := filesFor(l.home, "s1")
	oldHead, _ := os.ReadFile(sf.head)
	pack := filepath.Join(l.home.SessionArtifactsDir("s1"), PackName)
	st, _ := os.Stat(pack)
	appendN(t, l, "s1", 1)
	os.WriteFile(sf.head, oldHead, 0o600)
	os.Truncate(pack, st.Size()) // the bundle never reached the disk
	appendN(t, l, "s1", 1)
	opts := verifyOpts(l)
	opts.AcceptSealed = true
	rep, _ := Verify(l.home, "s1", opts)
	if !rep.OK || rep.Entries != 4 || len(rep.Sealed) != 1 || rep.Sealed[0].Seq != 2 {
		t.Fatalf("verify = ok %v, %d entries, sealed %+v, %+v", rep.OK, rep.Entries, rep.Sealed, rep.Failure)
	}
}
