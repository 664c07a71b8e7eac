package worktree

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

var timeNow = time.Now

// cacheMagic starts a stat cache file. The file is: cacheMagic, the
// tree root and a newline, a uvarint entry count, then per entry a
// uvarint path length, the path, the stat fields (size, mtime and ctime
// in ns as varints; inode, device and mode as uvarints) and the 32-byte
// content sum; finally HMAC-SHA256 over everything before it.
const cacheMagic = "docket-worktree-cache v1\n"

// maxCacheSize bounds what loadCache reads.
const maxCacheSize = 256 << 20

type cacheEntry struct {
	st  stat
	sum [32]byte
}

// cacheRec is one cache entry with its path; a cache is a slice of them
// sorted by path.
type cacheRec struct {
	name string
	cacheEntry
}

// CachePath is the stat cache file for root under dir (one file per
// project root).
func CachePath(dir, root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(dir, hex.EncodeToString(sum[:12])+".cache")
}

// loadCache returns the entries of a cache file that is intact, MACed
// with key and made for root; anything else reads as an empty cache.
func loadCache(path string, key []byte, root string) []cacheRec {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > maxCacheSize || len(b) < len(cacheMagic)+sha256.Size {
		return nil
	}
	body, tag := b[:len(b)-sha256.Size], b[len(b)-sha256.Size:]
	m := hmac.New(sha256.New, key)
	m.Write(body)
	if !hmac.Equal(m.Sum(nil), tag) {
		return nil
	}
	entries, err := decodeCache(body, root)
	if err != nil {
		return nil
	}
	return entries
}

var errBadCache = errors.New("malformed stat cache")

func decodeCache(b []byte, root string) ([]cacheRec, error) {
	hdr := cacheMagic + root + "\n"
	if !strings.HasPrefix(string(b), hdr) {
		return nil, errBadCache
	}
	p := b[len(hdr):]
	names := string(p) // one allocation; every path is a substring of it
	base := len(b) - len(hdr)
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return nil, errBadCache
	}
	p = p[k:]
	out := make([]cacheRec, 0, n)
	var prev string
	for range n {
		l, k := binary.Uvarint(p)
		if k <= 0 || l > uint64(len(p)-k) {
			return nil, errBadCache
		}
		off := base - len(p) + k
		name := names[off : off+int(l)]
		p = p[k+int(l):]
		if name <= prev && len(out) > 0 {
			return nil, errBadCache
		}
		var e cacheEntry
		var vs [3]int64
		for i := range vs {
			v, k := binary.Varint(p)
			if k <= 0 {
				return nil, errBadCache
			}
			vs[i], p = v, p[k:]
		}
		var us [3]uint64
		for i := range us {
			v, k := binary.Uvarint(p)
			if k <= 0 {
				return nil, errBadCache
			}
			us[i], p = v, p[k:]
		}
		if len(p) < 32 {
			return nil, errBadCache
		}
		e.st = stat{size: vs[0], mtime: vs[1], ctime: vs[2], ino: us[0], dev: us[1], mode: uint32(us[2])}
		copy(e.sum[:], p[:32])
		p = p[32:]
		out = append(out, cacheRec{name, e})
		prev = name
	}
	if len(p) != 0 {
		return nil, errBadCache
	}
	return out, nil
}

// encodeCache encodes entries, which must be sorted by path.
func encodeCache(root string, entries []cacheRec) []byte {
	b := make([]byte, 0, len(cacheMagic)+len(root)+len(entries)*100)
	b = append(b, cacheMagic...)
	b = append(b, root...)
	b = append(b, '\n')
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e.name)))
		b = append(b, e.name...)
		b = binary.AppendVarint(b, e.st.size)
		b = binary.AppendVarint(b, e.st.mtime)
		b = binary.AppendVarint(b, e.st.ctime)
		b = binary.AppendUvarint(b, e.st.ino)
		b = binary.AppendUvarint(b, e.st.dev)
		b = binary.AppendUvarint(b, uint64(e.st.mode))
		b = append(b, e.sum[:]...)
	}
	return b
}

// saveCache replaces the cache file atomically.
func saveCache(path string, key []byte, root string, entries []cacheRec) error {
	b := encodeCache(root, entries)
	m := hmac.New(sha256.New, key)
	m.Write(b)
	b = m.Sum(b)
	return writeAtomic(path, b)
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// SaveManifest stores the manifest of t under dir, named by its digest,
// so a later scan can name the paths that changed. Manifests are
// self-authenticating: LoadManifest checks the content against the name.
func SaveManifest(dir string, t *Tree) error {
	path, err := manifestPath(dir, t.Digest)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil {
		now := timeNow()
		_ = os.Chtimes(path, now, now) // keep recently used manifests from pruning
		return nil
	}
	if err := writeAtomic(path, Manifest(t.Files)); err != nil {
		return err
	}
	pruneManifests(dir, MaxManifests)
	return nil
}

// MaxManifests is how many manifests SaveManifest keeps (newest first).
const MaxManifests = 64

// LoadManifest returns the files of the tree whose digest is d, when its
// manifest is stored under dir and matches d.
func LoadManifest(dir, d string) ([]File, error) {
	path, err := manifestPath(dir, d)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load manifest: %w", err)
	}
	sum := sha256.Sum256(b)
	if "sha256:"+hex.EncodeToString(sum[:]) != d {
		return nil, errors.New("load manifest: content does not match its digest")
	}
	return ParseManifest(b)
}

func manifestPath(dir, d string) (string, error) {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return "", fmt.Errorf("malformed tree digest %q", d)
	}
	if _, err := hex.DecodeString(h); err != nil {
		return "", fmt.Errorf("malformed tree digest %q", d)
	}
	return filepath.Join(dir, h+".manifest"), nil
}

func pruneManifests(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type m struct {
		name string
		t    int64
	}
	var ms []m
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".manifest") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			ms = append(ms, m{e.Name(), fi.ModTime().UnixNano()})
		}
	}
	if len(ms) <= keep {
		return
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].t > ms[j].t })
	for _, x := range ms[keep:] {
		os.Remove(filepath.Join(dir, x.name))
	}
}
