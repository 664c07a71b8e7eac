package ledger

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/docket/docket/internal/home"
)

// ReadSeekCloser is an opened artifact.
type ReadSeekCloser interface {
	io.ReadSeeker
	io.Closer
}

// ErrNoLedger means the session has no ledger file.
var ErrNoLedger = errors.New("no ledger for session")

// VerifyError names the first entry that failed verification and why.
type VerifyError struct {
	Session string `json:"session"`
	Seq     int64  `json:"seq"` // -1 when the failure is not about one entry
	Reason  string `json:"reason"`
	Err     error  `json:"-"`
}

func (e *VerifyError) Error() string {
	if e.Seq < 0 {
		return fmt.Sprintf("ledger %s: %s", e.Session, e.Reason)
	}
	return fmt.Sprintf("ledger %s: seq %d: %s", e.Session, e.Seq, e.Reason)
}

func (e *VerifyError) Unwrap() error { return e.Err }

// VerifyOptions says what Verify can check.
type VerifyOptions struct {
	// VerifierKey is the checkpoint verifier key (public). Required with
	// Checkpoint.
	VerifierKey string
	// Keys, when set, lets Verify check entry and head MACs. An auditor
	// without the HMAC key leaves it nil: the head's tree size and root are
	// still compared, and the report says what was not checked.
	Keys *Keys
	// Checkpoint, when set, is a signed checkpoint an auditor kept; the
	// ledger must extend it.
	Checkpoint []byte
	// SkipArtifacts skips artifact digests.
	SkipArtifacts bool
	// ManifestsOnly checks each entry's bundle and manifest digest but not
	// the files' contents (each is checked when opened).
	ManifestsOnly bool
	// Progress, when set, receives a progress line about once a second.
	Progress io.Writer
	// OnEntry, when set, is called for each entry that verified so far.
	// Entries are only known good once Verify reports OK.
	OnEntry func(*Entry)
	// AcceptSealed lets a ledger with seal entries verify OK. By default a
	// seal is a finding: bytes someone (a crash, or anyone who can write
	// the files) put in the ledger or the pack were removed or wrapped by
	// the next append, and a human should look at them.
	AcceptSealed bool
}

// Seal is one seal entry: what the next append found after the last
// valid entry or bundle and set aside.
type Seal struct {
	Seq        int64  `json:"seq"`
	Reason     string `json:"reason"`
	Offset     int64  `json:"offset,omitempty"`
	Length     int64  `json:"length,omitempty"`
	PackOffset int64  `json:"pack_offset,omitempty"`
	PackLength int64  `json:"pack_length,omitempty"`
}

func (s Seal) String() string {
	var parts []string
	if s.Length > 0 {
		parts = append(parts, fmt.Sprintf("%d bytes after the last valid entry (ledger offset %d) were moved into artifact torn", s.Length, s.Offset))
	}
	if s.PackLength > 0 {
		parts = append(parts, fmt.Sprintf("%d artifact pack bytes no entry accounted for (pack offset %d) were wrapped as artifact torn-pack", s.PackLength, s.PackOffset))
	}
	if len(parts) == 0 {
		parts = append(parts, s.Reason)
	}
	return strings.Join(parts, "; ")
}

// Report is the result of verifying one session.
type Report struct {
	Session       string       `json:"session"`
	OK            bool         `json:"ok"`
	Entries       int64        `json:"entries"`
	LedgerBytes   int64        `json:"ledger_bytes"`
	Artifacts     int64        `json:"artifact_sets"`
	ArtifactBytes int64        `json:"artifact_bytes"`
	Root          string       `json:"root,omitempty"`
	Checked       []string     `json:"checked"`
	NotChecked    []string     `json:"not_checked,omitempty"`
	Failure       *VerifyError `json:"failure,omitempty"`
	// Sealed lists the seal entries; with AcceptSealed unset, any makes
	// the report fail.
	Sealed []Seal `json:"sealed,omitempty"`
}

// Verify checks one session's ledger under h: every entry's encoding,
// seq, session, chain and hash, MACs when opts.Keys is set, artifact
// digests, the signed head, and opts.Checkpoint. A tampered or
// inconsistent ledger yields a Report with OK false and a Failure; the
// error is for ledgers that could not be read at all.
func Verify(h home.Home, session string, opts VerifyOptions) (*Report, error) {
	rep, _, err := verify(h, session, opts, nil)
	return rep, err
}

// verify is Verify; with from set it checks only the entries after that
// verified prefix (the caller holds the state's MAC as proof), compares
// the head's size, end, last hash and pack end instead of recomputing the
// Merkle root, and returns the verifier whose state describes the new
// prefix.
func verify(h home.Home, session string, opts VerifyOptions, from *vstate) (*Report, *verifier, error) {
	rep, v, err := verifyLocked(h, session, opts, from, true, nil)
	return rep, v, err
}

// verifyLocked is verify; lock false means the caller holds the shared
// lock, and an open ledger file may be passed in.
func verifyLocked(h home.Home, session string, opts VerifyOptions, from *vstate, lock bool, open *os.File) (*Report, *verifier, error) {
	if !home.ValidSessionID(session) {
		return nil, nil, fmt.Errorf("verify: %w %q", ErrBadSession, session)
	}
	if opts.Checkpoint != nil && strings.TrimSpace(opts.VerifierKey) == "" {
		return nil, nil, errors.New("verify: a checkpoint needs the checkpoint verifier key")
	}
	sf := filesFor(h, session)
	f := open
	if f == nil {
		var err error
		f, err = os.Open(sf.ledger)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("verify %s: %w", session, ErrNoLedger)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("verify %s: %w", session, err)
		}
		defer f.Close()
	} else if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, nil, fmt.Errorf("verify %s: %w", session, err)
	}
	if lock {
		unlock, err := lockShared(sf.lock)
		if err != nil {
			return nil, nil, fmt.Errorf("verify %s: %w", session, err)
		}
		defer unlock()
	}
	v := &verifier{h: h, sf: sf, opts: opts, rep: &Report{Session: session}, last: zeroHash, lastTick: time.Now()}
	v.hash, _ = prefixHash(nil)
	var r io.Reader = f
	if from != nil {
		v.n, v.off, v.last, v.lastOff, v.packEnd = from.Size, from.End, from.Last, from.LastOff, from.Pack
		v.refs = from.cloneRefs()
		v.skipTree = true
		var err error
		if v.hash, err = prefixHash(from.Prefix); err != nil {
			return nil, nil, err
		}
		r = io.NewSectionReader(f, from.End, 1<<62)
	}
	v.rep.Checked = []string{"encoding", "seq", "session", "chain", "hash"}
	if opts.Keys != nil {
		v.rep.Checked = append(v.rep.Checked, "hmac")
	} else {
		v.rep.NotChecked = append(v.rep.NotChecked, "hmac and head MAC (no HMAC key on this machine)")
	}
	if opts.SkipArtifacts {
		v.rep.NotChecked = append(v.rep.NotChecked, "artifacts (skipped)")
	} else {
		v.rep.Checked = append(v.rep.Checked, "artifacts")
	}
	v.rep.Checked = append(v.rep.Checked, "head")
	if opts.Checkpoint != nil {
		v.rep.Checked = append(v.rep.Checked, "checkpoint")
	}
	hint := int64(-1)
	if st, err := f.Stat(); err == nil && from != nil && st.Size() >= from.End {
		hint = st.Size() - from.End // usually a few entries, or none
	}
	err := scanLinesHint(r, hint, v.line)
	if err == nil {
		if fail := v.head(); fail != nil {
			err = fail
		}
	}
	if err == nil && !opts.SkipArtifacts {
		err = v.packTail()
	}
	if v.pack != nil {
		v.pack.f.Close()
	}
	var fail *VerifyError
	switch {
	case errors.As(err, &fail):
		v.rep.Failure = fail
		return v.rep, v, nil
	case errors.Is(err, errLineTooLong):
		v.rep.Failure = v.fail(v.n, "line exceeds 1 MiB", ErrTampered)
		return v.rep, v, nil
	case err != nil:
		return nil, nil, fmt.Errorf("verify %s: %w", session, err)
	}
	if root, err := treeRoot(&v.tree, v.n); err == nil && !v.skipTree {
		v.rep.Root = base64.StdEncoding.EncodeToString(root[:])
	}
	if opts.Checkpoint != nil {
		if fail := v.checkpoint(opts.Checkpoint); fail != nil {
			v.rep.Failure = fail
			return v.rep, v, nil
		}
	}
	if len(v.rep.Sealed) > 0 && !opts.AcceptSealed {
		first := v.rep.Sealed[0]
		v.rep.Failure = v.fail(first.Seq, fmt.Sprintf("sealed: %s (%d seal entries; inspect them with 'docket inspect', accept with --accept-sealed)", first, len(v.rep.Sealed)), ErrSealed)
		return v.rep, v, nil
	}
	v.rep.OK = true
	return v.rep, v, nil
}

// ErrSealed marks a ledger whose only finding is seal entries.
var ErrSealed = errors.New("ledger has sealed data")

// packTail reports pack bytes after the last bundle: a crash mid-append
// (the next append seals them) or bytes someone added.
func (v *verifier) packTail() error {
	size := int64(0)
	if v.pack != nil {
		size = v.pack.size
	} else if st, err := os.Stat(filepath.Join(v.sf.artifacts, PackName)); err == nil {
		size = st.Size()
	} else if !isNotExist(err) {
		return err
	}
	if size < v.packEnd {
		return v.fail(-1, fmt.Sprintf("artifact pack truncated: %d bytes, the entries' bundles end at %d", size, v.packEnd), ErrTruncated)
	}
	if size > v.packEnd {
		return v.fail(-1, fmt.Sprintf("artifact pack: %d bytes at offset %d that no entry accounts for (a crash mid-append leaves these and the next append seals them; otherwise they were added)", size-v.packEnd, v.packEnd), ErrTampered)
	}
	return nil
}

type verifier struct {
	h        home.Home
	sf       sessionFiles
	opts     VerifyOptions
	rep      *Report
	tree     memTree
	last     string
	lastTick time.Time
	pack     *packReader // opened on first use
	packEnd  int64       // where the last bundle ends
	buf      []byte

	n        int64 // entries so far (the next seq)
	off      int64 // bytes so far (the next line's offset)
	lastOff  int64 // offset of the last verified line
	skipTree bool  // incremental: the head's last hash stands in for its root
	hash     interface {
		io.Writer
		encoding.BinaryMarshaler
	} // SHA-256 of the verified bytes, for the next state
	refs vstate // the index, recent tools and gate decisions so far
}

// state is the verified-prefix state after a successful run.
func (v *verifier) state() (*vstate, error) {
	p, err := v.hash.MarshalBinary()
	if err != nil {
		return nil, err
	}
	st := v.refs.cloneRefs()
	st.Size, st.End, st.LastOff, st.Last, st.Pack, st.Prefix = v.n, v.off, v.lastOff, v.last, v.packEnd, p
	return &st, nil
}

func (v *verifier) fail(seq int64, reason string, err error) *VerifyError {
	return &VerifyError{Session: v.rep.Session, Seq: seq, Reason: reason, Err: err}
}

func (v *verifier) line(line []byte, complete bool) error {
	seq := v.n
	if !complete {
		return v.fail(seq, "torn tail: the final line has no newline (a crash mid-write; the next append seals it)", ErrTampered)
	}
	e, err := ParseEntry(line)
	if err != nil {
		return v.fail(seq, "malformed entry: "+err.Error(), ErrTampered)
	}
	switch {
	case e.V != Version:
		return v.fail(seq, fmt.Sprintf("unsupported entry version %d", e.V), ErrTampered)
	case e.Session != v.rep.Session:
		return v.fail(seq, fmt.Sprintf("wrong session: entry belongs to session %q", e.Session), ErrTampered)
	case e.Seq < uint64(seq):
		return v.fail(seq, fmt.Sprintf("seq duplicate or out of order: found seq %d", e.Seq), ErrTampered)
	case e.Seq > uint64(seq):
		return v.fail(seq, fmt.Sprintf("seq gap: found seq %d", e.Seq), ErrTampered)
	case e.Prev != v.last:
		return v.fail(seq, "chain broken: prev is not the previous entry's hash", ErrTampered)
	}
	if h, err := entryHash(e); err != nil || h != e.Hash {
		return v.fail(seq, "hash mismatch: the entry was edited", ErrTampered)
	}
	if v.opts.Keys != nil {
		key, ok := v.opts.Keys.hmacKeyFor(e.KeyID)
		if !ok {
			return v.fail(seq, fmt.Sprintf("unknown HMAC key id %q", e.KeyID), ErrTampered)
		}
		if mac(key, e.Session, e.Seq, e.Hash) != e.MAC {
			return v.fail(seq, "HMAC mismatch: the entry was not written with this ledger's key", ErrTampered)
		}
	}
	if e.Manifest != "" && !v.opts.SkipArtifacts {
		if v.pack == nil {
			p, err := openPackReader(v.sf.artifacts)
			if err != nil {
				return v.fail(seq, err.Error(), ErrTampered)
			}
			v.pack = p
		}
		b, err := readBundle(v.pack.f, v.pack.size, e.Artifacts, e.Manifest)
		if err != nil {
			return v.fail(seq, err.Error(), ErrTampered)
		}
		switch {
		case b.start > v.packEnd:
			return v.fail(seq, fmt.Sprintf("artifact pack: %d bytes at offset %d before this entry's bundle that no entry accounts for", b.start-v.packEnd, v.packEnd), ErrTampered)
		case b.start < v.packEnd:
			return v.fail(seq, "artifact bundle overlaps the previous entry's", ErrTampered)
		}
		v.packEnd = e.Artifacts
		if v.buf == nil {
			v.buf = make([]byte, 256<<10)
		}
		var n int64
		if !v.opts.ManifestsOnly {
			n, err = b.check(v.buf)
		}
		v.rep.ArtifactBytes += n
		if err != nil {
			return v.fail(seq, err.Error(), ErrTampered)
		}
		v.rep.Artifacts++
	}
	if e.Kind == KindSeal {
		v.rep.Sealed = append(v.rep.Sealed, sealOf(seq, e))
	}
	if !v.skipTree {
		if err := v.tree.add(line); err != nil {
			return err
		}
	}
	v.hash.Write(line)
	v.hash.Write([]byte{'\n'})
	v.refs.note(e, seq, v.off)
	v.last = e.Hash
	v.lastOff = v.off
	v.n++
	v.off += int64(len(line)) + 1
	v.rep.Entries++
	v.rep.LedgerBytes += int64(len(line)) + 1
	if v.opts.OnEntry != nil {
		v.opts.OnEntry(e)
	}
	if v.opts.Progress != nil && time.Since(v.lastTick) > time.Second {
		v.lastTick = time.Now()
		fmt.Fprintf(v.opts.Progress, "docket: verify %s: %d entries, %d MiB of artifacts\n",
			v.rep.Session, v.rep.Entries, v.rep.ArtifactBytes>>20)
	}
	return nil
}

func (v *verifier) head() *VerifyError {
	var verifiers note.Verifiers
	if v.opts.Keys != nil {
		verifiers = v.opts.Keys.headVerifiers()
	}
	c, _, err := readHead(v.sf.head, verifiers)
	if isNotExist(err) {
		return v.fail(-1, "head missing: the signed head beside the ledger is gone (truncation or rollback)", ErrTampered)
	}
	if err != nil {
		return v.fail(-1, "head MAC invalid: "+err.Error(), ErrTampered)
	}
	n := v.n
	switch {
	case c.Origin != Origin(v.rep.Session):
		return v.fail(-1, fmt.Sprintf("head is for another ledger (%q)", c.Origin), ErrTampered)
	case c.Size < n:
		return v.fail(c.Size, fmt.Sprintf("head behind: it covers %d entries, the ledger has %d (a crash before the head was written, or a rolled-back head; where the ledger is written, the session's next append or the start of docket serve covers the lines that check out and seals the rest)", c.Size, n), ErrTampered)
	case c.Size > n:
		return v.fail(n, fmt.Sprintf("ledger truncated: the signed head covers %d entries, the ledger has %d", c.Size, n), ErrTruncated)
	}
	if v.skipTree {
		if n > 0 && c.Last != v.last {
			return v.fail(-1, "head last hash mismatch: entries differ from what the head signed", ErrTampered)
		}
	} else {
		root, err := treeRoot(&v.tree, n)
		if err != nil {
			return v.fail(-1, err.Error(), err)
		}
		if root != c.Root {
			return v.fail(-1, "head root mismatch: entries differ from what the head signed", ErrTampered)
		}
	}
	if c.End != v.off {
		return v.fail(-1, fmt.Sprintf("head end offset %d does not match the ledger's %d bytes", c.End, v.off), ErrTampered)
	}
	if c.Pack >= 0 && !v.opts.SkipArtifacts && c.Pack != v.packEnd {
		return v.fail(-1, fmt.Sprintf("head pack offset %d does not match where the entries' bundles end (%d)", c.Pack, v.packEnd), ErrTampered)
	}
	return nil
}

func sealOf(seq int64, e *Entry) Seal {
	s := Seal{Seq: seq}
	json.Unmarshal(e.Body, &s) // best effort: the entry's MAC vouches for it
	s.Seq = seq
	return s
}

func (v *verifier) checkpoint(msg []byte) *VerifyError {
	c, err := OpenCheckpoint(msg, v.opts.VerifierKey)
	if err != nil {
		return v.fail(-1, "checkpoint signature invalid: "+err.Error(), ErrTampered)
	}
	n := v.n
	switch {
	case c.Origin != Origin(v.rep.Session):
		return v.fail(-1, fmt.Sprintf("checkpoint is for another ledger (%q)", c.Origin), ErrTampered)
	case c.Size > n:
		return v.fail(n, fmt.Sprintf("checkpoint inconsistent: ledger truncated below the checkpoint (%d entries, checkpoint has %d)", n, c.Size), ErrTruncated)
	case c.Size == 0:
		return nil
	}
	th, err := treeRoot(&v.tree, n)
	if err != nil {
		return v.fail(-1, err.Error(), err)
	}
	proof, err := tlog.ProveTree(n, c.Size, &v.tree)
	if err != nil {
		return v.fail(-1, err.Error(), err)
	}
	if err := tlog.CheckTree(proof, n, th, c.Size, c.Root); err != nil {
		return v.fail(-1, fmt.Sprintf("checkpoint inconsistent: the first %d entries were rewritten since the checkpoint", c.Size), ErrTampered)
	}
	return nil
}

// OpenArtifact opens the named artifact of e after checking the
// manifest's and the file's digests.
func (l *Ledger) OpenArtifact(e *Entry, name string) (ReadSeekCloser, error) {
	return OpenArtifact(l.home, e, name)
}

// OpenArtifact opens the named artifact of e under h after checking the
// manifest's and the file's digests. A missing artifact is fs.ErrNotExist.
func OpenArtifact(h home.Home, e *Entry, name string) (ReadSeekCloser, error) {
	if e.Manifest == "" {
		return nil, fmt.Errorf("artifact %s: %w", name, fs.ErrNotExist)
	}
	p, err := openPackReader(h.SessionArtifactsDir(e.Session))
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", name, err)
	}
	b, err := readBundle(p.f, p.size, e.Artifacts, e.Manifest)
	if err != nil {
		p.f.Close()
		return nil, fmt.Errorf("artifact %s: %w", name, err)
	}
	for i, mf := range b.manifest.Files {
		if mf.Name != name {
			continue
		}
		// a buffer the file's size (most are small): a fresh 64 KiB
		// for each artifact a stop opens costs page faults
		if _, err := b.checkFile(i, make([]byte, min(64<<10, max(512, mf.Size+1)))); err != nil {
			p.f.Close()
			return nil, fmt.Errorf("artifact %s: %w: %v", name, ErrTampered, err)
		}
		return artifactReader{io.NewSectionReader(p.f, b.offsets[i], mf.Size), p.f}, nil
	}
	p.f.Close()
	return nil, fmt.Errorf("artifact %s: %w", name, fs.ErrNotExist)
}

// Sessions lists the sessions with a ledger file under h, sorted.
func Sessions(h home.Home) ([]string, error) {
	ents, err := os.ReadDir(h.LedgerDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list ledgers: %w", err)
	}
	var out []string
	for _, e := range ents {
		if s, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && !e.IsDir() && home.ValidSessionID(s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out, nil
}
