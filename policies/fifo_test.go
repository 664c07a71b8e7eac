//go:build unix

package policies

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/docket/docket/internal/regular"
	"github.com/docket/docket/internal/regular/regulartest"
)

// A policy file (a delegate in the agent's tree) or a project file the
// binding reads that is a FIFO does not hold the hook: the read fails at
// once, and the caller fails closed or skips it.
func TestFIFOsDoNotBlock(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"judges.md", "Makefile", "package.json"} {
		regulartest.Mkfifo(t, filepath.Join(dir, name))
	}
	regulartest.Within(t, 5*time.Second, "readLimited", func() {
		if _, err := readLimited(filepath.Join(dir, "judges.md")); !errors.Is(err, regular.ErrNotRegular) {
			t.Errorf("readLimited(FIFO) = %v, want ErrNotRegular", err)
		}
	})
	for _, cmd := range []string{"make test", "npm test"} {
		regulartest.Within(t, 5*time.Second, "CommandFits "+cmd, func() {
			if CommandFits(dir, cmd) {
				t.Errorf("CommandFits(%q) with a FIFO for its file = true", cmd)
			}
		})
	}
}
