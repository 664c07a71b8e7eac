//go:build unix

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/docket/docket/internal/hookclient"
)

// callerOpenFlags are added to O_RDONLY when the daemon opens a file a
// caller names: a FIFO opens without waiting for a writer, a terminal
// does not become the daemon's.
const callerOpenFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// permits reports whether peer may use st as the kernel decides it by
// mode bits: by the owner's bits (need shifted left by 6) when peer owns
// st, else by the group's (shifted by 3) when peer is in st's group —
// its primary group, or one of its process's supplementary groups
// (memberOf) — else by the world's (need). ACLs and capabilities are not
// consulted: a file the caller reaches only through them is refused.
func permits(st os.FileInfo, peer hookclient.Peer, need os.FileMode) bool {
	perm := st.Mode().Perm()
	sys, ok := st.Sys().(*syscall.Stat_t)
	world, group := perm&need != 0, perm&(need<<3) != 0
	switch {
	case !ok:
		return world
	case sys.Uid == peer.UID:
		return perm&(need<<6) != 0
	case group == world:
		return world // membership cannot change the answer: no /proc read
	case sys.Gid == peer.GID || memberOf(peer, sys.Gid):
		return group
	}
	return world
}

// memberOf reports whether gid is a supplementary group of the peer's
// process (the Groups line of /proc/PID/status; the process is alive, as
// it waits for the answer). False where there is no /proc.
func memberOf(peer hookclient.Peer, gid uint32) bool {
	if peer.PID <= 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(peer.PID)) + "/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Groups:"); ok {
			for _, f := range strings.Fields(rest) {
				if g, err := strconv.ParseUint(f, 10, 32); err == nil && uint32(g) == gid {
					return true
				}
			}
			return false
		}
	}
	return false
}

// ownerOf is st's owner uid, for messages.
func ownerOf(st os.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(sys.Uid), 10)
	}
	return "unknown"
}
