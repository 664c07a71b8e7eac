//go:build linux

package policies

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/regular"
)

// A compiled-policy cache file (run/policy-compiled/<kind>[-<paths>].cache)
// is the encoding (compiled_codec.go) of:
//
//	header     compiledHeader
//	build      compiledFormat, the embedded defaults' digest and the
//	           binary's version and VCS revision: another docket's
//	           compiled forms are not this one's
//	root       the state root it was built for
//	kind       "gate" or "judge"
//	stamp      when it was written (Unix ns)
//	files      the policy files the approval covers (policyFileNames)
//	extra      further files the payload was built from, by absolute path
//	           (the judge's delegate judges.md files; absent ones too)
//	fp         the fingerprint of all of them when the payload was built:
//	           the approval cache's lines (state root, policies/ and
//	           validators/, the approval record, every policy file: size,
//	           mtime, ctime, device, inode, mode) and one line per extra
//	payload    the compiled forms
//
// then 32 bytes of HMAC-SHA256 over all of it, keyed with
// HMAC(the state root's HMAC key, compiledHeader). It is trusted only when
// the MAC verifies, build, root, kind and extra are this call's, the
// fingerprint taken now is the stored one, and the stamp is more than
// approvalCacheSettle after every time in it. It is written only after a
// full load found the files approved and parsed them, and only when the
// fingerprint taken before that load is still the one after it. So an
// edit (even with its mtime restored: ctime cannot be set back), a file
// swapped or renamed (inode, directory times), a cache copied from another
// root (root, device and inode, key) or forged or torn (MAC) all make a
// miss, and a miss is the full load. Symlinks anywhere in the fingerprint
// disable the cache, as for the approval cache.

const (
	compiledDir    = "policy-compiled"
	compiledHeader = "docket.policy_compiled.v1"
	// compiledFormat changes whenever a compiled form or what the parsers
	// produce changes.
	compiledFormat = "2"
	compiledMACLen = sha256.Size
)

var compiledBuild = sync.OnceValue(func() string {
	b := compiledFormat + " " + defaultsDigest()
	clean := false // built from a committed, unmodified tree
	if bi, ok := debug.ReadBuildInfo(); ok {
		b += " " + bi.Main.Path + "@" + bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" || s.Key == "vcs.time" {
				b += " " + s.Value
			}
			clean = clean || s.Key == "vcs.modified" && s.Value == "false"
		}
	}
	// A rebuild from a modified tree (or from no tree) keeps the revision:
	// there the binary's own identity tells builds apart. A clean build's
	// binaries (docket, docket-gate, docket-judge) share their caches.
	// /proc/self/exe, stat'ed through: the running binary's file, with no
	// readlink of its path first.
	var st syscall.Stat_t
	if !clean && syscall.Stat("/proc/self/exe", &st) == nil {
		b += " exe " + strconv.FormatUint(uint64(st.Dev), 10) + ":" + strconv.FormatUint(uint64(st.Ino), 10) + ":" +
			strconv.FormatInt(int64(st.Size), 10) + ":" + strconv.FormatInt(int64(st.Mtim.Sec), 10) + "." + strconv.FormatInt(int64(st.Mtim.Nsec), 10)
	}
	return b
})

// CompiledPath is the cache file of kind for the extra paths.
func CompiledPath(h home.Home, kind string, extra []string) string {
	return compiledPath(h, kind, extra)
}

func compiledPath(h home.Home, kind string, extra []string) string {
	name := kind
	if len(extra) > 0 {
		s := sha256.Sum256([]byte(strings.Join(extra, "\x00")))
		name += "-" + hex.EncodeToString(s[:8])
	}
	return filepath.Join(h.RunDir(), compiledDir, name+".cache")
}

func compiledKey(h home.Home) ([]byte, error) {
	// regular.ReadFile, not os.ReadFile: no poller set up for one small
	// file on every hook call
	key, err := regular.ReadFile(nil, h.HMACKeyPath(), 4096)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(compiledHeader))
	return m.Sum(nil), nil
}

func compiledMAC(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// compiledFingerprint is the approval fingerprint of files and a line per
// extra path.
func compiledFingerprint(h home.Home, files, extra []string) (string, time.Time, bool) {
	var f fingerprint
	if !approvalFingerprintTo(&f, h, files) {
		return "", f.latest, false
	}
	for _, p := range extra {
		if !f.add(p, p, true) {
			return "", f.latest, false
		}
	}
	return string(f.b), f.latest, true
}

// ReadCompiled returns the payload of the compiled-policy cache of kind
// for the extra paths when it is trusted (see above): built from exactly
// the files in force now, which were approved then and still are.
func ReadCompiled(h home.Home, kind string, extra []string) (string, bool) {
	if h.Root == "" {
		return "", false
	}
	b, err := readLimited(compiledPath(h, kind, extra))
	if err != nil || len(b) <= compiledMACLen {
		return "", false
	}
	key, err := compiledKey(h)
	if err != nil {
		return "", false
	}
	body, mac := b[:len(b)-compiledMACLen], b[len(b)-compiledMACLen:]
	if !hmac.Equal(mac, compiledMAC(key, body)) {
		return "", false
	}
	d := decoder{s: string(body)}
	if d.str() != compiledHeader || d.str() != compiledBuild() || d.str() != h.Root || d.str() != kind {
		return "", false
	}
	stamp := d.int()
	files := d.strs()
	ext := d.strs()
	fp := d.str()
	payload := d.str()
	if d.err != nil || d.s != "" || !slices.Equal(ext, extra) {
		return "", false
	}
	now, latest, ok := compiledFingerprint(h, files, extra)
	if !ok || now != fp || time.Unix(0, stamp).Sub(latest) <= approvalCacheSettle {
		return "", false
	}
	return payload, true
}

// CompiledSnapshot is the fingerprint taken before a full load.
type CompiledSnapshot struct {
	files  []string
	fp     string
	latest time.Time
	valid  bool
}

func (s CompiledSnapshot) ok() bool { return s.valid }

// SnapshotCompiled fingerprints the policy files and the extra paths
// before a full load (WriteCompiled).
func SnapshotCompiled(h home.Home, extra []string) CompiledSnapshot {
	if h.Root == "" {
		return CompiledSnapshot{}
	}
	files, err := policyFileNames(h)
	if err != nil {
		return CompiledSnapshot{}
	}
	fp, latest, ok := compiledFingerprint(h, files, extra)
	return CompiledSnapshot{files, fp, latest, ok}
}

// WriteCompiled caches payload, built by a full load that found the
// policy files approved and started after snap was taken: when nothing
// changed since snap and the files have settled (approvalCacheSettle).
// Errors are ignored: without a cache the next call loads in full.
func WriteCompiled(h home.Home, kind string, extra []string, snap CompiledSnapshot, payload []byte) {
	if !snap.valid || h.Root == "" {
		return
	}
	fp, _, ok := compiledFingerprint(h, snap.files, extra)
	stamp := approvalCacheNow()
	if !ok || fp != snap.fp || stamp.Sub(snap.latest) <= approvalCacheSettle {
		return
	}
	key, err := compiledKey(h)
	if err != nil {
		return
	}
	var e encoder
	e.str(compiledHeader)
	e.str(compiledBuild())
	e.str(h.Root)
	e.str(kind)
	e.int(stamp.UnixNano())
	e.strs(snap.files)
	e.strs(extra)
	e.str(fp)
	e.str(string(payload))
	e.b = append(e.b, compiledMAC(key, e.b)...)
	p := compiledPath(h, kind, extra)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(e.b)
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		return
	}
	if os.Rename(tmp.Name(), p) == nil && len(extra) > 0 {
		pruneCompiled(filepath.Dir(p))
	}
}

// maxCompiled bounds the cache files kept: the judge writes one per
// list of delegate paths (per working directory), so the oldest are
// removed beyond it.
const maxCompiled = 128

func pruneCompiled(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) <= maxCompiled {
		return
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range ents {
		if info, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".cache") {
			files = append(files, file{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	for i := 0; i+maxCompiled < len(files); i++ {
		os.Remove(filepath.Join(dir, files[i].name))
	}
}

// SetCacheClock sets the clock the policy caches stamp their files with
// and returns the function restoring it. Tests of other packages move it
// past the settle time; nothing else calls it.
func SetCacheClock(now func() time.Time) (restore func()) {
	old := approvalCacheNow
	approvalCacheNow = now
	return func() { approvalCacheNow = old }
}
