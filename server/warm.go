package server

import (
	"path/filepath"
	"sync"
	"time"

	"github.com/docket/docket/internal/regular"
)

// Warm state of the hook socket: what every hook call would otherwise
// load from disk (the policy set, the claim lexicon and binding, the
// ledger keys) is built once and kept while the files it came from are
// unchanged. Whether they changed is decided by a stat fingerprint taken
// on every call: for each watched path (and, for a directory, each
// entry in it) its lstat and stat identity — device, inode, mode, size,
// mtime and ctime in nanoseconds. Any difference reloads, so same-user
// mode, where anyone may edit the files, stays correct: a call never
// sees state older than the files at the moment it started.

// RacyWindow is how recent a file's mtime or ctime may be for state
// built from it to be cached: within it a rewrite could keep every
// stat field (coarse timestamps, same size), so state built from a file
// that young is used once and not kept. A variable for tests, whose
// files are all young.
var RacyWindow = 2 * time.Second

// Fingerprint returns the stat identity of paths and whether every one
// of them is settled (older than RacyWindow at now). A path that does
// not exist fingerprints as absent; a directory adds each entry's
// identity (one level, names sorted), so a file appearing, vanishing or
// changing in it changes the fingerprint.
func Fingerprint(now time.Time, paths ...string) (fp string, settled bool) {
	b := make([]byte, 0, 64*len(paths))
	settled = true
	add := func(p string) (dir bool, ident []byte, latest time.Time) {
		start := len(b)
		b = append(append(b, p...), 0)
		var ok bool
		b, dir, latest, ok = identity(b, p)
		b = append(b, '\n')
		if ok && now.Sub(latest) < RacyWindow {
			settled = false
		}
		return ok && dir, b[start:], latest
	}
	for _, p := range paths {
		dir, ident, latest := add(p)
		if !dir {
			continue
		}
		names, err := listDir(p, ident, latest)
		if err != nil {
			b = append(b, "unreadable\n"...)
			settled = false
			continue
		}
		for _, n := range names {
			add(filepath.Join(p, n))
		}
	}
	return string(b), settled
}

// listings keeps the sorted names of directories Fingerprint listed,
// each with the identity the directory had: creating, removing or
// renaming an entry sets a directory's mtime and ctime to the current
// time, so while the identity is unchanged and older than
// listingSettle (far above the kernel's timestamp granularity) the
// names are the same, and a warm call stats the entries without
// reading the directory again.
var listings struct {
	sync.Mutex
	m     map[string]listing
	reads int // directories read, for tests
}

type listing struct {
	ident string
	names []string
}

const (
	listingSettle = 2 * time.Second
	maxListings   = 4096
)

// listingNow is the listing cache's clock; a test moves it.
var listingNow = time.Now

// listDir returns the sorted names in directory p, whose identity line
// is ident and whose latest mtime or ctime is latest.
func listDir(p string, ident []byte, latest time.Time) ([]string, error) {
	settled := listingNow().Sub(latest) >= listingSettle
	listings.Lock()
	l, ok := listings.m[p]
	listings.Unlock()
	if settled && ok && l.ident == string(ident) {
		return l.names, nil
	}
	names, err := regular.DirNames(p)
	listings.Lock()
	defer listings.Unlock()
	listings.reads++
	if err != nil || !settled {
		delete(listings.m, p)
		return names, err
	}
	if listings.m == nil || len(listings.m) >= maxListings {
		listings.m = map[string]listing{}
	}
	listings.m[p] = listing{ident: string(ident), names: names}
	return names, nil
}

// Warm keeps values built from files, one per key, each rebuilt when
// the fingerprint of its files changes. It is safe for concurrent use;
// two calls may build the same value at once (the later one is kept).
type Warm[T any] struct {
	mu      sync.Mutex
	entries map[string]warmEntry[T]
	// Loads counts builds, for tests.
	Loads int
}

type warmEntry[T any] struct {
	fp string
	v  T
}

// maxWarmEntries bounds the keys kept (project-specific policy sets):
// past it the map is cleared, so an agent naming many projects costs
// reloads, never memory.
const maxWarmEntries = 256

// Get returns the value for key, built by load from the files at paths
// (fingerprinted before load runs, so a change during the load reloads
// next time). An error is returned and never kept.
func (w *Warm[T]) Get(key string, paths []string, load func() (T, error)) (T, error) {
	fp, settled := Fingerprint(time.Now(), paths...)
	w.mu.Lock()
	e, ok := w.entries[key]
	w.mu.Unlock()
	if ok && e.fp == fp {
		return e.v, nil
	}
	v, err := load()
	if err != nil {
		return v, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.Loads++
	if !settled {
		delete(w.entries, key)
		return v, nil
	}
	if w.entries == nil || len(w.entries) >= maxWarmEntries {
		w.entries = map[string]warmEntry[T]{}
	}
	w.entries[key] = warmEntry[T]{fp: fp, v: v}
	return v, nil
}
