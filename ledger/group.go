package ledger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Group commit: the sealed daemon's append mode (docket serve --socket).
//
// A plain append makes its entry durable before it returns: it writes
// the bundle and the line, fdatasyncs the pack and the ledger, and only
// then writes the signed head. In group-commit mode an append writes the
// bundle and the line with write(2) and returns; the entry is then in
// the page cache, so a kill -9 of the process loses nothing it answered.
// A committer goroutine then fdatasyncs every session written since its
// last round and only then writes each one's signed head. The head never
// covers a byte that is not on disk, exactly as before; what the mode
// gives up is the entries of the last round before a power loss (or a
// kernel crash), which were answered but not yet synced.
//
// The session's lock is the ordering between the two. The first append
// of a round takes the session's exclusive lock (its flock) and keeps it
// until the committer has written the head that covers it, so no other
// process — `docket verify`, a same-user hook appending without the
// daemon — ever sees entries past the head that are not durable: they
// wait (one fdatasync) and then see a ledger whose head covers
// everything. Inside the process the lock is a per-session mutex, held
// by one append at a time and by the committer only to write the head,
// not while it syncs. Appends of a session while its lock is held resume
// from the state the previous append left in memory instead of
// re-reading the head: nobody else can have written.
//
// After a crash of the process, the lines and bundles it wrote (in the
// page cache, or on disk) lie past the signed head; the next append,
// from any process, adopts every valid line whose bundle is intact,
// syncs them, and writes the head (recover, syncAdopted). After a power
// loss, the bytes of the last round may be partly on disk: the next
// append adopts what is whole and seals the rest (a seal entry keeps its
// bytes), and `docket verify` until then (or until Settle, settle.go)
// reports the head behind the ledger, or, with nothing of the round on
// disk, a ledger that verifies and simply ends earlier.

// GroupCommit is the committer of a group-commit ledger (see
// (*Ledger).SetGroupCommit). It is safe for concurrent use; Close syncs
// and commits everything still pending.
type GroupCommit struct {
	round    sync.Mutex // one round at a time
	mu       sync.Mutex
	sessions map[string]*groupSession // by ledger file path
	closed   bool
	wake     chan struct{}
	quit     chan struct{}
	done     chan struct{}
	log      func(format string, a ...any)

	// testingOnlyBeforeHead, when set, runs in the committer after a
	// round's syncs and before its heads are written.
	testingOnlyBeforeHead func()
	// commits counts the heads the committer wrote, for tests.
	commits int
	// crashed: testingOnlyCrash ran; nothing is committed any more.
	crashed bool
}

// groupSession is one session's state in a group-commit process.
type groupSession struct {
	sf sessionFiles
	// refs counts the appends holding or waiting for mu (guarded by
	// GroupCommit.mu): a session is dropped from the map only at zero,
	// so every append of a round finds the same state.
	refs int
	// mu is the in-process session lock: a 1-slot semaphore, so that a
	// waiter can give up after LockTimeout.
	mu chan struct{}

	// Guarded by mu.
	unlock  func()       // releases the held flock; nil when not held
	pending *pendingHead // the newest head written entries need; nil when committed
	// resume is the writer's state after the last append: valid while
	// the flock has been held since, or, after a commit released it,
	// while the files' identity is still ident (see lockSession).
	resume *resumeState
	ident  string
}

type pendingHead struct {
	n    int64
	msg  []byte
	keys *Keys // that signed msg
}

type resumeState struct {
	n, end, packEnd int64
	last            string
	st              *vstate
	sum             prefixDigest
}

// NewGroupCommit starts a committer. log reports commit failures (a
// failed fdatasync: the head is not written and the next append recovers
// the tail as after a crash); nil discards them.
func NewGroupCommit(log func(format string, a ...any)) *GroupCommit {
	if log == nil {
		log = func(string, ...any) {}
	}
	g := &GroupCommit{
		sessions: map[string]*groupSession{},
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		log:      log,
	}
	go g.run()
	return g
}

// SetGroupCommit makes l's appends group-committed by g. Several Ledgers
// (of one state root, or of several) may share one committer.
func (l *Ledger) SetGroupCommit(g *GroupCommit) { l.group = g }

// Close commits everything pending, releases the sessions' locks and
// stops the committer. Appends after Close are synchronous again.
func (g *GroupCommit) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.done
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	close(g.quit)
	<-g.done
	return nil
}

// Flush commits everything written so far and returns when it is
// durable and under a signed head.
func (g *GroupCommit) Flush() {
	g.commitRound()
}

func (g *GroupCommit) run() {
	defer close(g.done)
	for {
		select {
		case <-g.wake:
			g.commitRound()
		case <-g.quit:
			g.commitRound()
			return
		}
	}
}

func (g *GroupCommit) kick() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// session returns the state of the session whose files are sf, counted
// as in use until release.
func (g *GroupCommit) session(sf sessionFiles) *groupSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.sessions[sf.ledger]
	if s == nil {
		s = &groupSession{sf: sf, mu: make(chan struct{}, 1)}
		g.sessions[sf.ledger] = s
	}
	s.refs++
	return s
}

func (g *GroupCommit) release(s *groupSession) {
	g.mu.Lock()
	s.refs--
	g.mu.Unlock()
}

// held returns the state of a session an append holds (lockSession).
func (g *GroupCommit) held(sf sessionFiles) *groupSession {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessions[sf.ledger]
}

func (s *groupSession) lock(timeout time.Duration) bool {
	select {
	case s.mu <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case s.mu <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

func (s *groupSession) unlockMu() { <-s.mu }

// releaseFlock lets other processes in: nothing of this session is
// pending. The caller holds mu.
func (s *groupSession) releaseFlock() {
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
	s.resume, s.ident = nil, ""
}

// releaseCommitted lets other processes in after a commit, keeping the
// writer's state for the next append if the files are then still as the
// commit left them.
func (s *groupSession) releaseCommitted() {
	r := s.resume
	s.releaseFlock()
	if r != nil {
		if id := filesIdentity(s.sf); id != "" {
			s.resume, s.ident = r, id
		}
	}
}

// lockSession takes the session's exclusive lock for an append: the
// flock, or in group-commit mode the in-process lock and, unless a
// pending round already holds it, the flock, which then stays held until
// the round is committed.
func (l *Ledger) lockSession(sf sessionFiles) (func(), error) {
	g := l.group
	if g == nil {
		return lockFile(sf.lock, LockTimeout)
	}
	s := g.session(sf)
	if !s.lock(LockTimeout) {
		g.release(s)
		return nil, errLockTimeout
	}
	if s.unlock == nil {
		u, err := lockFile(sf.lock, LockTimeout)
		if err != nil {
			s.unlockMu()
			g.release(s)
			return nil, err
		}
		s.unlock = u
		// nobody wrote since the commit that released it?
		if s.resume != nil && (s.ident == "" || filesIdentity(sf) != s.ident) {
			s.resume = nil
		}
		s.ident = ""
	}
	return func() {
		if s.pending == nil {
			s.releaseFlock()
		}
		s.unlockMu()
		g.release(s)
	}, nil
}

// resume restores the writer's state from the previous append: the
// flock has been held since, or the files' identity is what the commit
// that released it left (lockSession), so the files are as that append
// left them (checked again by their sizes; anything else runs the full
// recovery). It reports whether it did.
func (w *writer) resume() bool {
	g := w.l.group
	if g == nil {
		return false
	}
	s := g.held(w.sf)
	r := s.resume
	s.resume = nil // handed to this writer; set again by head
	if r == nil || w.size != r.end {
		return false
	}
	if r.packEnd >= 0 {
		// no pack yet is an empty one: a session whose entries carry no
		// artifacts (a judge's own) has none
		st, err := os.Stat(filepath.Join(w.sf.artifacts, PackName))
		switch {
		case isNotExist(err):
			if r.packEnd != 0 {
				return false
			}
		case err != nil || st.Size() != r.packEnd:
			return false
		}
	}
	w.n, w.end, w.packEnd, w.last, w.st, w.sum = r.n, r.end, r.packEnd, r.last, r.st, r.sum
	return true
}

// syncs reports whether write syncs the entry before its head itself:
// always but in group-commit mode (and in tests that skip syncs). The
// first entry of a ledger is committed at once even then: until its
// head exists, a ledger with entries and no head is one whose head was
// deleted, which no append may take for a crash.
func (w *writer) syncs() bool {
	return !w.l.testingOnlyNoSync && (w.n == 0 || !w.grouped())
}

func (w *writer) grouped() bool {
	g := w.l.group
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.closed
}

// head is the last step of write: the signed head now (the entry is
// synced), or in group-commit mode the head handed to the committer,
// which writes it once the entry is synced.
func (w *writer) head() error {
	if w.n == 1 || !w.grouped() {
		if w.n > 1 && w.l.group != nil && !w.l.testingOnlyNoSync {
			// closed while this append ran without syncing
			if err := w.syncWritten(); err != nil {
				return err
			}
		}
		return w.writeHead()
	}
	msg, err := w.signedHead()
	if err != nil {
		return err
	}
	s := w.l.group.held(w.sf)
	s.pending = &pendingHead{n: w.n, msg: msg, keys: w.l.keys}
	s.resume = &resumeState{n: w.n, end: w.end, packEnd: w.packEnd, last: w.last, st: w.st, sum: w.sum}
	w.l.group.kick()
	return nil
}

// syncWritten makes the ledger's and the pack's written bytes durable.
func (w *writer) syncWritten() error {
	if err := syncData(w.f); err != nil {
		return fmt.Errorf("sync ledger: %w", err)
	}
	if w.pack != nil {
		if err := syncData(w.pack); err != nil {
			return fmt.Errorf("sync artifacts: %w", err)
		}
	}
	return nil
}

// syncAdopted makes the entries recover adopted durable before their
// head is written: they may be a crashed process's lines, still only in
// the page cache.
func (w *writer) syncAdopted() error {
	if w.l.testingOnlyNoSync {
		return nil
	}
	if w.pack == nil {
		if _, err := os.Stat(filepath.Join(w.sf.artifacts, PackName)); err == nil {
			if err := w.openPackFile(); err != nil {
				return err
			}
		}
	}
	return w.syncWritten()
}

// commitRound syncs every session with a pending head and writes the
// heads. The syncs run without the session locks, so appends go on
// meanwhile; they flush whatever those appends wrote too, but only the
// heads taken before the syncs are written.
func (g *GroupCommit) commitRound() {
	g.round.Lock()
	defer g.round.Unlock()
	g.mu.Lock()
	if g.crashed {
		g.mu.Unlock()
		return
	}
	var round []*groupSession
	for _, s := range g.sessions {
		round = append(round, s)
	}
	g.mu.Unlock()

	type job struct {
		s *groupSession
		p *pendingHead
	}
	var jobs []job
	for _, s := range round {
		s.lock(time.Hour)
		if s.pending != nil {
			jobs = append(jobs, job{s, s.pending})
		} else if s.unlock == nil && (s.resume == nil || len(round) > maxIdleSessions) {
			g.forget(s)
		}
		s.unlockMu()
	}
	if len(jobs) == 0 {
		return
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = syncSessionFiles(j.s.sf)
		}()
	}
	wg.Wait()
	g.mu.Lock()
	hook := g.testingOnlyBeforeHead
	g.mu.Unlock()
	if hook != nil {
		hook()
	}
	g.mu.Lock()
	crashed := g.crashed
	g.mu.Unlock()
	if crashed {
		return
	}
	for i, j := range jobs {
		s := j.s
		s.lock(time.Hour)
		err := errs[i]
		if err == nil {
			err = writeHeadIfNewer(s.sf, j.p)
		}
		if err != nil {
			// Not committed: like a crash, the next append (of any
			// process) recovers the tail.
			g.log("group commit %s: %v", filepath.Base(s.sf.ledger), err)
			s.pending = nil
			s.releaseFlock()
		} else {
			g.mu.Lock()
			g.commits++
			g.mu.Unlock()
			if s.pending == j.p {
				s.pending = nil
				s.releaseCommitted()
			}
		}
		s.unlockMu()
	}
	// appends during the syncs: another round
	for _, j := range jobs {
		j.s.lock(time.Hour)
		more := j.s.pending != nil
		j.s.unlockMu()
		if more {
			g.kick()
			break
		}
	}
}

// maxIdleSessions bounds the sessions whose state is kept between
// appends; past it, idle ones are dropped (their next append recovers
// from the files).
const maxIdleSessions = 1024

// forget drops a session with nothing pending from the map. The caller
// holds s.mu.
func (g *GroupCommit) forget(s *groupSession) {
	g.mu.Lock()
	if g.sessions[s.sf.ledger] == s && s.refs == 0 {
		delete(g.sessions, s.sf.ledger)
	}
	g.mu.Unlock()
}

// syncSessionFiles fdatasyncs the session's ledger and pack.
func syncSessionFiles(sf sessionFiles) error {
	for _, p := range []string{sf.ledger, filepath.Join(sf.artifacts, PackName)} {
		f, err := os.Open(p)
		if isNotExist(err) && p != sf.ledger {
			continue
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Base(p), err)
		}
		err = syncData(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", filepath.Base(p), err)
		}
	}
	return nil
}

// writeHeadIfNewer writes p's head unless the head on disk already
// covers as much (another process recovered the tail meanwhile).
func writeHeadIfNewer(sf sessionFiles, p *pendingHead) error {
	if c, _, err := readHead(sf.head, p.keys.headVerifiers()); err == nil && c.Size >= p.n {
		return nil
	} else if err != nil && !isNotExist(err) && !errors.Is(err, errNoValidHead) {
		return err
	}
	if err := writeHeadSlot(sf.head, p.n, p.msg); err != nil {
		return fmt.Errorf("write ledger head: %w", err)
	}
	return nil
}

// testingOnlyCrash stops g as a kill -9 would: pending heads are never
// written, and the sessions' flocks are released as the kernel releases
// a dead process's.
func (g *GroupCommit) testingOnlyCrash() {
	g.mu.Lock()
	g.crashed, g.closed = true, true
	var all []*groupSession
	for _, s := range g.sessions {
		all = append(all, s)
	}
	g.mu.Unlock()
	for _, s := range all {
		s.lock(time.Hour)
		s.pending = nil
		s.releaseFlock()
		s.unlockMu()
	}
	close(g.quit) // the committer exits at its next check
}
