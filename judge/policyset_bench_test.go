package judge

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

// BenchmarkLoadPolicySet compares a routine call's policy load from the
// compiled-policy cache with the load from the files (read, version,
// pre-decoded defaults or parse, directives, approval check) on an
// approved state root holding the default policies (as `docket init`
// writes them) and a project without delegates.
func BenchmarkLoadPolicySet(b *testing.B) {
	h, _ := home.At(filepath.Join(b.TempDir(), "state"))
	for _, d := range []string{h.KeysDir(), h.PoliciesDir(), h.RunDir()} {
		os.MkdirAll(d, 0o700)
	}
	os.WriteFile(h.HMACKeyPath(), []byte("k1"), 0o400)
	for _, n := range policies.Names() {
		data, _ := policies.Default(n)
		os.WriteFile(filepath.Join(h.PoliciesDir(), n), data, 0o600)
	}
	if _, err := policies.Approve(h, "bench", time.Unix(0, 0)); err != nil {
		b.Fatal(err)
	}
	defer policies.SetCacheClock(func() time.Time { return time.Now().Add(10 * time.Second) })()
	proj := b.TempDir()
	dels := DelegatePaths(proj, proj, "")
	if _, err := LoadPolicySet(h, dels...); err != nil {
		b.Fatal(err)
	}
	if _, ok := policies.ReadCompiled(h, policies.CompiledKindJudge, dels); !ok {
		b.Fatal("not cached")
	}
	b.Run("cache", func(b *testing.B) {
		for b.Loop() {
			if _, err := LoadPolicySet(h, dels...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			set, _, err := loadPolicySet(h, dels...)
			if err != nil {
				b.Fatal(err)
			}
			dsrc, _ := policies.Load(h, policies.DirectivesFile)
			if err := loadDirectives(set, dsrc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
