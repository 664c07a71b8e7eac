//go:build unix && !linux

package server

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

// statIdentity is fi's device, inode, mode, size, mtime and ctime, and
// the later of its mtime and ctime.
func statIdentity(fi os.FileInfo) (string, time.Time) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fallbackIdentity(fi), fi.ModTime()
	}
	m, c := fi.ModTime(), ctime(st)
	later := m
	if c.After(m) {
		later = c
	}
	return strconv.FormatUint(uint64(st.Dev), 16) + ":" + strconv.FormatUint(uint64(st.Ino), 16) + " " +
		fallbackIdentity(fi) + " " + strconv.FormatInt(c.UnixNano(), 10), later
}
