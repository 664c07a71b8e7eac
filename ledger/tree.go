package ledger

import (
	"fmt"
	"os"

	"golang.org/x/mod/sumdb/tlog"
)

// The Merkle tree over a ledger is RFC 6962's, computed by
// golang.org/x/mod/sumdb/tlog: leaf i is RecordHash(line i without its
// newline). Its stored hashes (tlog's layout) are kept in <session>.tree
// beside the ledger, 32 bytes each, so an append reads O(log n) hashes
// instead of the file. The .tree file is derived data: verification never
// trusts it and recomputes the tree from the entries.

// memTree is an in-memory tree; its zero value is an empty tree.
type memTree struct {
	n      int64
	stored []tlog.Hash
}

func (t *memTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(t.stored)) {
			return nil, fmt.Errorf("tree hash %d out of range", x)
		}
		out[i] = t.stored[x]
	}
	return out, nil
}

func (t *memTree) add(line []byte) error {
	hs, err := tlog.StoredHashes(t.n, line, t)
	if err != nil {
		return err
	}
	t.stored = append(t.stored, hs...)
	t.n++
	return nil
}

func (t *memTree) root(n int64) (tlog.Hash, error) { return tlog.TreeHash(n, t) }

// fileTree is the on-disk stored-hash file of one ledger, open for one
// locked append. The hashes it reads or writes are kept: an append
// computes the root of the tree it found and of the tree it leaves, and
// both need mostly the same few hashes.
type fileTree struct {
	f     *os.File
	known map[int64]tlog.Hash
}

func newFileTree(f *os.File) *fileTree {
	return &fileTree{f: f, known: make(map[int64]tlog.Hash, 16)}
}

func (t *fileTree) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if h, ok := t.known[x]; ok {
			out[i] = h
			continue
		}
		if _, err := t.f.ReadAt(out[i][:], x*tlog.HashSize); err != nil {
			return nil, fmt.Errorf("read tree hash %d: %w", x, err)
		}
		t.known[x] = out[i]
	}
	return out, nil
}

// add appends the stored hashes for leaf n and returns the new root.
func (t *fileTree) add(n int64, line []byte) (tlog.Hash, error) {
	hs, err := tlog.StoredHashes(n, line, t)
	if err != nil {
		return tlog.Hash{}, err
	}
	at := tlog.StoredHashCount(n)
	buf := make([]byte, 0, len(hs)*tlog.HashSize)
	for _, h := range hs {
		buf = append(buf, h[:]...)
	}
	if _, err := t.f.WriteAt(buf, at*tlog.HashSize); err != nil {
		clear(t.known) // the file's state is unknown now
		return tlog.Hash{}, fmt.Errorf("write tree hashes: %w", err)
	}
	for i, h := range hs {
		t.known[at+int64(i)] = h
	}
	return tlog.TreeHash(n+1, t)
}

// consistent reports whether the file holds exactly the stored hashes of
// an n-leaf tree whose root is root.
func (t *fileTree) consistent(n int64, root tlog.Hash) bool {
	st, err := t.f.Stat()
	if err != nil || st.Size() != tlog.StoredHashCount(n)*tlog.HashSize {
		return false
	}
	if n == 0 {
		return true
	}
	got, err := tlog.TreeHash(n, t)
	return err == nil && got == root
}

// rebuild rewrites the file from a memTree.
func (t *fileTree) rebuild(m *memTree) error {
	clear(t.known)
	if err := t.f.Truncate(0); err != nil {
		return fmt.Errorf("rebuild tree hashes: %w", err)
	}
	buf := make([]byte, 0, len(m.stored)*tlog.HashSize)
	for _, h := range m.stored {
		buf = append(buf, h[:]...)
	}
	if _, err := t.f.WriteAt(buf, 0); err != nil {
		return fmt.Errorf("rebuild tree hashes: %w", err)
	}
	return nil
}
