package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/internal/judgehook"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/server"
)

// The gate's per-session state in the daemon. A stop reads the entries
// its decision needs (ReadRelevant: every validator result, the last
// entry and the tail after the relevant pass); the daemon keeps what it
// read and extends it with every entry it appends itself (tool calls,
// judge and gate decisions, validator results), so in sealed mode, where
// every append goes through the daemon, a stop reads nothing from disk.
//
// The kept entries are used only while the ledger file is exactly as the
// daemon last saw it: its stat identity (device, inode, size, mtime,
// ctime) unchanged since the daemon's own last read or append, and that
// append chained to the kept last entry with nothing after it in the
// file. Any other writer (a same-user hook, an edit, a truncation, a seal
// written by recovery) changes the identity or breaks the chain, and the
// next stop reads and verifies the ledger as it always does.
//
// The artifacts a stop opens (the input.json of each shell call after
// the last pass, to tell whether it wrote) are kept with the session's
// entries, and dropped with them. An artifact is kept as the bytes
// OpenArtifact checked against the entry's manifest: keyed by the
// entry's seq, bundle end and manifest digest, which its MAC covers, it
// is what the entry vouches for. They are dropped with the entries, and
// also when the pack's identity changes under the daemon (an edit, even
// one that keeps the size and puts the mtime back, changes its ctime),
// so that a stop after an edit reads the pack and finds it.

// evidence is the daemon's per-session state, by state root and session.
type evidence struct {
	mu       sync.Mutex
	m        map[string]*sessionEvidence
	artBytes int // bytes of all kept artifacts
}

type sessionEvidence struct {
	all   []*ledger.Entry // in seq order: indexed kinds, and every entry after from
	from  uint64          // entries with seq > from are all in all
	fp    string          // the ledger file's identity when all was last right
	last  *ledger.Entry
	reads int // for tests: reads served from disk
	// arts are the artifacts opened, checked, by entry and name; kept
	// while the pack's identity is packFP (the daemon's own appends
	// update it).
	arts     map[artifactKey][]byte
	packFP   string
	artReads int // for tests: artifacts read from the pack
}

type artifactKey struct {
	seq      uint64
	end      int64
	manifest string
	name     string
}

// Bounds of the kept artifacts: one at most maxKeptArtifact bytes (a
// command's input.json is far smaller), all of them maxKeptArtifacts
// bytes across sessions, past which they are all dropped.
const (
	maxKeptArtifact  = 64 << 10
	maxKeptArtifacts = 32 << 20
)

// maxEvidenceSessions bounds the sessions kept; past it all are dropped.
const maxEvidenceSessions = 1024

// drop forgets a session's kept state. The caller holds mu.
func (ev *evidence) drop(key string) {
	if s := ev.m[key]; s != nil {
		ev.dropArts(s)
		delete(ev.m, key)
	}
}

func evidenceKey(h home.Home, session string) string { return h.Root + "\x00" + session }

// fileIdentity is the ledger file's stat identity.
func fileIdentity(path string) string {
	fp, _ := server.Fingerprint(time.Time{}, path)
	return fp
}

// lastLineHash is the hash of the last complete line of the ledger file,
// as the line states it: the line's end is enough to tell whether the
// file still ends in an entry the daemon knows (with its identity, see
// ReadRelevant); nothing is trusted from it.
func lastLineHash(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return ""
	}
	for _, n := range []int64{4 << 10, 64 << 10} { // entry lines are far shorter than the second
		n = min(n, st.Size())
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, st.Size()-n); err != nil && err != io.EOF {
			return ""
		}
		if buf[len(buf)-1] != '\n' {
			return "" // a torn tail: the next append seals it
		}
		buf = buf[:len(buf)-1]
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return lineHash(buf[i+1:])
		} else if n == st.Size() {
			return lineHash(buf)
		}
	}
	return ""
}

// lineHash is the "hash" member of an entry line: the last members of a
// line are always hash, key_id and mac (FORMAT.md), so it is found from
// the end without decoding the line.
func lineHash(line []byte) string {
	const hashKey, macKey, keyIDKey = `,"hash":"`, `,"mac":"`, `","key_id":"`
	m := bytes.LastIndex(line, []byte(macKey))
	if m < 0 {
		return ""
	}
	h := bytes.LastIndex(line[:m], []byte(hashKey))
	if h < 0 || h+len(hashKey)+64+len(keyIDKey) > m || !bytes.HasPrefix(line[h+len(hashKey)+64:], []byte(keyIDKey)) {
		return ""
	}
	return string(line[h+len(hashKey) : h+len(hashKey)+64])
}

// evidenceLedger is the ledger as the daemon's hooks see it: appends
// record the caller ("peer") and extend the session's kept state;
// ReadRelevant serves from it while the file is unchanged.
type evidenceLedger struct {
	*ledger.Ledger
	peer *hookclient.Peer
	ev   *evidence
}

func (l evidenceLedger) path(session string) string {
	return l.Home().LedgerPath(session)
}

func (l evidenceLedger) packPath(session string) string {
	return filepath.Join(l.Home().SessionArtifactsDir(session), ledger.PackName)
}

// dropArts forgets s's artifacts. The caller holds ev.mu.
func (ev *evidence) dropArts(s *sessionEvidence) {
	for _, b := range s.arts {
		ev.artBytes -= len(b)
	}
	s.arts = nil
}

func (l evidenceLedger) Append(session string, r ledger.Record) (*ledger.Entry, error) {
	if l.peer != nil {
		r.Body = judgehook.WithPeer(r.Body, l.peer)
	}
	e, err := l.Ledger.Append(session, r)
	if l.ev == nil {
		return e, err
	}
	key := evidenceKey(l.Home(), session)
	l.ev.mu.Lock()
	defer l.ev.mu.Unlock()
	s := l.ev.m[key]
	if s == nil {
		return e, err
	}
	// kept only if this entry follows the kept last one and ends the file
	if err != nil || s.last == nil || e.Prev != s.last.Hash || e.Seq != s.last.Seq+1 || lastLineHash(l.path(session)) != e.Hash {
		l.ev.drop(key)
		return e, err
	}
	s.all = keepAppend(s.all, e)
	s.last = e
	s.fp = fileIdentity(l.path(session))
	if pfp := fileIdentity(l.packPath(session)); pfp != s.packFP {
		if e.Manifest == "" {
			l.ev.dropArts(s) // the pack changed, and not by this append
		}
		s.packFP = pfp
	}
	// the identity must be of the file ending in e: check again
	if lastLineHash(l.path(session)) != e.Hash {
		l.ev.drop(key)
	}
	return e, err
}

// keepAppend appends e to the kept entries and drops those e supersedes
// (ledger.Superseded): a stop reads only the tool calls, the indexed
// kinds and the last gate decision of each event and agent, so a long
// session's judge and gate decisions do not pile up in the daemon, nor
// in what every stop walks.
// all is kept pruned, so e can supersede only the last kept entry (kept
// as the last) and, when e is a gate decision, an earlier one of its
// event and agent.
func keepAppend(all []*ledger.Entry, e *ledger.Entry) []*ledger.Entry {
	if n := len(all); n > 0 && ledger.Superseded(all[n-1], e) {
		all = all[:n-1]
	}
	if e.Kind == ledger.KindGateDecision {
		all = slices.DeleteFunc(all, func(k *ledger.Entry) bool { return ledger.Superseded(k, e) })
	}
	return append(all, e)
}

// keepRelevant is keepAppend over entries in order, in one pass from the
// end: an entry stays when no later one supersedes it (ledger.Superseded
// needs only the last entry and the later gate decisions to tell).
func keepRelevant(entries []*ledger.Entry) []*ledger.Entry {
	if len(entries) == 0 {
		return nil
	}
	last := entries[len(entries)-1]
	later := map[[2]string]bool{} // the event and agent of gate decisions seen
	var rev []*ledger.Entry
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind == ledger.KindGateDecision {
			tag := [2]string{e.Event, e.AgentID}
			if later[tag] {
				continue
			}
			later[tag] = true
		} else if e != last && ledger.Superseded(e, last) {
			continue
		}
		rev = append(rev, e)
	}
	slices.Reverse(rev)
	return rev
}

// ReadRelevant is ledger.ReadRelevant, from the kept state when it may.
func (l evidenceLedger) ReadRelevant(session string, after func(indexed []*ledger.Entry) uint64) ([]*ledger.Entry, error) {
	if l.ev == nil {
		return l.Ledger.ReadRelevant(session, after)
	}
	key := evidenceKey(l.Home(), session)
	path := l.path(session)
	fp := fileIdentity(path)
	l.ev.mu.Lock()
	s := l.ev.m[key]
	if s != nil && s.fp == fp && lastLineHash(path) == s.last.Hash {
		if pfp := fileIdentity(l.packPath(session)); pfp != s.packFP {
			l.ev.dropArts(s)
			s.packFP = pfp
		}
		var indexed []*ledger.Entry
		for _, e := range s.all {
			if ledger.IndexedKind(e.Kind) || e == s.last {
				indexed = append(indexed, e)
			}
		}
		if a := after(indexed); a >= s.from {
			out := make([]*ledger.Entry, 0, len(indexed))
			for _, e := range s.all {
				if e.Seq > a || ledger.IndexedKind(e.Kind) || e == s.last {
					out = append(out, e)
				}
			}
			l.ev.mu.Unlock()
			return out, nil
		}
	}
	l.ev.mu.Unlock()

	var used *uint64
	entries, err := l.Ledger.ReadRelevant(session, func(indexed []*ledger.Entry) uint64 {
		a := after(indexed)
		used = &a
		return a
	})
	if err != nil || len(entries) == 0 {
		return entries, err
	}
	last := entries[len(entries)-1]
	keep := entries
	var from uint64
	if used != nil {
		from = *used
	} else {
		// everything was read (a full verification): keep only what a
		// decision needs, as a relevant read would have returned
		var indexed []*ledger.Entry
		for _, e := range entries {
			if ledger.IndexedKind(e.Kind) || e == last {
				indexed = append(indexed, e)
			}
		}
		from = after(indexed)
		keep = nil
		for _, e := range entries {
			if e.Seq > from || ledger.IndexedKind(e.Kind) || e == last {
				keep = append(keep, e)
			}
		}
	}
	after1 := fileIdentity(path)
	pfp := fileIdentity(l.packPath(session))
	if lastLineHash(path) != last.Hash || fileIdentity(path) != after1 {
		return entries, nil // written meanwhile: not kept
	}
	l.ev.mu.Lock()
	defer l.ev.mu.Unlock()
	if l.ev.m == nil || len(l.ev.m) >= maxEvidenceSessions {
		l.ev.m = map[string]*sessionEvidence{}
		l.ev.artBytes = 0
	}
	reads := 0
	if old := l.ev.m[key]; old != nil {
		reads = old.reads
	}
	l.ev.drop(key)
	l.ev.m[key] = &sessionEvidence{all: keepRelevant(keep), from: from, fp: after1, last: last, reads: reads + 1, packFP: pfp}
	return entries, nil
}

// ArtifactFiles returns nil, so that a stop in the daemon reads each
// command through OpenArtifact below, which serves it from the kept
// artifacts instead of the pack.
func (l evidenceLedger) ArtifactFiles(string) *ledger.ArtifactFiles { return nil }

// OpenArtifact is ledger.OpenArtifact, from the session's kept artifacts
// when it may (see the top of this file).
func (l evidenceLedger) OpenArtifact(e *ledger.Entry, name string) (ledger.ReadSeekCloser, error) {
	if l.ev == nil || e.Manifest == "" {
		return l.Ledger.OpenArtifact(e, name)
	}
	key := evidenceKey(l.Home(), e.Session)
	ak := artifactKey{seq: e.Seq, end: e.Artifacts, manifest: e.Manifest, name: name}
	l.ev.mu.Lock()
	if s := l.ev.m[key]; s != nil {
		if b, ok := s.arts[ak]; ok {
			l.ev.mu.Unlock()
			return keptArtifact{bytes.NewReader(b)}, nil
		}
	}
	l.ev.mu.Unlock()
	r, err := l.Ledger.OpenArtifact(e, name)
	if err != nil {
		return r, err
	}
	b, err := io.ReadAll(io.LimitReader(r, maxKeptArtifact+1))
	if err != nil || len(b) > maxKeptArtifact {
		if _, serr := r.Seek(0, io.SeekStart); serr != nil {
			r.Close()
			return nil, serr
		}
		return r, nil
	}
	r.Close()
	l.ev.mu.Lock()
	defer l.ev.mu.Unlock()
	if s := l.ev.m[key]; s != nil {
		s.artReads++
		if l.ev.artBytes+len(b) > maxKeptArtifacts {
			for _, o := range l.ev.m {
				l.ev.dropArts(o)
			}
		}
		if s.arts == nil {
			s.arts = map[artifactKey][]byte{}
		}
		if _, ok := s.arts[ak]; !ok {
			s.arts[ak] = b
			l.ev.artBytes += len(b)
		}
	}
	return keptArtifact{bytes.NewReader(b)}, nil
}

// keptArtifact is an artifact read into memory.
type keptArtifact struct{ *bytes.Reader }

func (keptArtifact) Close() error { return nil }
