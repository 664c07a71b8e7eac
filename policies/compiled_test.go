//go:build linux

package policies

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
)

// compiledHome is an approved state root with a run directory.
func compiledHome(t testing.TB) home.Home {
	t.Helper()
	h := approvalHome(t)
	if err := os.MkdirAll(filepath.Join(h.Root, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustApprove(t, h)
	return h
}

// cachedGate is an approved root whose gate policies are in the compiled
// cache (the clock moved past the settle time).
func cachedGate(t testing.TB, claims string) home.Home {
	t.Helper()
	h := approvalHome(t)
	os.MkdirAll(filepath.Join(h.Root, "run"), 0o700)
	if claims != "" {
		write(t, filepath.Join(h.PoliciesDir(), ClaimsFile), claims)
	}
	mustApprove(t, h)
	moveClock(t, 10*time.Second)
	if _, _, err := LoadGate(h); err != nil {
		t.Fatal(err)
	}
	if !gateCached(h) {
		t.Fatal("gate policies not cached after an approved load")
	}
	return h
}

func gateCached(h home.Home) bool {
	_, ok := ReadCompiled(h, CompiledKindGate, nil)
	return ok
}

// A cache hit gives the lexicon and binding a fresh parse gives: every
// pattern, literal prefilter, cue and rule, for the default policies and
// for a lexicon and binding that differ from them.
func TestCompiledGateSameAsParse(t *testing.T) {
	bdef, _ := Default(BindingFile)
	binding := strings.Replace(string(bdef), "\nprojects: []\n", "\nprojects:\n  - root: /srv/app\n    commands:\n      done: [\"make check\"]\n", 1)
	if binding == string(bdef) {
		t.Fatal("default claim_binding.yaml has no empty projects list")
	}
	tests := []struct{ name, claims, binding string }{
		{"defaults", "", ""},
		{"custom", customClaims(t), binding},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := approvalHome(t)
			os.MkdirAll(filepath.Join(h.Root, "run"), 0o700)
			if tc.claims != "" {
				write(t, filepath.Join(h.PoliciesDir(), ClaimsFile), tc.claims)
				write(t, filepath.Join(h.PoliciesDir(), BindingFile), tc.binding)
			}
			mustApprove(t, h)
			moveClock(t, 10*time.Second)
			lex0, b0, err := LoadGate(h) // the full load, which caches
			if err != nil {
				t.Fatal(err)
			}
			if !gateCached(h) {
				t.Fatal("not cached")
			}
			lex1, b1, err := LoadGate(h) // the hit
			if err != nil {
				t.Fatal(err)
			}
			fresh, _ := LoadClaims(h)
			fb, _ := LoadBinding(h)
			want := lexiconView(t, fresh)
			for name, got := range map[string]*Claims{"first load": lex0, "cache hit": lex1} {
				if g := lexiconView(t, got); !reflect.DeepEqual(g, want) {
					for k := range want {
						if !reflect.DeepEqual(g[k], want[k]) {
							t.Errorf("%s: lexicon %s differs from a fresh parse:\n got %v\nwant %v", name, k, g[k], want[k])
						}
					}
				}
			}
			for name, got := range map[string]*Binding{"first load": b0, "cache hit": b1} {
				if !reflect.DeepEqual(got, fb) {
					t.Errorf("%s: binding differs from a fresh parse:\n got %+v\nwant %+v", name, got, fb)
				}
			}
		})
	}
}

// The attacks on the cache file and on the files it was built from: each
// must make a miss, and the full load must then see the files as they are.
func TestCompiledGateAttacks(t *testing.T) {
	edited := func(t *testing.T, h home.Home) {
		p := filepath.Join(h.PoliciesDir(), ClaimsFile)
		b, _ := os.ReadFile(p)
		// same size, same mtime: "block_cap: 3" becomes "block_cap: 9"
		s := strings.Replace(string(b), "block_cap: 3", "block_cap: 9", 1)
		st, _ := os.Stat(p)
		write(t, p, s)
		if err := os.Chtimes(p, st.ModTime(), st.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		attack func(t *testing.T, h home.Home)
		// approved: the files in force are still approved after the
		// attack (the full load must then succeed, else refuse)
		approved bool
	}{
		{"policy edited, size and mtime restored", edited, false},
		{"policy edited and re-approved with restored mtime", func(t *testing.T, h home.Home) {
			edited(t, h)
			if _, err := Approve(h, "alice", time.Unix(0, 0)); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"policy swapped for another file", func(t *testing.T, h home.Home) {
			p := filepath.Join(h.PoliciesDir(), ClaimsFile)
			b, _ := os.ReadFile(p)
			tmp := p + ".new"
			write(t, tmp, strings.Replace(string(b), "block_cap: 3", "block_cap: 9", 1))
			st, _ := os.Stat(p)
			os.Chtimes(tmp, st.ModTime(), st.ModTime())
			if err := os.Rename(tmp, p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"policy removed (the embedded default is in force: approved only if it was)", func(t *testing.T, h home.Home) {
			os.Remove(filepath.Join(h.PoliciesDir(), ClaimsFile))
		}, true},
		{"cache forged: payload edited, MAC kept", func(t *testing.T, h home.Home) {
			p := compiledPath(h, CompiledKindGate, nil)
			b, _ := os.ReadFile(p)
			i := strings.Index(string(b), "go_test_pass")
			if i < 0 {
				t.Fatal("no validator in the cache")
			}
			b[i] = 'x'
			write(t, p, string(b))
		}, true},
		{"cache forged: signed with another key", func(t *testing.T, h home.Home) {
			p := compiledPath(h, CompiledKindGate, nil)
			b, _ := os.ReadFile(p)
			body := b[:len(b)-compiledMACLen]
			write(t, p, string(append(body, compiledMAC([]byte("another key"), body)...)))
		}, true},
		{"cache torn", func(t *testing.T, h home.Home) {
			p := compiledPath(h, CompiledKindGate, nil)
			b, _ := os.ReadFile(p)
			write(t, p, string(b[:len(b)/2]))
		}, true},
		{"cache truncated to its MAC", func(t *testing.T, h home.Home) {
			p := compiledPath(h, CompiledKindGate, nil)
			b, _ := os.ReadFile(p)
			write(t, p, string(b[len(b)-compiledMACLen:]))
		}, true},
		{"cache empty", func(t *testing.T, h home.Home) {
			write(t, compiledPath(h, CompiledKindGate, nil), "")
		}, true},
		{"HMAC key replaced", func(t *testing.T, h home.Home) {
			os.Chmod(h.HMACKeyPath(), 0o600)
			write(t, h.HMACKeyPath(), "k2")
		}, false}, // the approval record does not verify either
	}
	for _, lexicon := range []string{"default", "custom"} {
		for _, tc := range tests {
			t.Run(lexicon+"/"+tc.name, func(t *testing.T) {
				claims := ""
				if lexicon == "custom" {
					claims = customClaims(t)
				}
				h := cachedGate(t, claims)
				tc.attack(t, h)
				approved := tc.approved
				if lexicon == "custom" && strings.HasPrefix(tc.name, "policy removed") {
					approved = false // the custom lexicon was approved, not the default
				}
				if gateCached(h) {
					t.Fatal("cache still trusted")
				}
				lex, _, err := LoadGate(h)
				switch {
				case approved && err != nil:
					t.Fatalf("full load after the attack: %v", err)
				case !approved && !errors.Is(err, ErrUnapproved):
					t.Fatalf("LoadGate = %v, want unapproved", err)
				case approved:
					fresh, _ := LoadClaims(h)
					if lex.BlockCap != fresh.BlockCap || Version(lex.Source()) != Version(fresh.Source()) {
						t.Errorf("loaded block_cap %d (%s), the file says %d", lex.BlockCap, Version(lex.Source()), fresh.BlockCap)
					}
				}
			})
		}
	}
}

// A cache copied from another state root, with that root's key copied
// too, is not trusted: it names its root, and the fingerprint holds the
// other root's inodes.
func TestCompiledGateCopiedFromAnotherRoot(t *testing.T) {
	a := cachedGate(t, "")
	b := cachedGate(t, customClaims(t))
	key, _ := os.ReadFile(a.HMACKeyPath())
	os.Chmod(b.HMACKeyPath(), 0o600)
	write(t, b.HMACKeyPath(), string(key))
	if _, err := Approve(b, "alice", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	cache, _ := os.ReadFile(compiledPath(a, CompiledKindGate, nil))
	write(t, compiledPath(b, CompiledKindGate, nil), string(cache))
	if gateCached(b) {
		t.Fatal("another root's cache trusted")
	}
	lex, _, err := LoadGate(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(lex.Negation.Cues); got == len(mustDefaultClaims(t).Negation.Cues) {
		t.Error("the other root's (default) lexicon was loaded")
	}
}

// A cache written by another docket (other defaults, another build) is
// not trusted.
func TestCompiledGateOtherBuild(t *testing.T) {
	h := cachedGate(t, "")
	old := compiledBuild
	defer func() { compiledBuild = old }()
	compiledBuild = func() string { return "another docket" }
	if gateCached(h) {
		t.Fatal("another build's cache trusted")
	}
}

// A rebuild keeps the VCS revision when the tree is modified (a test
// binary has none): the build identity then includes the binary itself,
// so a relinked docket does not trust the caches of the one it replaced.
func TestCompiledBuildNamesTheBinary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(exe, &st); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(" exe %d:%d:%d:", st.Dev, st.Ino, st.Size); !strings.Contains(compiledBuild(), want) {
		t.Fatalf("build %q does not name the binary (%s)", compiledBuild(), want)
	}
}

// Files that changed within the settle time of the load are not cached;
// a file changed between the fingerprint and the load is not either.
func TestCompiledGateSettleAndRace(t *testing.T) {
	h := compiledHome(t)
	if _, _, err := LoadGate(h); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(compiledPath(h, CompiledKindGate, nil)); err == nil {
		t.Fatal("cache written for files changed within the settle time")
	}
	moveClock(t, 10*time.Second)
	snap := SnapshotCompiled(h, nil)
	write(t, filepath.Join(h.PoliciesDir(), ClaimsFile), customClaims(t))
	WriteCompiled(h, CompiledKindGate, nil, snap, []byte("payload"))
	if _, err := os.Stat(compiledPath(h, CompiledKindGate, nil)); err == nil {
		t.Fatal("cache written although a file changed after the fingerprint")
	}
}

// An unapproved policy is never cached, and a cached approval does not
// outlive the approval record.
func TestCompiledGateUnapproved(t *testing.T) {
	h := cachedGate(t, "")
	os.Remove(ApprovalPath(h))
	write(t, filepath.Join(h.PoliciesDir(), ClaimsFile), customClaims(t))
	for i := 0; i < 2; i++ {
		if _, _, err := LoadGate(h); !errors.Is(err, ErrUnapproved) {
			t.Fatalf("LoadGate = %v, want unapproved", err)
		}
		if gateCached(h) {
			t.Fatal("unapproved policy cached")
		}
	}
}

// Garbage that passes the MAC (a bug, or a key leak) still never panics
// the decoder.
func TestCompiledDecodeGarbage(t *testing.T) {
	lex := mustDefaultClaims(t)
	var e encoder
	encodeClaims(&e, lex)
	full := e.b
	for n := 0; n < len(full); n += 1 + n/7 {
		d := decoder{s: string(full[:n])}
		if c := decodeCompiledClaims(&d); c != nil && d.s == "" && n != len(full) {
			t.Fatalf("truncated payload (%d of %d bytes) decoded", n, len(full))
		}
	}
	for i := 0; i < len(full); i += 97 {
		b := append([]byte(nil), full...)
		b[i] ^= 0xff
		d := decoder{s: string(b)}
		decodeCompiledClaims(&d)
		d = decoder{s: string(b)}
		decodeCompiledBinding(&d)
	}
}

// The judge writes one cache file per list of delegate paths; the
// oldest beyond maxCompiled are removed, the newest kept.
func TestCompiledPruned(t *testing.T) {
	h := compiledHome(t)
	moveClock(t, 10*time.Second)
	dir := filepath.Dir(CompiledPath(h, CompiledKindJudge, []string{"/p"}))
	os.MkdirAll(dir, 0o700)
	old := time.Now().Add(-time.Hour)
	for i := 0; i < maxCompiled+5; i++ {
		p := filepath.Join(dir, "judge-old"+strconv.Itoa(i)+".cache")
		write(t, p, "x")
		os.Chtimes(p, old, old)
	}
	extra := []string{filepath.Join(t.TempDir(), "judges.md")}
	WriteCompiled(h, CompiledKindJudge, extra, SnapshotCompiled(h, extra), []byte("payload"))
	ents, _ := os.ReadDir(dir)
	if len(ents) != maxCompiled {
		t.Errorf("%d files kept, want %d", len(ents), maxCompiled)
	}
	if _, ok := ReadCompiled(h, CompiledKindJudge, extra); !ok {
		t.Error("the newest entry was pruned")
	}
}
