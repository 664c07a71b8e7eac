//go:build linux

package policies

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
)

// BenchmarkLoadGate compares the gate's policy load from the compiled
// cache with the full load (approval check, lexicon, binding) it
// replaces, on a state root holding the default policies.
func BenchmarkLoadGate(b *testing.B) {
	b.Run("defaults", func(b *testing.B) { benchmarkLoadGate(b, compiledHome(b)) })
	// a lexicon other than the default: the YAML is decoded and every
	// expression checked on a parse
	b.Run("custom", func(b *testing.B) {
		h := approvalHome(b)
		os.MkdirAll(filepath.Join(h.Root, "run"), 0o700)
		write(b, filepath.Join(h.PoliciesDir(), ClaimsFile), customClaims(b))
		mustApprove(b, h)
		benchmarkLoadGate(b, h)
	})
}

func benchmarkLoadGate(b *testing.B, h home.Home) {
	old := approvalCacheNow
	approvalCacheNow = func() time.Time { return time.Now().Add(10 * time.Second) }
	defer func() { approvalCacheNow = old }()
	if _, _, err := LoadGate(h); err != nil {
		b.Fatal(err)
	}
	if _, ok := ReadCompiled(h, CompiledKindGate, nil); !ok {
		b.Fatal("not cached")
	}
	b.Run("cache", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := LoadGate(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		for b.Loop() {
			if err := CheckApproval(h); err != nil {
				b.Fatal(err)
			}
			if _, err := LoadClaims(h); err != nil {
				b.Fatal(err)
			}
			if _, err := LoadBinding(h); err != nil {
				b.Fatal(err)
			}
		}
	})
	// the first use of the cue sets derives their literals: the cache
	// holds them, a parse derives them at the first stop
	b.Run("cache+cues", func(b *testing.B) {
		for b.Loop() {
			lex, _, _ := LoadGate(h)
			lex.Negation.MatchString("x")
		}
	})
	b.Run("parse+cues", func(b *testing.B) {
		for b.Loop() {
			CheckApproval(h)
			lex, _ := LoadClaims(h)
			LoadBinding(h)
			lex.Negation.MatchString("x")
		}
	})
}

func TestCompiledGateSize(t *testing.T) {
	lex, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadBinding(compiledHome(t))
	if err != nil {
		t.Fatal(err)
	}
	var e encoder
	encodeClaims(&e, lex)
	n := len(e.b)
	// the default binding must be cacheable, or every gate run misses
	if !encodeBinding(&e, b) {
		t.Fatal("the default binding cannot be encoded for the cache")
	}
	t.Logf("claims %d bytes, binding %d bytes", n, len(e.b)-n)
	// every gate run reads and decodes the cache: it stays small
	if len(e.b) > 16<<10 {
		t.Errorf("the default gate cache is %d bytes, want at most 16 KiB", len(e.b))
	}
}
