package home

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// dirKey names the bookkeeping file for one working directory.
func (h Home) dirKey(cwd string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(cwd)))
	return filepath.Join(h.RunDir(), "cwd", hex.EncodeToString(sum[:16]))
}

// sessionKey names the file holding the first directory the hooks saw a
// session in.
func (h Home) sessionKey(session string) string {
	return filepath.Join(h.RunDir(), "session", session+".cwd")
}

// RecordSessionForDir remembers that the hooks last saw session in cwd,
// so `docket validate` can default its --session, and, the first time
// the session is seen, that it started in cwd, in the project
// ProjectRoot(cwd) (SessionDir). The project is fixed then: a .git the
// agent creates later in a parent directory does not widen it. Every
// hook calls it (judge, ledger, gate), so a session's first tool call is
// enough. A call whose index is already current costs a stat and a read.
func (h Home) RecordSessionForDir(cwd, session string) error {
	if cwd == "" || !ValidSessionID(session) || !filepath.IsAbs(cwd) {
		return nil
	}
	cwd = filepath.Clean(cwd)
	sp := h.sessionKey(session)
	if _, err := os.Stat(sp); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(sp), 0o700); err != nil {
			return fmt.Errorf("record session dir: %w", err)
		}
		if err := writeOnce(sp, []byte(cwd+"\n"+ProjectRoot(cwd)+"\n")); err != nil {
			return fmt.Errorf("record session dir: %w", err)
		}
	}
	p := h.dirKey(cwd)
	if cur, err := readSmall(p); err == nil && strings.TrimSpace(string(cur)) == session {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("record session for dir: %w", err)
	}
	// A hint, rewritten whenever another session works in the same
	// directory: replaced atomically but not synced (a crash can lose it,
	// and `docket validate` then asks for --session), so two sessions
	// sharing a directory do not cost every hook call an fsync.
	return writeAtomic(p, []byte(session+"\n"), 0o600, false)
}

// SessionDir returns the directory the hooks first saw session in and
// the project root it belonged to then, or "" twice with no error when
// they never saw it.
func (h Home) SessionDir(session string) (dir, root string, err error) {
	if !ValidSessionID(session) {
		return "", "", fmt.Errorf("read session dir: invalid session id %q", session)
	}
	b, err := os.ReadFile(h.sessionKey(session))
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("read session dir: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	dir = lines[0]
	if len(lines) > 1 {
		root = lines[1]
	}
	if !filepath.IsAbs(dir) || len(lines) > 2 || (root != "" && !filepath.IsAbs(root)) {
		return "", "", fmt.Errorf("read session dir: malformed record %q", b)
	}
	if root == "" {
		root = ProjectRoot(dir)
	}
	return dir, root, nil
}

// ProjectRoot returns the project a working directory belongs to: the
// root of the git work tree containing cwd (the nearest parent with a
// .git entry), else cwd itself. Symbolic links in cwd are resolved first
// so that one directory has one root. It runs no command.
func ProjectRoot(cwd string) string {
	if cwd == "" {
		return ""
	}
	dir := filepath.Clean(cwd)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// writeOnce creates path with data unless it exists, atomically: the
// content is written to a temporary file and hard-linked into place, so
// a reader never sees a partial file and the first writer wins.
func writeOnce(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// SessionForDir returns the session the hooks last saw in cwd, or "" with
// no error when there is none.
func (h Home) SessionForDir(cwd string) (string, error) {
	b, err := os.ReadFile(h.dirKey(cwd))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read session for dir: %w", err)
	}
	s := strings.TrimSpace(string(b))
	if !ValidSessionID(s) {
		return "", fmt.Errorf("read session for dir: malformed session id %q", s)
	}
	return s, nil
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, fsynced and renamed over path.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	return writeAtomic(path, data, perm, true)
}

func writeAtomic(path string, data []byte, perm os.FileMode, sync bool) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
