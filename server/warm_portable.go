//go:build !linux

package server

import (
	"os"
	"strconv"
	"time"
)

// identity appends p's identity to b (statIdentity of its lstat and,
// for a symlink, its target and the identity of what it points to) and
// reports whether p is (or points to) a directory, the latest mtime or
// ctime seen, and whether p exists.
func identity(b []byte, p string) ([]byte, bool, time.Time, bool) {
	lst, err := os.Lstat(p)
	if err != nil {
		return append(b, "absent"...), false, time.Time{}, false
	}
	id, latest := statIdentity(lst)
	b = append(append(b, id...), ' ')
	st := lst
	if lst.Mode()&os.ModeSymlink != 0 {
		if t, err := os.Readlink(p); err == nil {
			b = append(append(append(b, "->"...), t...), 0)
		}
		if st, err = os.Stat(p); err != nil {
			return append(b, "dangling"...), false, latest, false
		}
		id, mod := statIdentity(st)
		b = append(append(b, id...), ' ')
		if mod.After(latest) {
			latest = mod
		}
	}
	return b, st.IsDir(), latest, true
}

// fallbackIdentity is the portable part of a file's identity.
func fallbackIdentity(fi os.FileInfo) string {
	return strconv.FormatUint(uint64(fi.Mode()), 16) + " " + strconv.FormatInt(fi.Size(), 10) + " " + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
}
