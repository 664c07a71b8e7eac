//go:build linux

package policies

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docket/docket/internal/home"
)

// The approval cache: CheckApproval's "approved" for one version of the
// policy files, so a hook does not read and verify the approval record on
// every call. The cache (run/policy-approval.cache) holds a fingerprint
// of everything the check depends on: the lstat of the state root, the
// policies and validators directories (a file added, removed or renamed
// changes its directory), the approval record and every policy file, and
// a digest of the embedded defaults (which decide when there is no
// record); then the time it was written and an HMAC-SHA256 over all of
// it, with a key derived from the state root's HMAC key. It is trusted
// only when the MAC verifies, the fingerprint is the one taken now, and
// it was written more than two seconds after every time in the
// fingerprint: a file written within a timestamp's granularity of the
// check could otherwise keep its fingerprint. Symlinks anywhere in it
// disable the cache (the full check resolves them). Only "approved" is
// cached; any failure is recomputed, and a cache that does not verify is
// ignored, so tampering with it only costs the full check.

const (
	approvalCacheFile   = "policy-approval.cache"
	approvalCacheHeader = "docket.policy_approval_cache.v1"
	// approvalCacheSettle is how much older than the cache every time in
	// its fingerprint must be.
	approvalCacheSettle = 2 * time.Second
)

// approvalCacheNow is the clock; a test moves it.
var approvalCacheNow = time.Now

func approvalCachePath(h home.Home) string {
	return filepath.Join(h.Root, "run", approvalCacheFile)
}

// defaultsDigest identifies the embedded defaults: knownDefaultsDigest
// (defaults_digest.go), which a test keeps equal to
// computeDefaultsDigest, so no hook hashes the defaults at start-up.
var defaultsDigest = func() string { return knownDefaultsDigest }

// fingerprint collects "name stat" lines: size, mtime, ctime, device,
// inode and mode of each path, "-" for an absent one.
type fingerprint struct {
	b      []byte
	latest time.Time // the latest mtime or ctime in it
	absent bool      // some path that may be absent is
}

// add appends the line of p; false when p is a symlink or cannot be
// fingerprinted (or is absent and must not be).
func (f *fingerprint) add(name, p string, mayBeAbsent bool) bool {
	// syscall.Lstat, not os.Lstat: no FileInfo to build for each of the
	// twenty-odd files a hook fingerprints
	var st syscall.Stat_t
	err := syscall.Lstat(p, &st)
	if errors.Is(err, fs.ErrNotExist) && mayBeAbsent {
		f.b = append(append(f.b, name...), " -\n"...)
		f.absent = true
		return true
	}
	if err != nil || st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		return false
	}
	mtime, ctime := time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
	for _, t := range []time.Time{mtime, ctime} {
		if t.After(f.latest) {
			f.latest = t
		}
	}
	b := append(append(f.b, name...), ' ')
	b = strconv.AppendInt(b, int64(st.Size), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, mtime.UnixNano(), 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(st.Ctim.Sec), 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(st.Ctim.Nsec), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(st.Dev), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(st.Ino), 10)
	b = append(b, ' ')
	b = strconv.AppendUint(b, uint64(fileMode(st.Mode)), 8)
	f.b = append(b, '\n')
	return true
}

// fileMode is the fs.FileMode os.Lstat reports for a st_mode, so the
// fingerprint lines keep their format.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFBLK:
		mode |= fs.ModeDevice
	case syscall.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case syscall.S_IFDIR:
		mode |= fs.ModeDir
	case syscall.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case syscall.S_IFLNK:
		mode |= fs.ModeSymlink
	case syscall.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// approvalFingerprint lists what the check depends on, one "name stat"
// line each; names are the policy files to include (from the cached
// fingerprint, or from a listing). It returns the latest mtime or
// ctime in it, and ok false when something is a symlink or cannot be
// fingerprinted.
func approvalFingerprint(h home.Home, files []string) (fp string, latest time.Time, ok bool) {
	var f fingerprint
	if !approvalFingerprintTo(&f, h, files) {
		return "", f.latest, false
	}
	return string(f.b), f.latest, true
}

func approvalFingerprintTo(f *fingerprint, h home.Home, files []string) bool {
	if !f.add(".", h.Root, false) || !f.add("policies/", h.PoliciesDir(), true) || !f.add("validators/", h.ValidatorsDir(), true) ||
		!f.add(ApprovalFile, ApprovalPath(h), true) {
		return false
	}
	for _, name := range files {
		if !f.add(name, filepath.Join(h.Root, filepath.FromSlash(name)), true) {
			return false
		}
	}
	if f.absent {
		// without a record, or with a policy file removed, the embedded
		// defaults decide: this binary's must be the ones cached
		f.b = append(append(f.b, "defaults "...), defaultsDigest()...)
		f.b = append(f.b, '\n')
	}
	return true
}

// policyFileNames lists the names policyFiles looks at.
func policyFileNames(h home.Home) ([]string, error) {
	var out []string
	for _, n := range Names() {
		out = append(out, "policies/"+n)
	}
	ents, err := os.ReadDir(h.ValidatorsDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".yaml") && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, "validators/"+e.Name())
		}
	}
	out = append(out, filepath.Base(h.ToolchainsPath()))
	sort.Strings(out)
	return out, nil
}

func approvalCacheKey(h home.Home) ([]byte, error) {
	key, err := os.ReadFile(h.HMACKeyPath())
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(approvalCacheHeader))
	return m.Sum(nil), nil
}

func approvalCacheMAC(key []byte, body string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

// approvalCached reports whether a trusted cache says the policy files
// in force are approved.
func approvalCached(h home.Home) bool {
	b, err := os.ReadFile(approvalCachePath(h))
	if err != nil || len(b) > 64<<10 {
		return false
	}
	// header \n files \n stamp \n fingerprint... mac \n
	body, mac, ok := cutLastLine(string(b))
	if !ok {
		return false
	}
	key, err := approvalCacheKey(h)
	if err != nil || !hmac.Equal([]byte(mac), []byte(approvalCacheMAC(key, body))) {
		return false
	}
	header, rest, _ := strings.Cut(body, "\n")
	filesLine, rest, _ := strings.Cut(rest, "\n")
	stampLine, fp, _ := strings.Cut(rest, "\n")
	if header != approvalCacheHeader {
		return false
	}
	stamp, err := strconv.ParseInt(stampLine, 10, 64)
	if err != nil {
		return false
	}
	var files []string
	if filesLine != "" {
		files = strings.Split(filesLine, " ")
	}
	now, latest, ok := approvalFingerprint(h, files)
	if !ok || now != fp {
		return false
	}
	return time.Unix(0, stamp).Sub(latest) > approvalCacheSettle
}

func cutLastLine(s string) (body, last string, ok bool) {
	s, ok = strings.CutSuffix(s, "\n")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(s, '\n')
	if i < 0 {
		return "", "", false
	}
	return s[:i+1], s[i+1:], true
}

// approvalSnapshot is the fingerprint taken before a full check.
type approvalSnapshot struct {
	files  []string
	fp     string
	latest time.Time
	ok     bool
}

func snapshotApproval(h home.Home) approvalSnapshot {
	files, err := policyFileNames(h)
	if err != nil {
		return approvalSnapshot{}
	}
	fp, latest, ok := approvalFingerprint(h, files)
	return approvalSnapshot{files, fp, latest, ok}
}

// cacheApproval records that the policy files fingerprinted in pre,
// before the full check found them approved, are approved: when nothing
// changed since pre and they have settled (see approvalCacheSettle).
// Errors are ignored: without a cache the next check runs in full.
func cacheApproval(h home.Home, pre approvalSnapshot) {
	if !pre.ok {
		return
	}
	fp, _, ok := approvalFingerprint(h, pre.files)
	stamp := approvalCacheNow()
	if !ok || fp != pre.fp || stamp.Sub(pre.latest) <= approvalCacheSettle {
		return
	}
	key, err := approvalCacheKey(h)
	if err != nil {
		return
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n%s\n%d\n%s", approvalCacheHeader, strings.Join(pre.files, " "), stamp.UnixNano(), fp)
	body := b.String()
	p := approvalCachePath(h)
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+approvalCacheFile+".tmp*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(body + approvalCacheMAC(key, body) + "\n")
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		return
	}
	os.Rename(tmp.Name(), p)
}
