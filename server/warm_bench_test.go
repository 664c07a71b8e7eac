package server

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkFingerprint is the stat fingerprint a warm hook call takes of
// a default state root's policy inputs (DOCKET_BENCH_HOME, or a tree of
// the same shape: three directories of 3, 6 and 8 files and two files):
// "young" as the tree was just written (every directory read on every
// call), "settled" as an installed one (listings kept, see listDir).
func BenchmarkFingerprint(b *testing.B) {
	root := os.Getenv("DOCKET_BENCH_HOME")
	if root == "" {
		root = b.TempDir()
		for dir, n := range map[string]int{"keys": 3, "policies": 6, "validators": 8} {
			if err := os.MkdirAll(filepath.Join(root, dir), 0o700); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if err := os.WriteFile(filepath.Join(root, dir, string(rune('a'+i))+".yaml"), []byte("x"), 0o600); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, f := range []string{"toolchains.json", "policy-approval.json"} {
			if err := os.WriteFile(filepath.Join(root, f), []byte("{}"), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	paths := []string{filepath.Join(root, "policies"), filepath.Join(root, "validators"), filepath.Join(root, "toolchains.json"),
		filepath.Join(root, "policy-approval.json"), filepath.Join(root, "keys")}
	now := time.Now()
	defer func(f func() time.Time) { listingNow = f }(listingNow)
	for _, c := range []struct {
		name  string
		clock func() time.Time
	}{{"young", func() time.Time { return time.Now().Add(-time.Hour) }}, {"settled", func() time.Time { return time.Now().Add(time.Hour) }}} {
		listingNow = c.clock
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Fingerprint(now, paths...)
			}
		})
	}
}
