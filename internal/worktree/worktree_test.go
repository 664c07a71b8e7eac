package worktree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// write creates files under root from "path" → content ("" makes a
// directory-free empty file).
func write(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func paths(tr *Tree) []string {
	var out []string
	for _, f := range tr.Files {
		out = append(out, f.Path)
	}
	return out
}

// past is a clock far enough ahead that every file written by the test
// is old enough to be cached.
func past() time.Time { return time.Now().Add(time.Minute) }

func TestScanSet(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{
		".gitignore":        "*.log\nbuild/\n/vendor/\n",
		"main.go":           "package main\n",
		"a/b/c.go":          "package b\n",
		"a/.gitignore":      "gen_*\n!gen_keep.go\n",
		"a/gen_x.go":        "x",
		"a/gen_keep.go":     "k",
		"debug.log":         "l",
		"build/out":         "o",
		"vendor/v.go":       "v",
		"a/vendor/v.go":     "v2",
		".git/HEAD":         "ref: refs/heads/main\n",
		".git/info/exclude": "secret.txt\n",
		"secret.txt":        "s",
		"sub/.git":          "gitdir: elsewhere\n",
		"sub/s.go":          "s",
		"state/ledger":      "l",
	})
	if err := os.Symlink("main.go", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	tr, err := Scan(root, Options{Exclude: []string{filepath.Join(root, "state")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".git/info/exclude", ".gitignore", "a/.gitignore", "a/b/c.go", "a/gen_keep.go", "a/vendor/v.go", "link", "main.go", "sub/s.go"}
	if got := paths(tr); !reflect.DeepEqual(got, want) {
		t.Fatalf("files = %q\nwant    %q", got, want)
	}
	for _, f := range tr.Files {
		if f.Path == "link" && f.Mode != 'l' {
			t.Errorf("link mode = %c, want l", f.Mode)
		}
	}
	if !strings.HasPrefix(tr.Digest, "sha256:") || len(tr.Digest) != 71 {
		t.Errorf("digest = %q", tr.Digest)
	}
	// Scanning again gives the same digest; so does scanning through a
	// symlink to the root.
	link := filepath.Join(t.TempDir(), "via")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	tr2, err := Scan(link, Options{Exclude: []string{filepath.Join(root, "state")}})
	if err != nil {
		t.Fatal(err)
	}
	if tr2.Digest != tr.Digest || tr2.Root != tr.Root {
		t.Errorf("rescan via symlink: %s %s, want %s %s", tr2.Root, tr2.Digest, tr.Root, tr.Digest)
	}
}

// Every kind of change a command can make shows in the digest and in
// Diff, with or without a warm cache.
func TestScanDetectsChanges(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	tests := []struct {
		name   string
		change func(t *testing.T, root string)
		want   []Change
	}{
		{"append", func(t *testing.T, root string) {
			f, _ := os.OpenFile(filepath.Join(root, "x.go"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("// more\n")
			f.Close()
		}, []Change{{"x.go", "modified"}}},
		{"same size, mtime restored", func(t *testing.T, root string) {
			p := filepath.Join(root, "x.go")
			fi, _ := os.Stat(p)
			b, _ := os.ReadFile(p)
			b[len(b)-2] ^= 1
			os.WriteFile(p, b, 0o644)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}, []Change{{"x.go", "modified"}}},
		{"replace by rename", func(t *testing.T, root string) {
			tmp := filepath.Join(root, "tmp")
			os.WriteFile(tmp, []byte("package m // new\n"), 0o644)
			os.Rename(tmp, filepath.Join(root, "x.go"))
		}, []Change{{"x.go", "modified"}}},
		{"chmod +x", func(t *testing.T, root string) {
			os.Chmod(filepath.Join(root, "x.go"), 0o755)
		}, []Change{{"x.go", "modified"}}},
		{"new untracked file", func(t *testing.T, root string) {
			write(t, root, map[string]string{"d/new.go": "package d\n"})
		}, []Change{{"d/new.go", "added"}}},
		{"delete", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "y_test.go"))
		}, []Change{{"y_test.go", "removed"}}},
		{"symlink swap", func(t *testing.T, root string) {
			p := filepath.Join(root, "x.go")
			os.Rename(p, filepath.Join(root, "x.orig"))
			os.Symlink("x.orig", p)
		}, []Change{{"x.go", "modified"}, {"x.orig", "added"}}},
		{"content behind a symlink", func(t *testing.T, root string) {
			p := filepath.Join(root, "outside.txt")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append(b, '!'), 0o644)
		}, []Change{{"ext.go", "modified"}}},
		{"exclude rule added", func(t *testing.T, root string) {
			write(t, root, map[string]string{".git/info/exclude": "y_test.go\n"})
		}, []Change{{".git/info/exclude", "modified"}, {"y_test.go", "removed"}}},
		{"ignored file", func(t *testing.T, root string) {
			write(t, root, map[string]string{"out.log": "noise"})
		}, nil},
	}
	for _, tt := range tests {
		for _, cached := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cache=%v", tt.name, cached), func(t *testing.T) {
				root := t.TempDir()
				write(t, root, map[string]string{".gitignore": "*.log\noutside.txt\n", "x.go": "package m\n", "y_test.go": "package m\n", ".git/info/exclude": "\n",
					"outside.txt": "package m // reached through ext.go\n"})
				os.Symlink(filepath.Join(root, "outside.txt"), filepath.Join(root, "ext.go"))
				o := Options{Now: past}
				if cached {
					o.CacheFile, o.CacheKey = filepath.Join(t.TempDir(), "c.cache"), key
				}
				before, err := Scan(root, o)
				if err != nil {
					t.Fatal(err)
				}
				if cached {
					// a warm re-scan hashes only the symlink
					again, err := Scan(root, o)
					if err != nil {
						t.Fatal(err)
					}
					if again.Hashed != 1 || again.Digest != before.Digest {
						t.Fatalf("warm rescan hashed %d files, digest %s vs %s", again.Hashed, again.Digest, before.Digest)
					}
				}
				tt.change(t, root)
				after, err := Scan(root, o)
				if err != nil {
					t.Fatal(err)
				}
				got := Diff(before.Files, after.Files)
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Diff = %v, want %v", got, tt.want)
				}
				if (after.Digest != before.Digest) != (len(tt.want) > 0) {
					t.Errorf("digest changed = %v, want %v", after.Digest != before.Digest, len(tt.want) > 0)
				}
			})
		}
	}
}

// A cache written without the key, or altered, is not trusted: a forged
// entry cannot make a changed file look unchanged.
func TestCacheForgery(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	root := t.TempDir()
	write(t, root, map[string]string{"x.go": "package m\n"})
	cf := filepath.Join(t.TempDir(), "c.cache")
	o := Options{CacheFile: cf, CacheKey: key, Now: past}
	before, err := Scan(root, o)
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, map[string]string{"x.go": "package n\n"})
	abs, _ := filepath.EvalSymlinks(root)
	fi, _ := os.Lstat(filepath.Join(root, "x.go"))
	forged := []cacheRec{{"x.go", cacheEntry{st: statOf(fi), sum: before.Files[0].Sum}}}
	for _, k := range [][]byte{[]byte("wrong key wrong key wrong key!!!"), nil} {
		b := encodeCache(abs, forged)
		if k != nil {
			saveCache(cf, k, abs, forged)
		} else {
			os.WriteFile(cf, append(b, make([]byte, 32)...), 0o600)
		}
		after, err := Scan(root, o)
		if err != nil {
			t.Fatal(err)
		}
		if after.Digest == before.Digest || after.Hashed != 1 {
			t.Errorf("forged cache trusted (hashed %d)", after.Hashed)
		}
	}
	// The same forgery with the right key is trusted: the MAC is what
	// stands between the agent and the cache.
	saveCache(cf, key, abs, forged)
	after, _ := Scan(root, o)
	if after.Digest != before.Digest {
		t.Errorf("a correctly MACed cache entry was not used")
	}
}

// Racy git: files stamped within the racy window of a scan are not
// cached, so a rewrite in the same timestamp tick is re-hashed.
func TestRacyEntriesNotCached(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	root := t.TempDir()
	write(t, root, map[string]string{"x.go": "package m\n", "old.go": "package m\n"})
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(root, "old.go"), old, old)
	cf := filepath.Join(t.TempDir(), "c.cache")
	o := Options{CacheFile: cf, CacheKey: key} // real clock: x.go's ctime is now
	if _, err := Scan(root, o); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.EvalSymlinks(root)
	// x.go changed within the racy window; old.go's ctime is now too
	// (Chtimes sets it): neither is cached.
	if c := loadCache(cf, key, abs); len(c) != 0 {
		t.Errorf("racy entries were cached: %v", c)
	}
	tr, _ := Scan(root, o)
	if tr.Hashed != 2 {
		t.Errorf("rescan hashed %d files, want 2 (nothing trusted)", tr.Hashed)
	}
}

func TestManifestStore(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a.go": "a", "b/c.go": "c", "weird name\n.txt": "w"})
	tr, err := Scan(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := SaveManifest(dir, tr); err != nil {
		t.Fatal(err)
	}
	files, err := LoadManifest(dir, tr.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, tr.Files) {
		t.Errorf("manifest round trip: %v, want %v", files, tr.Files)
	}
	// A manifest edited on disk no longer matches its name.
	p, _ := manifestPath(dir, tr.Digest)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte("a.go"), []byte("A.go"), 1), 0o600)
	if _, err := LoadManifest(dir, tr.Digest); err == nil {
		t.Errorf("tampered manifest loaded")
	}
	if _, err := LoadManifest(dir, "sha256:../../etc"); err == nil {
		t.Errorf("malformed digest accepted")
	}
}

func TestTooLarge(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"a": "", "b": "", "c": ""})
	if _, err := Scan(root, Options{MaxFiles: 2}); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
}

func TestFindRoot(t *testing.T) {
	root := t.TempDir()
	write(t, root, map[string]string{"repo/.git/HEAD": "x", "repo/a/b/f": "", "plain/x/f": "", "wt/.git": "gitdir: /x\n",
		"repo/stray/.git/config": "", "repo/junk/.git": "not a gitdir\n"})
	abs, _ := filepath.EvalSymlinks(root)
	tests := []struct{ dir, want string }{
		{"repo/a/b", "repo"},
		{"repo", "repo"},
		{"wt", "wt"},
		{"repo/stray", "repo"}, // a .git without HEAD is no repository
		{"repo/junk", "repo"},
	}
	for _, tt := range tests {
		if got := FindRoot(filepath.Join(root, tt.dir)); got != filepath.Join(abs, tt.want) {
			t.Errorf("FindRoot(%s) = %s, want %s", tt.dir, got, filepath.Join(abs, tt.want))
		}
	}
	// Without a .git above, the directory itself (t.TempDir has no .git
	// above it unless the test runs inside a repository's tree).
	if got := FindRoot(filepath.Join(root, "plain/x")); got != filepath.Join(abs, "plain/x") && !Within(got, abs) {
		t.Errorf("FindRoot(plain/x) = %s", got)
	}
	if !Within("/a/b", "/a/b/c") || Within("/a/b", "/a/bc") || Within("/a/b", "/a") || !Within("/a/b", "/a/b") {
		t.Errorf("Within is wrong")
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add(Manifest([]File{{Path: "a", Mode: 'f'}, {Path: "b/c", Mode: 'x'}}))
	f.Add([]byte(Version + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		files, err := ParseManifest(b)
		if err != nil {
			return
		}
		if got := Manifest(files); !bytes.Equal(got, b) {
			t.Fatalf("round trip: %q != %q", got, b)
		}
	})
}

func FuzzDecodeCache(f *testing.F) {
	f.Add(encodeCache("/r", []cacheRec{{"a", cacheEntry{st: stat{size: 1, mtime: 2, ctime: 3, ino: 4, dev: 5, mode: 6}}}, {"b", cacheEntry{}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeCache(b, "/r")
		if err != nil {
			return
		}
		m2, err := decodeCache(encodeCache("/r", m), "/r")
		if err != nil || !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip differs: %v", err)
		}
	})
}

// A validation records a digest only when the tree after the run is the
// tree before it, file for file: a file swapped for the run and restored
// afterwards keeps its content but not its ctime.
func TestRecordingDuringRun(t *testing.T) {
	tests := []struct {
		name   string
		during func(t *testing.T, root string)
		want   string // substring of the error; "" for a digest
	}{
		{"untouched", func(t *testing.T, root string) {
			os.ReadFile(filepath.Join(root, "x.go"))
		}, ""},
		{"changed", func(t *testing.T, root string) {
			write(t, root, map[string]string{"x.go": "package broken\n"})
		}, "changed while the validator ran: modified x.go"},
		{"added", func(t *testing.T, root string) {
			write(t, root, map[string]string{"gen.go": "package m\n"})
		}, "added gen.go"},
		{"swapped and restored", func(t *testing.T, root string) {
			p := filepath.Join(root, "x.go")
			orig, _ := os.ReadFile(p)
			os.WriteFile(p, []byte("package good\n"), 0o644)
			os.WriteFile(p, orig, 0o644)
		}, "rewritten while the validator ran, so it may not have tested this content: x.go"},
		{"renamed away and back", func(t *testing.T, root string) {
			p := filepath.Join(root, "x.go")
			os.Rename(p, p+".bak")
			write(t, root, map[string]string{"x.go": "package good\n"})
			os.Rename(p+".bak", p)
		}, "rewritten while the validator ran"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, map[string]string{".git/HEAD": "ref: refs/heads/main\n", "x.go": "package m\n", "x_test.go": "package m\n"})
			s := Store{Dir: t.TempDir(), Key: []byte("0123456789abcdef0123456789abcdef")}
			rec := s.Begin(root)
			time.Sleep(10 * time.Millisecond) // a later ctime tick
			tt.during(t, root)
			p := rec.Finish()
			if tt.want == "" {
				if p.Digest == "" || p.Error != "" {
					t.Fatalf("pass = %+v, want a digest", p)
				}
				if _, err := s.Manifest(p.Digest); err != nil {
					t.Errorf("manifest not kept: %v", err)
				}
				return
			}
			if p.Digest != "" || !strings.Contains(p.Error, tt.want) {
				t.Errorf("pass = %+v, want error containing %q", p, tt.want)
			}
		})
	}
}

// A FIFO swapped in for a listed file cannot hang a scan: the open does
// not block and the read content is not cached.
func TestFIFOCannotBlock(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "x.go")
	if err := syscallMkfifo(p); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sum, stable, err := hashFile(p, stat{mode: 0o644})
		if err != nil || stable {
			t.Errorf("hashFile(fifo) = %x, %v, %v", sum, stable, err)
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("hashFile blocked on a FIFO")
	}
	// A listed FIFO is not a file of the tree at all.
	tr, err := Scan(root, Options{})
	if err != nil || len(tr.Files) != 0 {
		t.Errorf("scan with a FIFO: %v, %v", paths(tr), err)
	}
}
