//go:build !linux && !darwin

package worktree

import (
	"io/fs"
	"os"
	"path/filepath"
)

// statOf extracts what the portable FileInfo offers. Without ctime no
// entry is ever cached (see Scan): every scan hashes every file.
func statOf(fi fs.FileInfo) stat {
	return stat{size: fi.Size(), mtime: fi.ModTime().UnixNano(), mode: uint32(fi.Mode() & (fs.ModeType | 0o777))}
}

func lstatAt(_ *os.File, dir, name string) (stat, error) {
	fi, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		return stat{}, err
	}
	return statOf(fi), nil
}
