package validators

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RunAs is the user a validator's processes run as, when that is not
// the running process's own: `docket serve --socket` runs a caller's
// validator as the caller (SO_PEERCRED), never with the daemon's rights.
// The processes get a scratch directory of their own for TMPDIR, HOME,
// GOPATH and the go caches (cold: the harness's caches are the daemon's);
// the captured outputs stay in the daemon's directory, out of their
// reach.
type RunAs struct {
	UID, GID uint32
	Groups   []uint32
}

// scratchFor creates (once) the run-as user's scratch directory in tmp.
func (x *execution) scratchFor() (string, error) {
	dir := filepath.Join(x.tmp, "as-"+strconv.FormatUint(uint64(x.runAs.UID), 10))
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, nil
	}
	// the user may traverse the daemon's directory, not list or write it
	if err := os.Chmod(x.tmp, 0o711); err != nil {
		return "", fmt.Errorf("scratch for uid %d: %w", x.runAs.UID, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("scratch for uid %d: %w", x.runAs.UID, err)
	}
	if err := os.Chown(dir, int(x.runAs.UID), int(x.runAs.GID)); err != nil {
		return "", fmt.Errorf("scratch for uid %d: %w", x.runAs.UID, err)
	}
	return dir, nil
}

// runAsEnv points env's private directories into the run-as user's
// scratch directory.
func (x *execution) runAsEnv(env []string) ([]string, error) {
	dir, err := x.scratchFor()
	if err != nil {
		return nil, err
	}
	if env == nil {
		// never the daemon's own environment (its secrets)
		env = x.tc.baseEnv(dir)
	}
	repl := map[string]string{
		"TMPDIR": dir, "HOME": filepath.Join(dir, "home"), "GOPATH": filepath.Join(dir, "gopath"),
		"GOCACHE": filepath.Join(dir, "gocache"), "GOMODCACHE": filepath.Join(dir, "gomodcache"),
	}
	out := make([]string, 0, len(env)+len(repl))
	seen := map[string]bool{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if v, ok := repl[k]; ok {
			kv, seen[k] = k+"="+v, true
		}
		out = append(out, kv)
	}
	for _, k := range []string{"TMPDIR", "HOME"} {
		if !seen[k] {
			out = append(out, k+"="+repl[k])
		}
	}
	return out, nil
}
