package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
)

// LockTimeout bounds how long an append waits for the session lock. A hook
// must finish well inside its own timeout.
const LockTimeout = 3 * time.Second

var (
	// ErrTampered marks security failures: a bad signature, MAC or chain.
	ErrTampered = errors.New("ledger tampered")
	// ErrTruncated means the ledger file is shorter than its signed head.
	ErrTruncated = errors.New("ledger shorter than its signed head")
	// ErrBadSession is returned for a session id that cannot name a file.
	ErrBadSession = errors.New("invalid session id")

	errLockTimeout = errors.New("timed out waiting for the ledger lock")
)

// paths of one session's files.
type sessionFiles struct {
	ledger, head, tree, lock, artifacts string
}

func filesFor(h home.Home, session string) sessionFiles {
	base := strings.TrimSuffix(h.LedgerPath(session), ".jsonl")
	return sessionFiles{
		ledger:    base + ".jsonl",
		head:      base + ".head",
		tree:      base + ".tree",
		lock:      base + ".lock",
		artifacts: h.SessionArtifactsDir(session),
	}
}

// Append writes one entry for r to the session's ledger and returns it.
// A torn tail left by a crash is sealed first: its bytes are kept as an
// artifact of a seal entry, and nothing before it is touched. On error
// nothing is appended.
func (l *Ledger) Append(session string, r Record) (*Entry, error) {
	if !home.ValidSessionID(session) {
		return nil, fmt.Errorf("append: %w %q", ErrBadSession, session)
	}
	e := &Entry{
		V: Version, Session: session, Kind: r.Kind, Runtime: r.Runtime, Event: r.Event,
		Tool: r.Tool, ToolUseID: r.ToolUseID, AgentID: r.AgentID,
	}
	if e.Kind == "" {
		return nil, errors.New("append: record has no kind")
	}
	if r.Args != nil {
		d, err := canonjson.Digest(r.Args)
		if err != nil {
			return nil, fmt.Errorf("append: arguments: %w", err)
		}
		e.Args = d
	}
	var redacted []string // where key material was replaced
	if r.Body != nil {
		b, err := canonjson.Marshal(r.Body)
		if err != nil {
			return nil, fmt.Errorf("append: body: %w", err)
		}
		if len(b) == 0 || b[0] != '{' {
			return nil, errors.New("append: body must be a JSON object")
		}
		b, n := redactBytes(b, l.keys.secrets())
		if n > 0 {
			redacted = append(redacted, "body")
		}
		e.Body = b
	}
	sf := filesFor(l.home, session)
	if err := os.MkdirAll(l.home.LedgerDir(), 0o700); err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	unlock, err := l.lockSession(sf) // group.go
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	defer unlock()

	w, err := l.openWriter(sf, session)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	defer w.close()
	if err := w.recover(); err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	if len(r.Artifacts) > 0 {
		var names []string
		if e.Manifest, e.Artifacts, names, err = w.storeArtifacts(r.Artifacts, 0); err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
		redacted = append(redacted, names...)
	}
	if len(redacted) > 0 {
		if e.Body, err = addRedactedToBody(e.Body, redacted); err != nil {
			return nil, fmt.Errorf("append: body: %w", err)
		}
	}
	if err := w.write(e); err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	w.saveState()
	return e, nil
}

// lockFile takes the exclusive lock, giving up after timeout. The blocked
// goroutine is abandoned on timeout; the process is about to fail anyway
// and the kernel drops the lock with the file descriptor.
func lockFile(path string, timeout time.Duration) (func(), error) {
	if unlock, ok := tryLock(path); ok {
		return unlock, nil
	}
	fl := flock.New(path, flock.SetPermissions(0o600))
	// Uncontended, the usual case: no goroutine, no timer.
	if ok, err := fl.TryLock(); err == nil && ok {
		return func() { fl.Unlock() }, nil
	}
	done := make(chan error, 1)
	go func() { done <- fl.Lock() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("lock ledger: %w", err)
		}
		return func() { fl.Unlock() }, nil
	case <-time.After(timeout):
		return nil, errLockTimeout
	}
}

// lockShared takes a shared lock on an existing lock file, so a reader
// sees no append half done. With no lock file (no append ever ran, or a
// copied state root without one) there is nothing to wait for.
func lockShared(path string) (func(), error) {
	if _, err := os.Stat(path); isNotExist(err) {
		return func() {}, nil
	}
	fl := flock.New(path)
	if ok, err := fl.TryRLock(); err == nil && ok {
		return func() { fl.Unlock() }, nil
	}
	done := make(chan error, 1)
	go func() { done <- fl.RLock() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("lock ledger: %w", err)
		}
		return func() { fl.Unlock() }, nil
	case <-time.After(LockTimeout):
		return nil, errLockTimeout
	}
}

// writer is one locked append session on a ledger file.
type writer struct {
	l        *Ledger
	sf       sessionFiles
	session  string
	f        *os.File
	headFile *os.File // nil until the head exists
	pack     *os.File // nil until the pack exists
	tree     *fileTree
	n        int64
	end      int64
	last     string
	size     int64 // current file size
	// packEnd is where the committed entries' bundles end in the pack
	// (the head's "pack"); -1 for a head written before it was recorded.
	packEnd int64
	// packDirty says a bundle was written and the pack is not yet synced.
	packDirty bool
	// st is the verified-prefix state this append extends (state.go),
	// nil when the state on disk did not describe the head it read; sum
	// is st's running SHA-256.
	st  *vstate
	sum prefixDigest
}

func (l *Ledger) openWriter(sf sessionFiles, session string) (*writer, error) {
	f, err := openFile(sf.ledger, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	tf, err := openFile(sf.tree, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		f.Close()
		return nil, err
	}
	w := &writer{l: l, sf: sf, session: session, f: f, tree: newFileTree(tf), last: zeroHash}
	if w.headFile, err = openFile(sf.head, os.O_RDWR, 0); err != nil && !isNotExist(err) {
		w.close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		w.close()
		return nil, err
	}
	w.size = st.Size()
	return w, nil
}

func (w *writer) close() {
	w.f.Close()
	w.tree.f.Close()
	if w.headFile != nil {
		w.headFile.Close()
	}
	if w.pack != nil {
		w.pack.Close()
	}
}

// openPackFile opens the session's pack, creating it, once per append.
func (w *writer) openPackFile() error {
	if w.pack != nil {
		return nil
	}
	p, err := openPack(w.sf.artifacts)
	if err != nil {
		return fmt.Errorf("open artifact pack: %w", err)
	}
	w.pack = p
	return nil
}

// storeArtifacts appends one bundle to the session's pack at packEnd,
// key material in the artifacts replaced (redact.go); it returns the
// manifest digest, the bundle's end and the names of the artifacts that
// were redacted. inPlace bytes already at packEnd become its first file,
// named "torn-pack" (see seal).
func (w *writer) storeArtifacts(arts []Artifact, inPlace int64) (string, int64, []string, error) {
	if err := w.openPackFile(); err != nil {
		return "", 0, nil, err
	}
	if w.packEnd < 0 {
		end, err := w.pack.Seek(0, io.SeekEnd)
		if err != nil {
			return "", 0, nil, fmt.Errorf("open artifact pack: %w", err)
		}
		w.packEnd = end
	}
	m, end, redacted, err := writeBundle(w.pack, w.packEnd, inPlace, arts, w.l.keys.secrets())
	if err != nil {
		return "", 0, nil, err
	}
	w.packEnd, w.packDirty = end, true
	return m, end, redacted, nil
}

// recover brings the writer to the ledger's true end: it reads the signed
// head, adopts complete valid entries written after it whose bundles are
// intact (a crash after the fsyncs, before the head's write), and seals
// whatever remains in the ledger or the pack.
func (w *writer) recover() error {
	if w.resume() { // group.go
		return nil
	}
	c, err := w.readHead()
	switch {
	case isNotExist(err):
		// No head: only a new ledger may lack one.
		if w.size > 0 {
			return fmt.Errorf("%w: the ledger has entries but its signed head is missing; run 'docket verify --session %s'", ErrTampered, w.session)
		}
		w.packEnd = 0
		if err := w.l.registerSession(w.session); err != nil {
			return err
		}
		w.startState(nil)
	case err != nil:
		return fmt.Errorf("%w: head: %v", ErrTampered, err)
	default:
		if c.Origin != Origin(w.session) || c.End < 0 || (c.Size > 0 && c.Last == "") {
			return fmt.Errorf("%w: head does not describe this ledger", ErrTampered)
		}
		if w.size < c.End {
			return fmt.Errorf("%w (head covers %d bytes, file has %d); run 'docket verify --session %s'", ErrTruncated, c.End, w.size, w.session)
		}
		w.n, w.end, w.packEnd = c.Size, c.End, c.Pack
		if c.Last != "" {
			w.last = c.Last
		}
		if !w.tree.consistent(c.Size, c.Root) {
			if err := w.rebuildTree(c); err != nil {
				return err
			}
		}
		if st, err := w.l.readState(w.sf, w.session); err == nil {
			w.startState(st)
		}
	}
	packSize := int64(0)
	packPath := filepath.Join(w.sf.artifacts, PackName)
	if p, err := openFile(packPath, os.O_RDWR, 0); err == nil {
		w.pack = p // kept for the bundle this append writes
		st, err := p.Stat()
		if err != nil {
			return fmt.Errorf("stat artifact pack: %w", err)
		}
		packSize = st.Size()
	} else if st, err := os.Stat(packPath); err == nil {
		packSize = st.Size() // not writable: an append without artifacts still can
	} else if !isNotExist(err) {
		return fmt.Errorf("stat artifact pack: %w", err)
	}
	if w.packEnd > packSize {
		return fmt.Errorf("%w: the artifact pack is shorter (%d bytes) than its signed head says (%d); run 'docket verify --session %s'", ErrTruncated, packSize, w.packEnd, w.session)
	}
	if w.size == w.end && (w.packEnd < 0 || w.packEnd == packSize) {
		return nil
	}
	if w.size > w.end {
		clear(w.tree.known)
		if err := w.tree.f.Truncate(tlogStoredBytes(w.n)); err != nil {
			return fmt.Errorf("trim tree hashes: %w", err)
		}
		adopted, err := w.adopt(io.NewSectionReader(w.f, w.end, w.size-w.end), packSize)
		if err != nil {
			return err
		}
		if adopted > 0 {
			if err := w.syncAdopted(); err != nil { // group.go
				return err
			}
			if err := w.writeHead(); err != nil {
				return err
			}
		}
	}
	if w.end < w.size || (w.packEnd >= 0 && w.packEnd < packSize) {
		return w.seal(packSize)
	}
	return nil
}

// readHead is readHead on the open head file; a missing head is
// fs.ErrNotExist.
func (w *writer) readHead() (*Checkpoint, error) {
	if w.headFile == nil {
		return nil, fs.ErrNotExist
	}
	b, err := readAllAt(w.headFile)
	if err != nil {
		return nil, err
	}
	c, _, err := parseHead(b, w.l.keys.headVerifiers())
	return c, err
}

// adopt appends to the tree every complete, valid entry at the tail whose
// bundle is intact and next in the pack, in order, stopping at the first
// that is not.
func (w *writer) adopt(tail *io.SectionReader, packSize int64) (int, error) {
	data, err := io.ReadAll(io.LimitReader(tail, 64<<20))
	if err != nil {
		return 0, fmt.Errorf("read ledger tail: %w", err)
	}
	adopted := 0
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return adopted, nil
		}
		line := data[:i]
		e, err := ParseEntry(line)
		if err != nil || w.checkNext(e) != nil || !w.bundleIntact(e, packSize) {
			return adopted, nil
		}
		if _, err := w.tree.add(w.n, line); err != nil {
			return adopted, err
		}
		w.extendState(line, e)
		w.n++
		w.end += int64(i) + 1
		w.last = e.Hash
		if e.Manifest != "" {
			w.packEnd = e.Artifacts
		}
		data = data[i+1:]
		adopted++
	}
}

// bundleIntact reports whether e's bundle is complete, next in the pack,
// and matches its manifest: the line may have reached the disk before the
// bundle did.
func (w *writer) bundleIntact(e *Entry, packSize int64) bool {
	if e.Manifest == "" {
		return true
	}
	if w.openPackFile() != nil {
		return false
	}
	b, err := readBundle(w.pack, packSize, e.Artifacts, e.Manifest)
	if err != nil || (w.packEnd >= 0 && b.start != w.packEnd) {
		return false
	}
	_, err = b.check(make([]byte, 64<<10))
	return err == nil
}

// checkNext verifies that e is the valid next entry of this ledger.
func (w *writer) checkNext(e *Entry) error {
	if e.Session != w.session || e.Seq != uint64(w.n) || e.Prev != w.last {
		return ErrTampered
	}
	h, err := entryHash(e)
	if err != nil || h != e.Hash {
		return ErrTampered
	}
	key, ok := w.l.keys.hmacKeyFor(e.KeyID)
	if !ok || mac(key, e.Session, e.Seq, e.Hash) != e.MAC {
		return ErrTampered
	}
	return nil
}

// seal records a seal entry for the bytes no entry accounts for: the
// ledger's bytes after the last valid entry are moved into its bundle as
// the artifact "torn" (key material redacted), and the pack's bytes after
// the last bundle stay where they are and become the bundle's first file,
// "torn-pack".
func (w *writer) seal(packSize int64) error {
	body := map[string]any{}
	var reasons []string
	var arts []Artifact
	var inPlace int64
	if w.packEnd >= 0 && packSize > w.packEnd {
		inPlace = packSize - w.packEnd
		if err := w.openPackFile(); err != nil {
			return fmt.Errorf("seal artifact pack: %w", err)
		}
		sum, err := sha256Section(io.NewSectionReader(w.pack, w.packEnd, inPlace))
		if err != nil {
			return fmt.Errorf("seal artifact pack: %w", err)
		}
		body["pack_offset"], body["pack_length"], body["pack_sha256"] = w.packEnd, inPlace, sum
		reasons = append(reasons, "unaccounted bytes at the end of the artifact pack")
	}
	if length := w.size - w.end; length > 0 {
		sum, err := sha256Section(io.NewSectionReader(w.f, w.end, length))
		if err != nil {
			return fmt.Errorf("seal torn tail: %w", err)
		}
		body["offset"], body["length"], body["sha256"] = w.end, length, sum
		reasons = append(reasons, "torn or invalid tail")
		arts = []Artifact{{Name: "torn", Data: io.NewSectionReader(w.f, w.end, length)}}
	}
	body["reason"] = strings.Join(reasons, "; ")
	m, at, redacted, err := w.storeArtifacts(arts, inPlace)
	if err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	if len(redacted) > 0 {
		body["redacted"] = redacted
	}
	if err := w.f.Truncate(w.end); err != nil {
		return fmt.Errorf("seal torn tail: %w", err)
	}
	w.size = w.end
	b, err := canonjson.Marshal(body)
	if err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	e := &Entry{V: Version, Session: w.session, Kind: KindSeal, Runtime: "docket", Manifest: m, Artifacts: at, Body: b}
	return w.write(e)
}

func sha256Section(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// write appends e as the next entry: line, fsync, tree, signed head.
//
// One fsync per file, run at the same time: the pack's (when this append
// wrote a bundle) in a goroutine while the line is synced. The head is
// written only after both are durable. A crash before that leaves a line
// the next append adopts only if its bundle is intact (bundleIntact), and
// seals otherwise; so the ordering between the two files does not matter.
//
// Before either fsync, the write-out of both files is started
// (startWriteback): their new blocks are then allocated in the same
// journal transaction, so on ext4 the first fsync's commit covers both
// and the second has no commit of its own to wait for (about a third
// less time in the two fsyncs here). It only starts I/O early; both
// fsyncs still run and are waited for before the head.
func (w *writer) write(e *Entry) error {
	var packSync chan error
	syncPack := w.packDirty && w.syncs() // group.go
	if syncPack {
		startWriteback(w.pack)
	}
	w.packDirty = false
	waitPack := func() error {
		if packSync == nil {
			return nil
		}
		err := <-packSync
		packSync = nil
		if err != nil {
			return fmt.Errorf("sync artifacts: %w", err)
		}
		return nil
	}
	defer waitPack()
	e.Seq = uint64(w.n)
	e.Prev = w.last
	e.KeyID = w.l.keys.hmacID
	e.Time = w.l.now().UTC().Format(time.RFC3339Nano)
	e.Hash, e.MAC = "", ""
	h, err := entryHash(e)
	if err != nil {
		return err
	}
	e.Hash = h
	e.MAC = mac(w.l.keys.hmacKey, e.Session, e.Seq, e.Hash)
	line, err := encodeEntry(e)
	if err != nil {
		return err
	}
	if w.l.testingOnlyBeforeWrite != nil {
		w.l.testingOnlyBeforeWrite(line)
	}
	if _, err := w.f.WriteAt(append(line, '\n'), w.end); err != nil {
		w.f.Truncate(w.end)
		return fmt.Errorf("write entry: %w", err)
	}
	if syncPack {
		startWriteback(w.f)
		packSync = make(chan error, 1)
		go func(f *os.File) { packSync <- syncData(f) }(w.pack)
	}
	if w.syncs() {
		if err := syncData(w.f); err != nil {
			w.f.Truncate(w.end)
			return fmt.Errorf("sync ledger: %w", err)
		}
	}
	if err := waitPack(); err != nil {
		w.f.Truncate(w.end)
		return err
	}
	if _, err := w.tree.add(w.n, line); err != nil {
		return err
	}
	w.extendState(line, e)
	w.n++
	w.end += int64(len(line)) + 1
	w.size = w.end
	w.last = e.Hash
	return w.head() // group.go
}

// signedHead is the head of the writer's current state, signed.
func (w *writer) signedHead() ([]byte, error) {
	root, err := treeRoot(w.tree, w.n)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Origin: Origin(w.session), Size: w.n, Root: root, End: w.end, Last: w.last, Pack: w.packEnd}
	return signCheckpoint(c, newHeadMAC(w.l.keys.hmacKey))
}

func (w *writer) writeHead() error {
	msg, err := w.signedHead()
	if err != nil {
		return err
	}
	if w.headFile == nil {
		if w.headFile, err = openFile(w.sf.head, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
			return fmt.Errorf("write ledger head: %w", err)
		}
	}
	if err := writeHeadSlotTo(w.headFile, w.n, msg); err != nil {
		return fmt.Errorf("write ledger head: %w", err)
	}
	return nil
}

// rebuildTree recomputes the stored hashes of the first c.Size entries.
func (w *writer) rebuildTree(c *Checkpoint) error {
	var m memTree
	err := scanLines(io.NewSectionReader(w.f, 0, c.End), func(line []byte, _ bool) error {
		if m.n < c.Size {
			return m.add(line)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuild tree: %w", err)
	}
	if root, err := m.root(c.Size); err != nil || root != c.Root {
		return fmt.Errorf("%w: entries do not match the signed head", ErrTampered)
	}
	return w.tree.rebuild(&m)
}
