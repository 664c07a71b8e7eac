//go:build linux

package worktree

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// statOf extracts the fields the cache compares. ctime cannot be set by
// an unprivileged process, so a rewrite that restores mtime and size is
// still seen.
func statOf(fi fs.FileInfo) stat {
	s, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return stat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode())}
	}
	return stat{
		size: int64(s.Size), mtime: int64(s.Mtim.Sec)*1e9 + int64(s.Mtim.Nsec), ctime: int64(s.Ctim.Sec)*1e9 + int64(s.Ctim.Nsec),
		ino: uint64(s.Ino), dev: uint64(s.Dev), mode: rawMode(s.Mode),
	}
}

// lstatAt stats name in the open directory d (at path dir) without
// following a symlink.
func lstatAt(d *os.File, dir, name string) (stat, error) {
	var s unix.Stat_t
	if err := unix.Fstatat(int(d.Fd()), name, &s, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return stat{}, err
	}
	return stat{
		size: int64(s.Size), mtime: int64(s.Mtim.Sec)*1e9 + int64(s.Mtim.Nsec), ctime: int64(s.Ctim.Sec)*1e9 + int64(s.Ctim.Nsec),
		ino: uint64(s.Ino), dev: uint64(s.Dev), mode: rawMode(s.Mode),
	}, nil
}

// rawMode maps st_mode to an fs.FileMode: the file type and the
// permission bits (what fileMode reads).
func rawMode(m uint32) uint32 {
	fm := fs.FileMode(m & 0o777)
	switch m & syscall.S_IFMT {
	case syscall.S_IFLNK:
		fm |= fs.ModeSymlink
	case syscall.S_IFDIR:
		fm |= fs.ModeDir
	case syscall.S_IFREG:
	default:
		fm |= fs.ModeIrregular
	}
	return uint32(fm)
}
