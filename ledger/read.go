package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Reading for decisions. The gate reads the ledger at every stop; it
// must cost the same at 100,000 entries as at 10. A reader therefore
// verifies only the entries after the MAC'd verified-prefix state
// (state.go), which readers write and appends advance, so after appends
// alone there is nothing after it:
//
//   - the prefix is bound to the state by its byte length and by its last
//     line, whose hash must still be the state's "last" (a truncated or
//     rewritten end falls back to full verification);
//   - the entries after it get every check Verify makes (encoding, seq,
//     chain, hash, MAC, bundle manifest and pack position), and then the
//     head (size, end, last hash, pack end);
//   - any discrepancy falls back to a full Verify, which names the first
//     bad entry, and a successful full run writes a new state.
//
// ReadVerified also hashes the whole prefix and compares it with the
// state's running SHA-256, so an edited earlier line is caught there (and
// by `docket verify`). ReadRelevant, the gate's read, does not: it reads
// only the entries its decision uses, and checks each of them (MAC for the
// indexed kinds, hash chain up to the signed head for the tail), so an
// edited line it does not read cannot change its decision; it is reported
// by `docket verify` and by the next ReadVerified.

// ReadVerified reads the session's ledger and verifies it: the entries
// appended since the last verified prefix get every check (chain, MACs,
// head, artifact manifests), and the prefix's bytes must hash to the
// state's digest. It returns all entries only when all of it verifies;
// otherwise the error is a *VerifyError naming the first bad entry. Seal
// entries are accepted (they are findings for `docket verify`, not for the
// gate). Artifact contents are not re-hashed here: OpenArtifact checks
// each file it opens, and Verify checks them all. A session with no
// ledger yields no entries and no error.
func (l *Ledger) ReadVerified(session string) ([]*Entry, error) {
	var out []*Entry
	err := l.read(session, func(f *os.File, old *vstate, suffix []*Entry) error {
		if old == nil {
			out = suffix
			return nil
		}
		h, _ := prefixHash(nil)
		prefix, err := parsePrefix(io.TeeReader(io.NewSectionReader(f, 0, old.End), h))
		if err != nil {
			return errFallback
		}
		if m, err := h.MarshalBinary(); err != nil || !bytes.Equal(m, old.Prefix) || int64(len(prefix)) != old.Size {
			return errFallback
		}
		out = append(prefix, suffix...)
		return nil
	})
	return out, err
}

// ReadRelevant reads what a decision at the ledger's head needs without
// reading the whole ledger: every entry of the indexed kinds
// (validator_pass, validator_fail, seal) and the last entry, which it
// hands to after; then, of the entries with a seq greater than the seq
// after returns, at least every tool_call and tool_failure and the last
// gate_decision of each event and agent (other entries there may be
// returned too; the gate decisions before a later one of the same event
// and agent need not be). The result is in seq order. Entries are
// verified as described above; a ledger that fails yields a
// *VerifyError.
func (l *Ledger) ReadRelevant(session string, after func(indexed []*Entry) uint64) ([]*Entry, error) {
	var out []*Entry
	err := l.read(session, func(f *os.File, old *vstate, suffix []*Entry) error {
		if old == nil { // fully verified just now: everything is at hand
			out = suffix
			return nil
		}
		var err error
		out, err = l.relevant(f, session, old, suffix, after)
		return err
	})
	return out, err
}

// errFallback means the incremental read cannot vouch for the ledger;
// the full verification decides.
var errFallback = errors.New("incremental verification not possible")

// read verifies the session's ledger under a shared lock and calls use
// with the prefix state it started from (nil when it verified everything,
// and then suffix holds all entries) and the entries after it. When use
// returns errFallback, read verifies everything and calls use again.
func (l *Ledger) read(session string, use func(f *os.File, old *vstate, suffix []*Entry) error) error {
	sf := filesFor(l.home, session)
	f, err := os.Open(sf.ledger)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read ledger %s: %w", session, err)
	}
	defer f.Close()
	unlock, err := lockShared(sf.lock)
	if err != nil {
		return fmt.Errorf("read ledger %s: %w", session, err)
	}
	defer unlock()
	opts := VerifyOptions{Keys: l.keys, ManifestsOnly: true, AcceptSealed: true} // no checkpoint: no verifier key

	if old, err := l.readState(sf, session); err == nil && l.prefixEndIntact(f, session, old) {
		var suffix []*Entry
		o := opts
		o.OnEntry = func(e *Entry) { suffix = append(suffix, e) }
		rep, v, err := verifyLocked(l.home, session, o, old, false, f)
		l.testingOnlyVerifiedEntries += len(suffix)
		if err == nil && rep.OK {
			if err := use(f, old, suffix); err == nil {
				if len(suffix) > 0 {
					if st, err := v.state(); err == nil {
						l.writeState(sf, session, st) // a cache: failure only costs speed
					}
				}
				return nil
			} else if !errors.Is(err, errFallback) {
				return err
			}
		}
	}

	l.testingOnlyFullReads++
	var all []*Entry
	opts.OnEntry = func(e *Entry) { all = append(all, e) }
	rep, v, err := verifyLocked(l.home, session, opts, nil, false, f)
	l.testingOnlyVerifiedEntries += len(all)
	if errors.Is(err, ErrNoLedger) {
		return nil
	}
	if err != nil {
		return err
	}
	if !rep.OK {
		return rep.Failure
	}
	if len(all) > 0 {
		if st, err := v.state(); err == nil {
			l.writeState(sf, session, st)
		}
	}
	return use(f, nil, all)
}

// prefixEndIntact checks that the state's last line is still where the
// state says and still hashes to its "last".
func (l *Ledger) prefixEndIntact(f *os.File, session string, st *vstate) bool {
	line, err := readLineAt(f, st.LastOff, st.End)
	if err != nil || st.LastOff+int64(len(line))+1 != st.End {
		return false
	}
	// parseHashed recomputes the hash from the line's bytes: a line that
	// hashes to the state's "last" is the line the state vouches for.
	e, err := parseHashed(line)
	return err == nil && e.Session == session && e.Seq == uint64(st.Size-1) && e.Hash == st.Last
}

// parsePrefix decodes the lines of a prefix the state vouches for,
// without re-checking their encoding, chain or MACs (the caller compares
// the bytes' digest with the state's).
func parsePrefix(r io.Reader) ([]*Entry, error) {
	var out []*Entry
	err := scanLines(r, func(line []byte, complete bool) error {
		if !complete {
			return errFallback
		}
		e, err := decodeLine(line)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// relevant reads the indexed entries and the tail the gate needs.
func (l *Ledger) relevant(f *os.File, session string, old *vstate, suffix []*Entry, after func([]*Entry) uint64) ([]*Entry, error) {
	// Offsets known for seqs: the indexed ones, the recent tools and gate
	// decisions, and the prefix's last.
	known := map[int64]int64{old.Size - 1: old.LastOff}
	got := map[int64]*Entry{} // each line is read and checked once
	read := func(kind Kind, seq, off int64) (*Entry, error) {
		if e := got[seq]; e != nil && known[seq] == off && (kind == "" || e.Kind == kind) {
			return e, nil
		}
		line, err := readLineAt(f, off, old.End)
		if err != nil {
			return nil, errFallback
		}
		e, err := l.checkStandalone(line, session, seq)
		if err != nil || (kind != "" && e.Kind != kind) {
			return nil, errFallback
		}
		known[seq], got[seq] = off, e
		return e, nil
	}
	var indexed []*Entry
	for _, ref := range old.Index {
		e, err := read(ref.Kind, ref.Seq, ref.Off)
		if err != nil {
			return nil, err
		}
		indexed = append(indexed, e)
	}
	var last *Entry
	for _, e := range suffix {
		if indexedKinds[e.Kind] {
			indexed = append(indexed, e)
		}
		last = e
	}
	if last == nil {
		e, err := read("", old.Size-1, old.LastOff)
		if err != nil {
			return nil, err
		}
		last = e
	}
	if n := len(indexed); n == 0 || indexed[n-1].Seq != last.Seq {
		indexed = append(indexed, last)
	}
	a := after(indexed)
	if a >= last.Seq {
		return indexed, nil
	}
	// What the gate uses of the entries after seq a, when the state lists
	// all of it: the tool calls and the last gate decision of each event
	// and agent in the prefix, and every entry after the prefix (verified
	// in full just now).
	if old.ToolsFrom <= int64(a)+1 && old.GatesFrom <= int64(a)+1 {
		var tail []*Entry
		for _, r := range old.Tools {
			if r.Seq > int64(a) {
				e, err := read(r.Kind, r.Seq, r.Off)
				if err != nil {
					return nil, err
				}
				tail = append(tail, e)
			}
		}
		for _, g := range old.Gates {
			if g.Seq > int64(a) {
				e, err := read(KindGateDecision, g.Seq, g.Off)
				if err != nil {
					return nil, err
				}
				if gateTag(e.Event, e.AgentID) != g.Tag {
					return nil, errFallback
				}
				tail = append(tail, e)
			}
		}
		for _, e := range suffix {
			if e.Seq > a {
				tail = append(tail, e)
			}
		}
		return mergeBySeq(indexed, tail), nil
	}
	// Otherwise the whole tail: every entry after seq a, read forward from
	// the nearest known line at or before it, hash-chained to the head's
	// last entry.
	for _, r := range old.Tools {
		known[r.Seq] = r.Off
	}
	for _, g := range old.Gates {
		known[g.Seq] = g.Off
	}
	startSeq, startOff := int64(0), int64(0)
	for seq, off := range known {
		if seq <= int64(a) && seq >= startSeq {
			startSeq, startOff = seq, off
		}
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, errFallback
	}
	var tail []*Entry
	prev, want := "", int64(startSeq)
	err = scanLines(io.NewSectionReader(f, startOff, end-startOff), func(line []byte, complete bool) error {
		if !complete {
			return errFallback
		}
		e, err := parseHashed(line)
		if err != nil || e.Seq != uint64(want) || e.Session != session || (prev != "" && e.Prev != prev) {
			return errFallback
		}
		prev = e.Hash
		want++
		if e.Seq > a {
			tail = append(tail, e)
		}
		return nil
	})
	if err != nil || prev != last.Hash || want != int64(last.Seq)+1 {
		return nil, errFallback
	}
	return mergeBySeq(indexed, tail), nil
}

// checkStandalone parses one line and checks it on its own: of this
// session and seq, its hash, and its MAC.
func (l *Ledger) checkStandalone(line []byte, session string, seq int64) (*Entry, error) {
	e, err := parseHashed(line)
	if err != nil || e.Session != session || e.Seq != uint64(seq) {
		return nil, ErrTampered
	}
	key, ok := l.keys.hmacKeyFor(e.KeyID)
	if !ok || mac(key, e.Session, e.Seq, e.Hash) != e.MAC {
		return nil, ErrTampered
	}
	return e, nil
}

func mergeBySeq(a, b []*Entry) []*Entry {
	seen := map[uint64]bool{}
	var out []*Entry
	for _, e := range append(append([]*Entry(nil), a...), b...) {
		if !seen[e.Seq] {
			seen[e.Seq] = true
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// parseHashed decodes a line and recomputes its hash from the raw bytes
// instead of re-encoding the entry: the line with the hash and mac values
// emptied is L0 (FORMAT.md, "Hash"). It returns the entry only when the
// recomputed hash is the one the line carries. A line that is not
// canonical hashes to something else; what vouches for the result is that
// the caller then matches the hash against a signed head, a chain or a
// MAC.
func parseHashed(line []byte) (*Entry, error) {
	const hashKey, macKey, keyIDKey = `,"hash":"`, `,"mac":"`, `","key_id":"`
	if !bytes.HasSuffix(line, []byte(`"}`)) {
		return nil, errNonCanonical
	}
	m := bytes.LastIndex(line, []byte(macKey))
	if m < 0 {
		return nil, errNonCanonical
	}
	h := bytes.LastIndex(line[:m], []byte(hashKey))
	if h < 0 || h+len(hashKey)+64+len(keyIDKey) > m || !bytes.HasPrefix(line[h+len(hashKey)+64:], []byte(keyIDKey)) {
		return nil, errNonCanonical
	}
	hashVal := string(line[h+len(hashKey) : h+len(hashKey)+64])
	sum := sha256.New()
	sum.Write([]byte("docket-ledger-entry-v1\n"))
	sum.Write(line[:h+len(hashKey)])
	sum.Write(line[h+len(hashKey)+64 : m+len(macKey)])
	sum.Write([]byte(`"}`))
	if hex.EncodeToString(sum.Sum(nil)) != hashVal {
		return nil, errNonCanonical
	}
	e, err := decodeLine(line)
	if err != nil || e.Hash != hashVal {
		return nil, errNonCanonical
	}
	return e, nil
}
