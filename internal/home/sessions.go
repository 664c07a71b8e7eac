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

// RecordSessionForDir remembers that the hooks last saw session in cwd,
// so `docket validate` can default its --session.
func (h Home) RecordSessionForDir(cwd, session string) error {
	if cwd == "" || !ValidSessionID(session) {
		return nil
	}
	p := h.dirKey(cwd)
	if cur, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(cur)) == session {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("record session for dir: %w", err)
	}
	return WriteFileAtomic(p, []byte(session+"\n"), 0o600)
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
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
