package ledger

import (
	"io"
	"os"
)

// ReadFrom returns the session's entries with a seq of at least seq,
// reading the ledger from byte offset off on: a reader that remembers
// where it stopped (the trust refresh) reads only what was appended
// since, so its cost does not grow with the ledger. The entries read are
// hash-chained, in seq order, up to the head the MAC'd verified-prefix
// state vouches for (as ReadRelevant's tail); an offset that is not the
// start of an entry at or before seq, or any break in the chain, falls
// back to a full verification and the entries from seq are taken from
// it. A session with no ledger yields no entries and no error.
func (l *Ledger) ReadFrom(session string, off int64, seq uint64) ([]*Entry, error) {
	var out []*Entry
	err := l.read(session, func(f *os.File, old *vstate, suffix []*Entry) error {
		if old == nil { // fully verified just now
			out = nil
			for _, e := range suffix {
				if e.Seq >= seq {
					out = append(out, e)
				}
			}
			return nil
		}
		lastHash, lastSeq := old.Last, old.Size-1
		if n := len(suffix); n > 0 {
			lastHash, lastSeq = suffix[n-1].Hash, int64(suffix[n-1].Seq)
		}
		end, err := f.Seek(0, io.SeekEnd)
		if err != nil || off < 0 || off > end {
			return errFallback
		}
		var tail []*Entry
		prev, want := "", int64(-1)
		err = scanLines(io.NewSectionReader(f, off, end-off), func(line []byte, complete bool) error {
			if !complete {
				return errFallback
			}
			e, err := parseHashed(line)
			if err != nil || e.Session != session {
				return errFallback
			}
			if want < 0 {
				if e.Seq > seq {
					return errFallback // off is past the first entry asked for
				}
				want = int64(e.Seq)
			}
			if e.Seq != uint64(want) || (prev != "" && e.Prev != prev) {
				return errFallback
			}
			prev = e.Hash
			want++
			if e.Seq >= seq {
				tail = append(tail, e)
			}
			return nil
		})
		if err != nil {
			return errFallback
		}
		if want < 0 { // nothing after off: it must be the end of the head
			if off != end || int64(seq) != lastSeq+1 {
				return errFallback
			}
			out = nil
			return nil
		}
		if prev != lastHash || want != lastSeq+1 {
			return errFallback
		}
		out = tail
		return nil
	})
	return out, err
}
