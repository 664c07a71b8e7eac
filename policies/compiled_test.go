//go:build linux

package policies

import (
	"os"
	"path/filepath"
	"testing"

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
