//go:build !linux

package policies

import (
	"time"

	"github.com/docket/docket/internal/home"
)

// The compiled-policy cache needs ctime (compiled_linux.go); elsewhere
// the policies are loaded from the files every time.

// CompiledSnapshot is the fingerprint taken before a full load.
type CompiledSnapshot struct{}

func (CompiledSnapshot) ok() bool { return false }

// ReadCompiled never hits here.
func ReadCompiled(home.Home, string, []string) (string, bool) { return "", false }

// SnapshotCompiled takes no fingerprint here.
func SnapshotCompiled(home.Home, []string) CompiledSnapshot { return CompiledSnapshot{} }

// WriteCompiled writes nothing here.
func WriteCompiled(home.Home, string, []string, CompiledSnapshot, []byte) {}

// SetCacheClock does nothing here (there is no cache).
func SetCacheClock(func() time.Time) (restore func()) { return func() {} }

// CompiledPath is where the cache file would be.
func CompiledPath(h home.Home, kind string, extra []string) string { return "" }
