//go:build unix

package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system time: on a shared machine it
// says more than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f b.N times and reports CPU ms per op beside wall time.
func loop(b *testing.B, f func()) {
	c0 := cpuTime()
	for b.Loop() {
		f()
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

// benchTree writes n files (about 2 KB each) in directories of 100,
// with a .gitignore and an ignored build directory, and returns its root.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	files := map[string]string{".gitignore": "*.o\nbuild/\n", ".git/info/exclude": "*.swp\n", "build/big.o": strings.Repeat("x", 1<<20)}
	for i := range n - 1 {
		files[fmt.Sprintf("pkg%03d/file%03d.go", i/100, i%100)] = fmt.Sprintf("package p\n\n// %d\n%s\n", i, strings.Repeat("// filler line of source code\n", 64))
	}
	write(b, root, files)
	return root
}

// BenchmarkScan10k: the digest of a 10,000-file tree. cold hashes every
// file (no cache, as at a first validation); warm trusts the stat cache
// (as at a stop after validating, nothing changed); one-changed re-hashes
// one file.
func BenchmarkScan10k(b *testing.B) {
	root := benchTree(b, 10000)
	key := []byte("0123456789abcdef0123456789abcdef")
	b.Run("cold", func(b *testing.B) {
		loop(b, func() {
			if _, err := Scan(root, Options{}); err != nil {
				b.Fatal(err)
			}
		})
	})
	cf := filepath.Join(b.TempDir(), "c.cache")
	o := Options{CacheFile: cf, CacheKey: key, Now: past}
	if _, err := Scan(root, o); err != nil {
		b.Fatal(err)
	}
	b.Run("warm", func(b *testing.B) {
		loop(b, func() {
			t, err := Scan(root, o)
			if err != nil || t.Hashed != 0 {
				b.Fatal(err, t.Hashed)
			}
		})
	})
	b.Run("one-changed", func(b *testing.B) {
		p := filepath.Join(root, "pkg050/file050.go")
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			os.WriteFile(p, []byte(fmt.Sprint("package p // ", i)), 0o644)
			b.StartTimer()
			t, err := Scan(root, Options{CacheFile: cf, CacheKey: key})
			if err != nil || t.Hashed != 1 {
				b.Fatal(err, t.Hashed)
			}
		}
	})
}
