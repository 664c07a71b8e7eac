//go:build linux

package policies

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
)

// cachedHome is an approved state root whose approval is cached: its
// files are made to look settled by moving the cache's clock ahead.
func cachedHome(t *testing.T) home.Home {
	t.Helper()
	h := approvalHome(t)
	if err := os.MkdirAll(filepath.Join(h.Root, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustApprove(t, h)
	moveClock(t, 10*time.Second)
	if err := CheckApproval(h); err != nil {
		t.Fatal(err)
	}
	if !approvalCached(h) {
		t.Fatal("approval not cached after a passing check")
	}
	return h
}

func moveClock(t testing.TB, d time.Duration) {
	old := approvalCacheNow
	approvalCacheNow = func() time.Time { return time.Now().Add(d) }
	t.Cleanup(func() { approvalCacheNow = old })
}

func wantUnapproved(t *testing.T, h home.Home, why string) {
	t.Helper()
	if approvalCached(h) {
		t.Errorf("%s: the cache is still trusted", why)
	}
	if err := CheckApproval(h); !errors.Is(err, ErrUnapproved) {
		t.Errorf("%s: CheckApproval = %v, want unapproved", why, err)
	}
}

func TestApprovalCacheFollowsChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, h home.Home)
	}{
		{"policy edited", func(t *testing.T, h home.Home) {
			write(t, filepath.Join(h.PoliciesDir(), "tools.yaml"), "version: 1\n")
		}},
		{"policy edited, same size", func(t *testing.T, h home.Home) {
			p := filepath.Join(h.PoliciesDir(), "judges.md")
			b, _ := os.ReadFile(p)
			b[len(b)-2] ^= 1
			write(t, p, string(b))
		}},
		{"validator edited", func(t *testing.T, h home.Home) {
			write(t, filepath.Join(h.ValidatorsDir(), "v.yaml"), "name: w\n")
		}},
		{"validator added", func(t *testing.T, h home.Home) {
			write(t, filepath.Join(h.ValidatorsDir(), "new.yaml"), "name: n\n")
		}},
		{"toolchains edited", func(t *testing.T, h home.Home) {
			write(t, h.ToolchainsPath(), `{"tools":{"go":{"path":"/tmp/fake-go"}}}`)
		}},
		{"policy swapped for a symlink to the same bytes outside", func(t *testing.T, h home.Home) {
			p := filepath.Join(h.PoliciesDir(), "tools.yaml")
			b, _ := os.ReadFile(p)
			out := filepath.Join(t.TempDir(), "tools.yaml")
			write(t, out, string(b))
			os.Remove(p)
			if err := os.Symlink(out, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"approval record removed", func(t *testing.T, h home.Home) {
			write(t, filepath.Join(h.PoliciesDir(), "tools.yaml"), "version: 1\n")
			os.Remove(ApprovalPath(h))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := cachedHome(t)
			tc.change(t, h)
			wantUnapproved(t, h, tc.name)
		})
	}
}

// The cache file is the attacker's to write: a forged or replayed cache
// is ignored and the full check runs.
func TestApprovalCacheTampered(t *testing.T) {
	t.Run("fingerprint rewritten to the edited file", func(t *testing.T) {
		h := cachedHome(t)
		old, _ := os.ReadFile(approvalCachePath(h))
		write(t, filepath.Join(h.PoliciesDir(), "tools.yaml"), "version: 1\n")
		// the fingerprint the edited files have now, under the old MAC
		body, mac, _ := cutLastLine(string(old))
		header, rest, _ := strings.Cut(body, "\n")
		files, rest, _ := strings.Cut(rest, "\n")
		stamp, _, _ := strings.Cut(rest, "\n")
		fp, _, ok := approvalFingerprint(h, strings.Split(files, " "))
		if !ok {
			t.Fatal("no fingerprint")
		}
		write(t, approvalCachePath(h), header+"\n"+files+"\n"+stamp+"\n"+fp+mac+"\n")
		wantUnapproved(t, h, "forged fingerprint")
	})
	t.Run("signed with another state root's key", func(t *testing.T) {
		h := cachedHome(t)
		write(t, filepath.Join(h.PoliciesDir(), "tools.yaml"), "version: 1\n")
		other, _ := home.At(filepath.Join(t.TempDir(), "other"))
		os.MkdirAll(other.KeysDir(), 0o700)
		write(t, other.HMACKeyPath(), "another key")
		key, _ := approvalCacheKey(other)
		files, _ := policyFileNames(h)
		fp, _, _ := approvalFingerprint(h, files)
		body := approvalCacheHeader + "\n" + strings.Join(files, " ") + "\n" + strconv.FormatInt(time.Now().Add(time.Hour).UnixNano(), 10) + "\n" + fp
		write(t, approvalCachePath(h), body+approvalCacheMAC(key, body)+"\n")
		wantUnapproved(t, h, "foreign key")
	})
	t.Run("garbage", func(t *testing.T) {
		h := cachedHome(t)
		write(t, filepath.Join(h.PoliciesDir(), "tools.yaml"), "version: 1\n")
		for _, g := range []string{"", "\n", "x\ny\n", strings.Repeat("a\n", 40000)} {
			write(t, approvalCachePath(h), g)
			wantUnapproved(t, h, "garbage cache")
		}
	})
}

// Files written within two seconds of the cache (timestamps too coarse
// to tell a later write apart) are not trusted from it.
func TestApprovalCacheSettle(t *testing.T) {
	h := approvalHome(t)
	os.MkdirAll(filepath.Join(h.Root, "run"), 0o700)
	mustApprove(t, h)
	// real clock: the files are fresh, nothing is cached
	if err := CheckApproval(h); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(approvalCachePath(h)); err == nil {
		t.Fatal("cache written for files changed within the settle time")
	}
	// a correctly signed cache stamped one second after the files
	key, _ := approvalCacheKey(h)
	files, _ := policyFileNames(h)
	fp, latest, _ := approvalFingerprint(h, files)
	body := approvalCacheHeader + "\n" + strings.Join(files, " ") + "\n" + strconv.FormatInt(latest.Add(time.Second).UnixNano(), 10) + "\n" + fp
	write(t, approvalCachePath(h), body+approvalCacheMAC(key, body)+"\n")
	if approvalCached(h) {
		t.Fatal("cache stamped within the settle time trusted")
	}
	body = approvalCacheHeader + "\n" + strings.Join(files, " ") + "\n" + strconv.FormatInt(latest.Add(3*time.Second).UnixNano(), 10) + "\n" + fp
	write(t, approvalCachePath(h), body+approvalCacheMAC(key, body)+"\n")
	if !approvalCached(h) {
		t.Fatal("settled cache not trusted (the test proves nothing)")
	}
}

// A file changed between the fingerprint and the full check is not
// cached as approved.
func TestApprovalCacheRace(t *testing.T) {
	h := approvalHome(t)
	os.MkdirAll(filepath.Join(h.Root, "run"), 0o700)
	mustApprove(t, h)
	moveClock(t, 10*time.Second)
	pre := snapshotApproval(h)
	write(t, filepath.Join(h.PoliciesDir(), "tools.yaml"), "version: 1\n")
	cacheApproval(h, pre)
	wantUnapproved(t, h, "changed during the check")
}

// Without an approval record the embedded defaults decide: a cache
// written by a docket with other defaults is not trusted.
func TestApprovalCacheOtherDefaults(t *testing.T) {
	h := approvalHome(t)
	os.MkdirAll(filepath.Join(h.Root, "run"), 0o700)
	os.Remove(filepath.Join(h.ValidatorsDir(), "v.yaml"))
	os.Remove(h.ToolchainsPath())
	moveClock(t, 10*time.Second)
	if err := CheckApproval(h); err != nil {
		t.Fatal(err)
	}
	if !approvalCached(h) {
		t.Fatal("defaults in force, not cached")
	}
	old := defaultsDigest
	defer func() { defaultsDigest = old }()
	defaultsDigest = func() string { return "another docket" }
	if approvalCached(h) {
		t.Fatal("cache of other defaults trusted")
	}
}

// The fingerprint's mode is the one os.Lstat reports.
func TestFingerprintMode(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	write(t, p, "x")
	os.Chmod(p, 0o4751)
	for _, q := range []string{dir, p} {
		st, err := os.Lstat(q)
		if err != nil {
			t.Fatal(err)
		}
		var f fingerprint
		if !f.add("n", q, false) {
			t.Fatal("not fingerprinted")
		}
		if want := " " + strconv.FormatUint(uint64(st.Mode()), 8) + "\n"; !strings.HasSuffix(string(f.b), want) {
			t.Errorf("%s: %q, want mode %q", q, f.b, want)
		}
	}
}
