//go:build unix

package main

import (
	"os"
	"strconv"
	"syscall"
)

// callerOpenFlags are added to O_RDONLY when the daemon opens a file a
// caller names: a FIFO opens without waiting for a writer, a terminal
// does not become the daemon's.
const callerOpenFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// permits reports whether uid may use st by its owner bits (the owner's
// copy of need shifted left by 6) or by the world bits (need).
func permits(st os.FileInfo, uid uint32, need os.FileMode) bool {
	if st.Mode().Perm()&need != 0 {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Uid == uid && st.Mode().Perm()&(need<<6) != 0
}

// ownerOf is st's owner uid, for messages.
func ownerOf(st os.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(sys.Uid), 10)
	}
	return "unknown"
}
