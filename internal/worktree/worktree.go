// Package worktree computes a content digest of a project's working tree:
// every tracked and untracked file, honouring .gitignore files and
// .git/info/exclude, never .git itself. A validator_pass records the
// digest of the tree it validated; the stop gate recomputes it, and any
// difference makes the pass stale, whatever command caused it.
//
// Re-checks are cheap: a stat cache (size, mtime, ctime, inode, mode and
// the content hash of each file) lets a scan hash only the files whose
// stat changed. The cache is MACed with a key from the state root, so a
// process without that key cannot make a changed file look unchanged,
// and entries stamped within two seconds of their scan are never trusted
// (the racy-git problem: a write in the same timestamp tick as the scan
// would otherwise keep the old stat).
//
// No git process is run; git need not be installed.
package worktree

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/internal/regular"
)

// Version names the digest scheme; it prefixes every manifest.
const Version = "docket-worktree v1"

// DefaultMaxFiles bounds a scan: a tree with more files than this has no
// digest (ErrTooLarge).
const DefaultMaxFiles = 500000

// ErrTooLarge is returned when a tree has more files than Options.MaxFiles.
var ErrTooLarge = errors.New("working tree too large to digest")

// File is one file of a tree.
type File struct {
	Path string // slash-separated, relative to the root
	Mode byte   // 'f' regular, 'x' executable, 'l' symlink
	Sum  [32]byte
}

// Tree is a scanned working tree.
type Tree struct {
	Root   string // absolute, symlinks resolved
	Digest string // "sha256:" and 64 hex digits
	Files  []File // sorted by Path
	// Hashed counts the files whose content was read in this scan (the
	// rest came from the stat cache).
	Hashed int

	walked []walkFile // the listed files with their stat, sorted by path
}

// Options tune a scan. The zero value scans without a cache.
type Options struct {
	// CacheFile is the stat cache path; "" for none. It is read only when
	// CacheKey is set, and rewritten when the scan learned something.
	CacheFile string
	// CacheKey authenticates the cache (HMAC-SHA256). Without it no cache
	// entry is trusted and every file is hashed.
	CacheKey []byte
	// Exclude lists absolute paths (files or directories) left out, e.g.
	// the state root when it lies inside the project.
	Exclude []string
	// MaxFiles bounds the number of files; 0 means DefaultMaxFiles.
	MaxFiles int
	// Now is the clock used for the racy-entry rule; nil means time.Now.
	Now func() time.Time
}

// racyWindow: a cache entry whose mtime or ctime is not at least this
// much older than its scan's start is not stored, so a later write with
// a coarse timestamp can never reproduce its stat.
const racyWindow = 2 * time.Second

// Scan digests the working tree at root (which must exist).
func Scan(root string, o Options) (*Tree, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	stamp := now().UnixNano()
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("scan tree: %w", err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	max := o.MaxFiles
	if max <= 0 {
		max = DefaultMaxFiles
	}
	w := &walker{root: abs, max: max}
	for _, x := range o.Exclude {
		if x, err := filepath.Abs(x); err == nil {
			w.exclude = append(w.exclude, x)
			if r, err := filepath.EvalSymlinks(x); err == nil && r != x {
				w.exclude = append(w.exclude, r)
			}
		}
	}
	var exclude *File
	var patterns []pattern
	if data, path := readInfoExclude(abs); path != "" {
		patterns = parseIgnore(data, "")
		exclude = &File{Path: ".git/info/exclude", Mode: 'f', Sum: sha256.Sum256(data)}
	}
	if err := w.walkDirs(patterns); err != nil {
		return nil, err
	}
	if err := w.addTracked(readTracked(abs)); err != nil {
		return nil, err
	}

	var cache []cacheRec
	if o.CacheFile != "" && len(o.CacheKey) > 0 {
		cache = loadCache(o.CacheFile, o.CacheKey, abs)
	}
	t := &Tree{Root: abs, Files: make([]File, len(w.files))}
	var todo []int
	hit := make([]bool, len(w.files))         // the sum came from a matching cache entry
	for i, j := 0, 0; i < len(w.files); i++ { // both sorted by path: merge
		f := w.files[i]
		t.Files[i] = File{Path: f.rel, Mode: f.st.fileMode()}
		for j < len(cache) && cache[j].name < f.rel {
			j++
		}
		if j < len(cache) && cache[j].name == f.rel && cache[j].st == f.st {
			t.Files[i].Sum, hit[i] = cache[j].sum, true
			continue
		}
		todo = append(todo, i)
	}
	fresh := make([]bool, len(w.files)) // content hashed now and stat stable: cacheable
	if err := hashAll(abs, w.files, todo, t.Files, fresh); err != nil {
		return nil, err
	}
	t.Hashed, t.walked = len(todo), w.files
	if exclude != nil { // insert in order: the rest is sorted already
		i, _ := slices.BinarySearchFunc(t.Files, exclude.Path, func(f File, p string) int { return strings.Compare(f.Path, p) })
		t.Files = slices.Insert(t.Files, i, *exclude)
	}
	t.Digest = digest(t.Files)

	if o.CacheFile != "" && len(o.CacheKey) > 0 && (len(todo) > 0 || len(cache) != len(w.files)) {
		next := make([]cacheRec, 0, len(w.files))
		limit := stamp - int64(racyWindow)
		for i, f := range w.files {
			if f.st.ctime == 0 || f.st.mtime >= limit || f.st.ctime >= limit {
				continue
			}
			if hit[i] || fresh[i] {
				next = append(next, cacheRec{name: f.rel, cacheEntry: cacheEntry{st: f.st, sum: fileSum(t, f.rel)}})
			}
		}
		// A cache that cannot be written only costs the next scan time.
		_ = saveCache(o.CacheFile, o.CacheKey, abs, next)
	}
	return t, nil
}

func fileSum(t *Tree, rel string) [32]byte {
	i, _ := slices.BinarySearchFunc(t.Files, rel, func(f File, p string) int { return strings.Compare(f.Path, p) })
	return t.Files[i].Sum
}

// stat is what the cache compares to decide a file is unchanged.
type stat struct {
	size, mtime, ctime int64
	ino, dev           uint64
	mode               uint32
}

func (s stat) fileMode() byte {
	m := fs.FileMode(s.mode)
	switch {
	case m&fs.ModeSymlink != 0:
		return 'l'
	case m&0o111 != 0:
		return 'x'
	}
	return 'f'
}

type walkFile struct {
	rel string
	st  stat
}

type walker struct {
	root    string
	exclude []string
	max     int

	wg    sync.WaitGroup
	sem   chan struct{}
	mu    sync.Mutex
	files []walkFile
	err   error
}

// walkDirs lists the tree below w.root, several directories at a time;
// each directory's .gitignore applies to everything below it.
func (w *walker) walkDirs(patterns []pattern) error {
	w.sem = make(chan struct{}, walkers)
	w.wg.Add(1)
	w.dir(w.root, "", patterns)
	w.wg.Wait()
	slices.SortFunc(w.files, func(a, b walkFile) int { return strings.Compare(a.rel, b.rel) })
	return w.err
}

// walkers is how many directories are listed at once.
const walkers = 4

func (w *walker) dir(dir, rel string, patterns []pattern) {
	defer w.wg.Done()
	w.sem <- struct{}{}
	files, subdirs, pats, err := w.list(dir, rel, patterns)
	<-w.sem
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	if w.err != nil {
		return
	}
	w.files = append(w.files, files...)
	if len(w.files) > w.max {
		w.err = fmt.Errorf("scan tree %s: %w (more than %d files)", w.root, ErrTooLarge, w.max)
		return
	}
	for _, d := range subdirs {
		w.wg.Add(1)
		go w.dir(filepath.Join(dir, filepath.Base(d)), d, pats)
	}
}

// list reads one directory: its files (with stat), the subdirectories
// to descend into, and the patterns in force below it.
func (w *walker) list(dir, rel string, patterns []pattern) (files []walkFile, subdirs []string, pats []pattern, err error) {
	d, err := regular.OpenDir(dir) // a FIFO swapped in fails, never blocks
	if err != nil {
		if rel != "" && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
			return nil, nil, patterns, nil // vanished or unreadable: absent
		}
		return nil, nil, nil, fmt.Errorf("scan tree: %w", err)
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		if rel != "" {
			return nil, nil, patterns, nil
		}
		return nil, nil, nil, fmt.Errorf("scan tree: %w", err)
	}
	pats = patterns
	for _, e := range ents {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			if data, err := regular.ReadFile(nil, filepath.Join(dir, ".gitignore"), maxGitFile); err == nil {
				if own := parseIgnore(data, rel); len(own) > 0 {
					pats = append(append(make([]pattern, 0, len(patterns)+len(own)), patterns...), own...)
				}
			}
			break
		}
	}
	for _, e := range ents {
		name := e.Name()
		if name == ".git" {
			continue
		}
		r := name
		if rel != "" {
			r = rel + "/" + name
		}
		if w.excluded(dir, name) {
			continue
		}
		t := e.Type()
		if t.IsDir() {
			if !ignored(pats, r, true) {
				subdirs = append(subdirs, r)
			}
			continue
		}
		if !t.IsRegular() && t&fs.ModeSymlink == 0 {
			continue // sockets, fifos, devices
		}
		if ignored(pats, r, false) {
			continue
		}
		st, err := lstatAt(d, dir, name)
		if err != nil {
			continue // vanished since the listing
		}
		files = append(files, walkFile{rel: r, st: st})
	}
	return files, subdirs, pats, nil
}

// addTracked adds the tracked files the walk left out because an ignore
// rule matched them (git keeps tracking such files). tracked is sorted.
func (w *walker) addTracked(tracked []string) error {
	var extra []walkFile
	i := 0
	for _, p := range tracked {
		for i < len(w.files) && w.files[i].rel < p {
			i++
		}
		if i < len(w.files) && w.files[i].rel == p {
			continue
		}
		if p == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") || strings.HasSuffix(p, "/.git") ||
			strings.HasPrefix(p, "/") || strings.Contains(p, "../") || p == ".." || strings.HasSuffix(p, "/..") {
			continue
		}
		full := filepath.Join(w.root, filepath.FromSlash(p))
		if w.excludedPath(full) {
			continue
		}
		fi, err := os.Lstat(full)
		if err != nil || !(fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0) {
			continue
		}
		extra = append(extra, walkFile{rel: p, st: statOf(fi)})
	}
	if len(extra) == 0 {
		return nil
	}
	w.files = append(w.files, extra...)
	if len(w.files) > w.max {
		return fmt.Errorf("scan tree %s: %w (more than %d files)", w.root, ErrTooLarge, w.max)
	}
	slices.SortFunc(w.files, func(a, b walkFile) int { return strings.Compare(a.rel, b.rel) })
	return nil
}

// excludedPath reports whether path is, or lies below, an excluded path.
func (w *walker) excludedPath(path string) bool {
	for _, x := range w.exclude {
		if Within(x, path) {
			return true
		}
	}
	return false
}

func (w *walker) excluded(dir, name string) bool {
	for _, x := range w.exclude {
		// cheap test first: x must end in name
		if len(x) == len(dir)+1+len(name) && strings.HasSuffix(x, name) && x == filepath.Join(dir, name) {
			return true
		}
	}
	return false
}

// hashAll hashes files[todo[k]] into out, in parallel.
func hashAll(root string, files []walkFile, todo []int, out []File, fresh []bool) error {
	if len(todo) == 0 {
		return nil
	}
	n := runtime.GOMAXPROCS(0)
	if n > 8 {
		n = 8
	}
	if n > len(todo) {
		n = len(todo)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				sum, stable, err := hashFile(filepath.Join(root, filepath.FromSlash(files[i].rel)), files[i].st)
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					continue
				}
				out[i].Sum, fresh[i] = sum, stable
			}
		}()
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// hashFile hashes one file's content (a symlink's target). stable is
// false when the file changed while it was read, or no longer matches
// the listed stat: the sum is still what was read, but not cacheable.
func hashFile(path string, st stat) (sum [32]byte, stable bool, err error) {
	if fs.FileMode(st.mode)&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return missing(path), false, nil
		}
		// The content a link to a regular file reaches is part of the
		// tree (the target may lie outside it): never cacheable.
		h := sha256.New()
		h.Write([]byte("link\x00" + target))
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			if f, err := regular.Open(path); err == nil {
				c := sha256.New()
				_, err := io.Copy(c, f)
				f.Close()
				if err == nil {
					h.Write([]byte("\x00"))
					h.Write(c.Sum(nil))
				}
			}
		}
		copy(sum[:], h.Sum(nil))
		return sum, false, nil
	}
	f, err := regular.OpenNoFollow(path) // a FIFO or a link swapped in is refused, never waited on
	if err != nil {
		// vanished or replaced by a symlink since the listing: its sum
		// cannot match any earlier content, and the next scan sees it.
		return missing(path), false, nil
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, false, fmt.Errorf("hash %s: %w", path, err)
	}
	copy(sum[:], h.Sum(nil))
	after, err := f.Stat()
	if err != nil {
		return sum, false, nil
	}
	return sum, statOf(after) == st, nil
}

// missing is the sum of a file that was listed but could not be read.
func missing(path string) [32]byte {
	return sha256.Sum256([]byte("unreadable\x00" + path))
}

// Manifest is the canonical byte form of files: Version and a newline,
// then for each file in path order its mode byte, a space, the hex
// SHA-256 of its content, a space, its path and a NUL byte.
func Manifest(files []File) []byte {
	n := len(Version) + 1
	for _, f := range files {
		n += len(f.Path) + 68
	}
	b := make([]byte, 0, n)
	b = append(b, Version...)
	b = append(b, '\n')
	for _, f := range files {
		b = append(b, f.Mode, ' ')
		b = hex.AppendEncode(b, f.Sum[:])
		b = append(b, ' ')
		b = append(b, f.Path...)
		b = append(b, 0)
	}
	return b
}

func digest(files []File) string {
	sum := sha256.Sum256(Manifest(files))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParseManifest decodes Manifest's output.
func ParseManifest(b []byte) ([]File, error) {
	rest, ok := strings.CutPrefix(string(b), Version+"\n")
	if !ok {
		return nil, errors.New("parse manifest: bad header")
	}
	var files []File
	for rest != "" {
		rec, tail, ok := strings.Cut(rest, "\x00")
		if !ok || len(rec) < 68 || rec[1] != ' ' || rec[66] != ' ' {
			return nil, errors.New("parse manifest: malformed record")
		}
		f := File{Mode: rec[0], Path: rec[67:]}
		if (f.Mode != 'f' && f.Mode != 'x' && f.Mode != 'l') || f.Path == "" {
			return nil, errors.New("parse manifest: malformed record")
		}
		if strings.ToLower(rec[2:66]) != rec[2:66] {
			return nil, errors.New("parse manifest: hex digits not lowercase")
		}
		if _, err := hex.Decode(f.Sum[:], []byte(rec[2:66])); err != nil {
			return nil, fmt.Errorf("parse manifest: %w", err)
		}
		if n := len(files); n > 0 && files[n-1].Path >= f.Path {
			return nil, errors.New("parse manifest: records out of order")
		}
		files = append(files, f)
		rest = tail
	}
	return files, nil
}

// Change is one difference between two trees.
type Change struct {
	Path string
	Kind string // "modified", "added", "removed"
}

// Diff lists what changed from old to cur (both sorted by path).
func Diff(old, cur []File) []Change {
	var out []Change
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(old) && old[i].Path < cur[j].Path):
			out = append(out, Change{old[i].Path, "removed"})
			i++
		case i == len(old) || cur[j].Path < old[i].Path:
			out = append(out, Change{cur[j].Path, "added"})
			j++
		default:
			if old[i].Sum != cur[j].Sum || old[i].Mode != cur[j].Mode {
				out = append(out, Change{cur[j].Path, "modified"})
			}
			i, j = i+1, j+1
		}
	}
	return out
}

// readInfoExclude reads $GIT_DIR/info/exclude of the repository at root
// (following a "gitdir:" file and a worktree's commondir). path is ""
// when there is none.
func readInfoExclude(root string) (data []byte, path string) {
	gitDir := filepath.Join(root, ".git")
	st, err := os.Lstat(gitDir)
	if err != nil {
		return nil, ""
	}
	if !st.IsDir() {
		b, err := regular.ReadFile(nil, gitDir, maxGitFile)
		if err != nil {
			return nil, ""
		}
		gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return nil, ""
		}
		if !filepath.IsAbs(gd) {
			gd = filepath.Join(root, gd)
		}
		gitDir = gd
		if c, err := regular.ReadFile(nil, filepath.Join(gd, "commondir"), maxGitFile); err == nil {
			cd := strings.TrimSpace(string(c))
			if !filepath.IsAbs(cd) {
				cd = filepath.Join(gd, cd)
			}
			gitDir = cd
		}
	}
	p := filepath.Join(gitDir, "info", "exclude")
	b, err := regular.ReadFile(nil, p, maxGitFile)
	if err != nil {
		return nil, ""
	}
	return b, p
}

// FindRoot returns the project root of dir: the nearest directory at or
// above it holding a git repository (a .git directory with a HEAD file,
// or a .git file pointing to one with "gitdir:"), else dir itself;
// symlinks resolved. A stray empty .git does not make a root.
func FindRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return filepath.Clean(dir)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	for d := abs; ; {
		if isRepo(filepath.Join(d, ".git")) {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return abs
		}
		d = parent
	}
}

func isRepo(dotgit string) bool {
	st, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return false
	case st.IsDir():
		_, err := os.Stat(filepath.Join(dotgit, "HEAD"))
		return err == nil
	case st.Mode().IsRegular():
		b := make([]byte, 8)
		f, err := regular.Open(dotgit)
		if err != nil {
			return false
		}
		defer f.Close()
		n, _ := io.ReadFull(f, b)
		return string(b[:n]) == "gitdir: "
	}
	return false
}

// Within reports whether path is root or lies below it (both absolute
// and clean).
func Within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}

// Pass is what a validator_pass records about the tree it validated.
type Pass struct {
	// Root is the project root: the nearest directory at or above the
	// validator's working directory holding .git, symlinks resolved.
	Root string `json:"root"`
	// Digest is the tree's digest when it could be computed.
	Digest string `json:"digest,omitempty"`
	Files  int    `json:"files,omitempty"`
	// Error says why there is no digest.
	Error string `json:"error,omitempty"`
}

// Store is a state root's working-tree bookkeeping: stat caches and
// manifests under Dir, the cache's MAC key, and paths every scan leaves
// out (the state root itself). Its zero value scans without a cache and
// keeps no manifests.
type Store struct {
	Dir     string
	Key     []byte
	Exclude []string
}

// Scan digests the tree at root with the store's cache.
func (s Store) Scan(root string) (*Tree, error) {
	o := Options{Exclude: s.Exclude}
	if s.Dir != "" && len(s.Key) > 0 {
		o.CacheFile, o.CacheKey = CachePath(s.Dir, root), s.Key
	}
	return Scan(root, o)
}

// Record digests the project root of cwd for a validator_pass and keeps
// its manifest, so a later stop can name what changed.
func (s Store) Record(cwd string) Pass {
	return s.Begin(cwd).Finish()
}

// Recording is a validation in progress: the tree before the validator
// ran, to compare with the tree after it.
type Recording struct {
	s      Store
	pass   Pass
	before *Tree
}

// Begin digests the project root of cwd before a validator runs.
func (s Store) Begin(cwd string) *Recording {
	r := &Recording{s: s, pass: Pass{Root: FindRoot(cwd)}}
	t, err := s.Scan(r.pass.Root)
	if err != nil {
		r.pass.Error = err.Error()
		return r
	}
	r.before = t
	return r
}

// Finish re-scans the tree after the validator ran and returns what the
// pass records: the digest when the tree is the one it started from,
// and otherwise an error naming what changed or was rewritten while the
// validator ran (a file swapped and restored during the run keeps its
// content but not its ctime, so the run may not have tested this tree).
func (r *Recording) Finish() Pass {
	if r.before == nil {
		return r.pass
	}
	p := r.pass
	after, err := r.s.Scan(p.Root)
	if err != nil {
		p.Error = err.Error()
		return p
	}
	if after.Digest != r.before.Digest {
		p.Error = "the working tree changed while the validator ran: " + describe(Diff(r.before.Files, after.Files))
		return p
	}
	if touched := rewritten(r.before.walked, after.walked); len(touched) > 0 {
		p.Error = "files were rewritten while the validator ran, so it may not have tested this content: " + strings.Join(touched, ", ")
		return p
	}
	p.Digest, p.Files = after.Digest, len(after.Files)
	if r.s.Dir != "" {
		_ = SaveManifest(r.s.Dir, after) // without it a stale reason names no paths
	}
	return p
}

// rewritten lists (up to 5) paths whose stat differs between two scans
// of the same file set.
func rewritten(a, b []walkFile) []string {
	var out []string
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i].rel == b[i].rel && a[i].st != b[i].st {
			if len(out) == 5 {
				out = append(out, "…")
				break
			}
			out = append(out, a[i].rel)
		}
	}
	return out
}

// describe renders the first few changes and their count.
func describe(cs []Change) string {
	var parts []string
	for i, c := range cs {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(cs)-5))
			break
		}
		parts = append(parts, c.Kind+" "+c.Path)
	}
	return strings.Join(parts, ", ")
}

// Manifest loads a stored manifest by digest.
func (s Store) Manifest(digest string) ([]File, error) {
	if s.Dir == "" {
		return nil, errors.New("load manifest: no manifest store")
	}
	return LoadManifest(s.Dir, digest)
}
