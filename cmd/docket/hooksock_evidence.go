package main

import (
	"bytes"
	"io"
	"os"
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

// evidence is the daemon's per-session state, by state root and session.
type evidence struct {
	mu sync.Mutex
	m  map[string]*sessionEvidence
}

type sessionEvidence struct {
	all   []*ledger.Entry // in seq order: indexed kinds, and every entry after from
	from  uint64          // entries with seq > from are all in all
	fp    string          // the ledger file's identity when all was last right
	last  *ledger.Entry
	reads int // for tests: reads served from disk
}

// maxEvidenceSessions bounds the sessions kept; past it all are dropped.
const maxEvidenceSessions = 1024

func evidenceKey(h home.Home, session string) string { return h.Root + "\x00" + session }

// fileIdentity is the ledger file's stat identity.
func fileIdentity(path string) string {
	fp, _ := server.Fingerprint(time.Time{}, path)
	return fp
}

// lastLineHash is the hash of the last complete line of the ledger file.
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
	n := min(st.Size(), 16<<10) // entry lines are far shorter
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, st.Size()-n); err != nil && err != io.EOF {
		return ""
	}
	if buf[len(buf)-1] != '\n' {
		return "" // a torn tail: the next append seals it
	}
	buf = buf[:len(buf)-1]
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		buf = buf[i+1:]
	} else if n < st.Size() {
		return ""
	}
	e, err := ledger.ParseEntry(buf)
	if err != nil {
		return ""
	}
	return e.Hash
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
		delete(l.ev.m, key)
		return e, err
	}
	s.all = append(s.all, e)
	s.last = e
	s.fp = fileIdentity(l.path(session))
	// the identity must be of the file ending in e: check again
	if lastLineHash(l.path(session)) != e.Hash {
		delete(l.ev.m, key)
	}
	return e, err
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
	if lastLineHash(path) != last.Hash || fileIdentity(path) != after1 {
		return entries, nil // written meanwhile: not kept
	}
	l.ev.mu.Lock()
	defer l.ev.mu.Unlock()
	if l.ev.m == nil || len(l.ev.m) >= maxEvidenceSessions {
		l.ev.m = map[string]*sessionEvidence{}
	}
	reads := 0
	if old := l.ev.m[key]; old != nil {
		reads = old.reads
	}
	l.ev.m[key] = &sessionEvidence{all: append([]*ledger.Entry(nil), keep...), from: from, fp: after1, last: last, reads: reads + 1}
	return entries, nil
}
