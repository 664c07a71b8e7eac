package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// groupLedger is a ledger whose appends are group-committed, and a
// plain ledger on the same state root: another process (docket verify,
// a same-user hook), with lock file descriptions of its own.
func groupLedger(t *testing.T) (*Ledger, *Ledger, *GroupCommit) {
	t.Helper()
	l := newTestLedger(t)
	l.now = time.Now // the test clock is not for concurrent appends
	g := NewGroupCommit(t.Logf)
	t.Cleanup(func() { g.Close() })
	l.SetGroupCommit(g)
	other, err := Open(l.home)
	if err != nil {
		t.Fatal(err)
	}
	return l, other, g
}

func headOf(t *testing.T, l *Ledger, session string) *Checkpoint {
	t.Helper()
	c, _, err := readHead(filesFor(l.home, session).head, l.keys.headVerifiers())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func verifyOK(t *testing.T, l *Ledger, session string, want int64) {
	t.Helper()
	opts := verifyOpts(l)
	rep, err := Verify(l.home, session, opts)
	if err != nil || !rep.OK || rep.Entries != want {
		t.Fatalf("verify %s: %v, %+v, %d entries, want %d", session, err, rep.Failure, rep.Entries, want)
	}
}

// blockHeads makes the committer stop after its syncs, before it writes
// the heads, until the returned function is called.
func blockHeads(t *testing.T, g *GroupCommit) (reached <-chan struct{}, release func()) {
	r := make(chan struct{}, 100)
	rel := make(chan struct{})
	g.mu.Lock()
	g.testingOnlyBeforeHead = func() {
		r <- struct{}{}
		<-rel
	}
	g.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(rel) }) }
	t.Cleanup(release) // before the committer is closed
	return r, release
}

// Appends return before their head is written; Flush commits them; the
// ledgers verify and the heads cover every entry.
func TestGroupCommitAppendsVerify(t *testing.T) {
	l, _, g := groupLedger(t)
	var wg sync.WaitGroup
	for _, s := range []string{"a", "b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			appendN(t, l, s, 20)
		}()
	}
	wg.Wait()
	g.Flush()
	for _, s := range []string{"a", "b", "c"} {
		verifyOK(t, l, s, 20)
		if c := headOf(t, l, s); c.Size != 20 {
			t.Fatalf("%s: head covers %d entries, want 20", s, c.Size)
		}
		es, err := l.ReadVerified(s)
		if err != nil || len(es) != 20 {
			t.Fatalf("%s: read %d entries, %v", s, len(es), err)
		}
	}
}

// The head is written only after the entry is synced, and a reader
// outside the process meanwhile waits for it instead of seeing an entry
// past the head: it then reads a ledger whose head covers everything.
func TestGroupCommitReaderWaitsForHead(t *testing.T) {
	l, other, g := groupLedger(t)
	appendN(t, l, "s1", 2)
	g.Flush()
	reached, release := blockHeads(t, g)
	defer release()
	appendN(t, l, "s1", 1) // answered; the committer is held before the head
	<-reached
	if c := headOf(t, l, "s1"); c.Size != 2 {
		t.Fatalf("head covers %d entries before the commit, want 2", c.Size)
	}
	type result struct {
		es  []*Entry
		err error
	}
	read := make(chan result, 1)
	go func() {
		es, err := other.ReadVerified("s1")
		read <- result{es, err}
	}()
	verified := make(chan *Report, 1)
	go func() {
		rep, _ := Verify(other.home, "s1", verifyOpts(other))
		verified <- rep
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case r := <-read:
		t.Fatalf("a reader did not wait for the commit: %d entries, %v", len(r.es), r.err)
	case rep := <-verified:
		t.Fatalf("verify did not wait for the commit: %+v", rep)
	default:
	}
	release()
	r := <-read
	if r.err != nil || len(r.es) != 3 {
		t.Fatalf("read after the commit: %d entries, %v", len(r.es), r.err)
	}
	if rep := <-verified; !rep.OK || rep.Entries != 3 {
		t.Fatalf("verify after the commit: %+v", rep.Failure)
	}
}

// Appends of the process go on while the committer syncs: they neither
// wait for it nor lose their entries, and the next round commits them.
func TestGroupCommitAppendsDuringSync(t *testing.T) {
	l, _, g := groupLedger(t)
	appendN(t, l, "s1", 1)
	reached, release := blockHeads(t, g)
	appendN(t, l, "s1", 1)
	<-reached
	done := make(chan struct{})
	go func() {
		appendN(t, l, "s1", 5)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an append waited for the committer")
	}
	release()
	g.Flush()
	verifyOK(t, l, "s1", 7)
	if c := headOf(t, l, "s1"); c.Size != 7 {
		t.Fatalf("head covers %d entries, want 7", c.Size)
	}
}

// Another process appending to the same session (a same-user hook that
// runs without the daemon) interleaves safely with group-committed
// appends: nothing is lost, duplicated or sealed.
func TestGroupCommitConcurrentOutsideAppends(t *testing.T) {
	l, other, g := groupLedger(t)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for w, lw := range []*Ledger{l, l, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				if _, err := lw.Append("s1", Record{Kind: KindToolCall, Tool: "Bash",
					Body:      map[string]any{"writer": w, "i": i},
					Artifacts: []Artifact{{Name: "stdout", Data: strings.NewReader(fmt.Sprint(w, i))}}}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	g.Flush()
	verifyOK(t, other, "s1", 45)
	es, err := other.ReadVerified("s1")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range es {
		if e.Kind != KindToolCall || seen[string(e.Body)] {
			t.Fatalf("entry %d: %s %s", e.Seq, e.Kind, e.Body)
		}
		seen[string(e.Body)] = true
	}
}

// A kill -9 between the answer and the commit loses nothing answered:
// the entries are in the page cache, and the next append of any process
// adopts them (not seals them) and writes the head.
func TestGroupCommitCrashBeforeHead(t *testing.T) {
	l, other, g := groupLedger(t)
	appendN(t, l, "s1", 3)
	g.Flush()
	crashBeforeHead(t, l, g, "s1", 4)
	if c := headOf(t, l, "s1"); c.Size != 3 {
		t.Fatalf("head covers %d entries after the crash, want 3", c.Size)
	}
	// until an append, verify says the head is behind: the crash window
	rep, _ := Verify(other.home, "s1", verifyOpts(other))
	if rep.OK || !strings.Contains(rep.Failure.Reason, "head behind") {
		t.Fatalf("verify after the crash = %+v", rep)
	}
	appendN(t, other, "s1", 1)
	es, err := other.ReadVerified("s1")
	if err != nil || len(es) != 8 {
		t.Fatalf("after recovery: %d entries, %v", len(es), err)
	}
	for _, e := range es {
		if e.Kind != KindToolCall {
			t.Fatalf("entry %d is %s: an answered entry must be adopted", e.Seq, e.Kind)
		}
	}
	verifyOK(t, other, "s1", 8)
}

// crashBeforeHead appends n entries to session through the group-commit
// ledger l and kills its committer after they are written and before
// their head is: what kill -9 of the daemon amid a round leaves.
func crashBeforeHead(t *testing.T, l *Ledger, g *GroupCommit, session string, n int) {
	t.Helper()
	reached, release := blockHeads(t, g)
	defer release()
	appendN(t, l, session, n)
	<-reached
	g.testingOnlyCrash()
}

// A power loss loses at most the round not yet synced. With none of it
// on disk the ledger verifies and ends at its head; with a line on disk
// but not its bundle, the next append seals the line.
func TestGroupCommitPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(t *testing.T, sf sessionFiles, c *Checkpoint)
		want int64 // entries verify sees before the next append
	}{
		{"nothing of the round on disk", func(t *testing.T, sf sessionFiles, c *Checkpoint) {
			truncate(t, sf.ledger, c.End)
			truncate(t, filepath.Join(sf.artifacts, PackName), c.Pack)
		}, 3},
		{"the lines but not the bundles", func(t *testing.T, sf sessionFiles, c *Checkpoint) {
			truncate(t, filepath.Join(sf.artifacts, PackName), c.Pack)
		}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, other, g := groupLedger(t)
			appendN(t, l, "s1", 3)
			g.Flush()
			reached, release := blockHeads(t, g)
			defer release()
			appendN(t, l, "s1", 2)
			<-reached
			g.testingOnlyCrash()
			release()
			sf := filesFor(l.home, "s1")
			tc.lose(t, sf, headOf(t, l, "s1"))
			if tc.want >= 0 {
				verifyOK(t, other, "s1", tc.want)
			}
			appendN(t, other, "s1", 1)
			opts := verifyOpts(other)
			opts.AcceptSealed = true
			rep, err := Verify(other.home, "s1", opts)
			if err != nil || !rep.OK {
				t.Fatalf("verify after the next append: %v %+v", err, rep.Failure)
			}
			if tc.want < 0 && (len(rep.Sealed) != 1 || rep.Sealed[0].Seq != 3) {
				t.Fatalf("lines without their bundles: sealed %+v (seq %d)", rep.Sealed, rep.Sealed[0].Seq)
			}
		})
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// Close syncs and commits everything and lets other processes in at
// once; appends after it are synchronous.
func TestGroupCommitClose(t *testing.T) {
	l, other, g := groupLedger(t)
	appendN(t, l, "s1", 1)
	reached, release := blockHeads(t, g)
	appendN(t, l, "s1", 1)
	<-reached
	release()
	appendN(t, l, "s1", 2)
	g.Close()
	if c := headOf(t, l, "s1"); c.Size != 4 {
		t.Fatalf("head covers %d entries after Close, want 4", c.Size)
	}
	unlock, err := lockFile(filesFor(l.home, "s1").lock, 10*time.Millisecond)
	if err != nil {
		t.Fatalf("the session lock is still held after Close: %v", err)
	}
	unlock()
	appendN(t, l, "s1", 1)
	if c := headOf(t, l, "s1"); c.Size != 5 {
		t.Fatalf("an append after Close left the head at %d, want 5", c.Size)
	}
	verifyOK(t, other, "s1", 5)
}

// An edit of the files while a round is pending (outside any lock, so
// only a same-user attacker) is not resumed over: the append recovers
// as usual, sealing what it cannot account for.
func TestGroupCommitEditWhilePending(t *testing.T) {
	l, other, g := groupLedger(t)
	appendN(t, l, "s1", 1)
	reached, release := blockHeads(t, g)
	appendN(t, l, "s1", 2)
	<-reached
	appendTo(t, l.home.LedgerPath("s1"), `{"v":1,"garbage`)
	appendN(t, l, "s1", 1)
	release()
	g.Flush()
	opts := verifyOpts(other)
	opts.AcceptSealed = true
	rep, err := Verify(other.home, "s1", opts)
	if err != nil || !rep.OK || rep.Entries != 5 || len(rep.Sealed) != 1 || rep.Sealed[0].Seq != 3 {
		t.Fatalf("verify: %v ok=%v entries=%d sealed=%+v %+v", err, rep.OK, rep.Entries, rep.Sealed, rep.Failure)
	}
}

// The first entry of a ledger is committed before its append returns: a
// ledger with entries and no head is one whose head was deleted, so a
// crash must never leave one.
func TestGroupCommitFirstEntryIsCommitted(t *testing.T) {
	l, other, g := groupLedger(t)
	_, release := blockHeads(t, g)
	defer release()
	appendN(t, l, "new", 1)
	if c := headOf(t, l, "new"); c.Size != 1 {
		t.Fatalf("head covers %d entries after the first append, want 1", c.Size)
	}
	g.testingOnlyCrash()
	appendN(t, other, "new", 1)
	verifyOK(t, other, "new", 2)
}

// Under load (rounds committing while appends come and go, sessions
// dropped from the committer's map and taken up again), a reader outside
// the process never sees an entry past the head.
func TestGroupCommitReaderNeverSeesUncommitted(t *testing.T) {
	l, other, g := groupLedger(t)
	appendN(t, l, "s1", 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				g.Flush()
			}
		}
	}()
	readErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := other.ReadVerified("s1"); err != nil {
				readErr <- err
				return
			}
		}
	}()
	var writers sync.WaitGroup
	for w := 0; w < 3; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; i < 50; i++ {
				appendN(t, l, "s1", 1)
				if i%3 == w {
					time.Sleep(time.Duration(i%7) * 100 * time.Microsecond)
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	select {
	case err := <-readErr:
		t.Fatalf("a reader saw the ledger between an append and its commit: %v", err)
	default:
	}
	g.Flush()
	verifyOK(t, other, "s1", 151)
}

// After a commit lets other processes in, the next append resumes from
// memory only if nobody wrote meanwhile: an append by another process,
// or an edit that keeps the size and puts the mtime back, makes it
// recover from the files.
func TestGroupCommitResumeAfterOthers(t *testing.T) {
	l, other, g := groupLedger(t)
	appendN(t, l, "s1", 2)
	g.Flush()
	appendN(t, other, "s1", 1)
	appendN(t, l, "s1", 1)
	g.Flush()
	verifyOK(t, other, "s1", 4)

	// a same-size rewrite of the vstate with its mtime put back: the
	// state the next append extends must be the files', not memory's
	sf := filesFor(l.home, "s1")
	appendN(t, other, "s1", 1) // other's own state now
	g.Flush()
	appendN(t, l, "s1", 1)
	g.Flush()
	st, err := os.Stat(sf.head)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(sf.head)
	if err := os.WriteFile(sf.head, b, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(sf.head, st.ModTime(), st.ModTime())
	s := g.held(sf)
	if s == nil {
		t.Fatal("no state kept after the commit")
	}
	s.lock(time.Hour)
	kept, ident := s.resume, s.ident
	s.unlockMu()
	if kept == nil {
		t.Fatal("no state kept after the commit")
	}
	if id := filesIdentity(sf); id != "" && id == ident {
		t.Fatal("a rewrite with the mtime put back kept the files' identity")
	}
	appendN(t, l, "s1", 1)
	g.Flush()
	verifyOK(t, other, "s1", 7)
	es, err := other.ReadVerified("s1")
	if err != nil || len(es) != 7 {
		t.Fatalf("read: %d entries, %v", len(es), err)
	}
}

// Consecutive appends with commits between them resume from memory
// (no recovery from the files), and the ledger verifies.
func TestGroupCommitResumesAcrossCommits(t *testing.T) {
	l, other, g := groupLedger(t)
	appendN(t, l, "s1", 1)
	for i := 0; i < 5; i++ {
		appendN(t, l, "s1", 1)
		g.Flush()
		s := g.held(filesFor(l.home, "s1"))
		s.lock(time.Hour)
		kept := s.resume != nil && s.ident != ""
		s.unlockMu()
		if filesIdentity(s.sf) != "" && !kept {
			t.Fatalf("append %d: no state kept for the next append", i)
		}
	}
	verifyOK(t, other, "s1", 6)
}

// A session whose entries carry no artifacts (a judge's decisions) has
// no pack; its appends resume from memory all the same. They recovered
// from the files every time, and while a commit was pending that meant
// rebuilding the whole tree: each append cost as much as the session
// was long.
func TestGroupCommitResumesWithoutPack(t *testing.T) {
	l, other, g := groupLedger(t)
	sf := filesFor(l.home, "s1")
	for i := 0; i < 6; i++ {
		if _, err := l.Append("s1", Record{Kind: KindJudgeDecision, Runtime: "claude", Event: "PreToolUse", Tool: "Bash",
			Body: map[string]any{"outcome": "allow", "i": i}}); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			continue // the first entry is committed at once, and its state kept by the commit
		}
		unlock, err := l.lockSession(sf)
		if err != nil {
			t.Fatal(err)
		}
		w, err := l.openWriter(sf, "s1")
		if err != nil {
			t.Fatal(err)
		}
		resumed := w.resume()
		w.close()
		unlock()
		if !resumed {
			t.Fatalf("append %d: the next append would recover from the files", i)
		}
	}
	if _, err := os.Stat(filepath.Join(sf.artifacts, PackName)); !os.IsNotExist(err) {
		t.Fatalf("the session has a pack (%v): the test no longer tests a session without one", err)
	}
	g.Flush()
	verifyOK(t, other, "s1", 6)
}
