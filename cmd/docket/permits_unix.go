//go:build unix

package main

import (
	"os"
	"strconv"
	"syscall"

	"github.com/docket/docket/internal/hookclient"
)

// callerOpenFlags are added to O_RDONLY when the daemon opens a file a
// caller names: a FIFO opens without waiting for a writer, a terminal
// does not become the daemon's.
const callerOpenFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// permits reports whether peer may use st by its owner bits (need
// shifted left by 6) when it owns st, its group bits (shifted by 3) when
// st's group is the peer's primary group, or its world bits (need).
// Supplementary groups are not known here: a file the caller reaches
// only through one of them is refused.
func permits(st os.FileInfo, peer hookclient.Peer, need os.FileMode) bool {
	perm := st.Mode().Perm()
	if perm&need != 0 {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && (sys.Uid == peer.UID && perm&(need<<6) != 0 || sys.Gid == peer.GID && perm&(need<<3) != 0)
}

// ownerOf is st's owner uid, for messages.
func ownerOf(st os.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(sys.Uid), 10)
	}
	return "unknown"
}
