package ledger

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
)

// TestMerkleVectors checks the tree the ledger builds (tlog) against the
// published RFC 6962 vectors of transparency-dev/merkle.
func TestMerkleVectors(t *testing.T) {
	leaves := testonly.LeafInputs()
	roots := testonly.RootHashes() // roots[i] is the root of the first i leaves
	var m memTree
	for i, leaf := range leaves {
		if err := m.add(leaf); err != nil {
			t.Fatal(err)
		}
		got, err := m.root(int64(i + 1))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got[:], roots[i+1]) {
			t.Fatalf("root of %d leaves = %x, want %x", i+1, got[:], roots[i+1])
		}
	}
}

func TestCheckpointConsistency(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 7)
	kept, _, err := CurrentCheckpoint(l.home, "s1", verifyOpts(l))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, l, "s1", 6)
	opts := verifyOpts(l)
	opts.Checkpoint = kept
	if rep, err := Verify(l.home, "s1", opts); err != nil || !rep.OK {
		t.Fatalf("ledger that extends the checkpoint failed: %v %+v", err, rep.Failure)
	}

	// Rewrite history wholesale with the keys (an insider re-signing
	// everything): the head verifies, the kept checkpoint does not.
	lines := strings.Split(strings.TrimSpace(mustRead(t, l.home.LedgerPath("s1"))), "\n")
	os.Remove(l.home.LedgerPath("s1"))
	os.Remove(filesFor(l.home, "s1").head)
	os.Remove(filesFor(l.home, "s1").tree)
	for i := range lines {
		body := map[string]any{"cwd": "/work", "failed": i == 3}
		if _, err := l.Append("s1", Record{Kind: KindToolCall, Tool: "Bash", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Verify(l.home, "s1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || !strings.Contains(rep.Failure.Reason, "checkpoint inconsistent") {
		t.Fatalf("rewritten history passed the kept checkpoint: %+v", rep.Failure)
	}

	// Truncation below the checkpoint.
	l2 := newTestLedger(t)
	appendN(t, l2, "s1", 5)
	kept2, _, _ := CurrentCheckpoint(l2.home, "s1", verifyOpts(l2))
	os.Remove(l2.home.LedgerPath("s1"))
	os.Remove(filesFor(l2.home, "s1").head)
	os.Remove(filesFor(l2.home, "s1").tree)
	appendN(t, l2, "s1", 2)
	opts2 := verifyOpts(l2)
	opts2.Checkpoint = kept2
	rep, _ = Verify(l2.home, "s1", opts2)
	if rep.OK || !strings.Contains(rep.Failure.Reason, "truncated below the checkpoint") {
		t.Fatalf("truncation below checkpoint: %+v", rep.Failure)
	}

	// A checkpoint signed by another key.
	other := newTestLedger(t)
	appendN(t, other, "s1", 5)
	foreign, _, _ := CurrentCheckpoint(other.home, "s1", verifyOpts(other))
	opts.Checkpoint = foreign
	rep, _ = Verify(l.home, "s1", opts)
	if rep.OK || !strings.Contains(rep.Failure.Reason, "checkpoint signature invalid") {
		t.Fatalf("foreign checkpoint: %+v", rep.Failure)
	}
}

func TestInclusionProof(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 11)
	for _, seq := range []int64{0, 5, 10} {
		p, err := Prove(l.home, "s1", seq, verifyOpts(l))
		if err != nil {
			t.Fatal(err)
		}
		text := p.Marshal()
		e, c, err := CheckInclusion(text, l.keys.VerifierKey())
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		if int64(e.Seq) != seq || c.Size != 11 {
			t.Fatalf("proved seq %d of %d", e.Seq, c.Size)
		}
		// Cross-check with transparency-dev/merkle's verifier.
		var hashes [][]byte
		for _, h := range p.Hashes {
			hashes = append(hashes, append([]byte(nil), h[:]...))
		}
		leaf := rfc6962.DefaultHasher.HashLeaf(p.Entry)
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, uint64(seq), uint64(c.Size), leaf, hashes, c.Root[:]); err != nil {
			t.Fatalf("transparency-dev rejects proof for seq %d: %v", seq, err)
		}
		forged := bytes.Replace(text, []byte(`"tool":"Bash"`), []byte(`"tool":"Read"`), 1)
		if _, _, err := CheckInclusion(forged, l.keys.VerifierKey()); err == nil {
			t.Fatalf("forged entry in proof for seq %d accepted", seq)
		}
	}
	if _, err := Prove(l.home, "s1", 11, verifyOpts(l)); err == nil {
		t.Fatal("proof for a missing seq succeeded")
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
