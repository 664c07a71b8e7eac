//go:build darwin

package worktree

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// statOf extracts the fields the cache compares. ctime cannot be set by
// an unprivileged process, so a rewrite that restores mtime and size is
// still seen.
func statOf(fi fs.FileInfo) stat {
	st := stat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode() & (fs.ModeType | 0o777))}
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino, st.dev = uint64(s.Ino), uint64(s.Dev)
		st.ctime = s.Ctimespec.Sec*1e9 + s.Ctimespec.Nsec
	}
	return st
}

func lstatAt(_ *os.File, dir, name string) (stat, error) {
	fi, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		return stat{}, err
	}
	return statOf(fi), nil
}
