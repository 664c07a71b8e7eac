//go:build linux

// The checks of a caller's permissions are Linux's: only there does the
// hook socket serve a caller of another uid (server.PeerCred).

package main

import (
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/docket/docket/internal/hookclient"
)

// callerOpenFlags are added to O_RDONLY when the daemon opens a file a
// caller names: a FIFO opens without waiting for a writer, a terminal
// does not become the daemon's.
const callerOpenFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY | syscall.O_CLOEXEC

// permits reports whether peer may use file for need (one permission
// bit in the world's place: 0o004 read, 0o001 search) as the kernel
// decides it (fs/namei.c, acl_permission_check): by the owner's bits
// (need shifted left by 6) when peer owns the file; else by its access
// ACL (aclPermits) when it has one and its group bits are not all
// clear; else by the group's bits (shifted by 3) when peer is in the
// file's group — its primary group, or one of its process's
// supplementary groups — else by the world's (need). An ACL that cannot
// be read or is malformed refuses. Capabilities are not consulted: a
// file the caller reaches only through one (a root caller's
// CAP_DAC_OVERRIDE, say) is refused.
func permits(file fileRef, peer hookclient.Peer, need os.FileMode) bool {
	perm := file.st.Mode().Perm()
	sys, ok := file.st.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return perm&need != 0
	case sys.Uid == peer.UID:
		return perm&(need<<6) != 0
	}
	inGroup := groupTest(peer)
	if perm&0o070 != 0 { // with the group bits all clear the kernel skips the ACL
		acl, err := file.accessACL()
		if err != nil {
			return false
		}
		if acl != nil {
			return aclPermits(acl, peer.UID, sys.Gid, inGroup, uint16(need))
		}
	}
	world, group := perm&need != 0, perm&(need<<3) != 0
	if group != world && inGroup(sys.Gid) { // else membership cannot change the answer
		return group
	}
	return world
}

// groupTest returns a test of peer's membership of a group: its primary
// group, or a supplementary group of its process, read from
// /proc/PID/status on the first question the primary group does not
// answer (the process is alive, as it waits for the answer). Where there
// is no /proc it has no supplementary groups.
func groupTest(peer hookclient.Peer) func(gid uint32) bool {
	var groups []uint32
	read := false
	return func(gid uint32) bool {
		if gid == peer.GID {
			return true
		}
		if !read {
			groups, read = supplementaryGroups(peer), true
		}
		return slices.Contains(groups, gid)
	}
}

// supplementaryGroups is the Groups line of the peer's /proc/PID/status.
func supplementaryGroups(peer hookclient.Peer) []uint32 {
	if peer.PID <= 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(int(peer.PID)) + "/status")
	if err != nil {
		return nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Groups:"); ok {
			var groups []uint32
			for _, f := range strings.Fields(rest) {
				if g, err := strconv.ParseUint(f, 10, 32); err == nil {
					groups = append(groups, uint32(g))
				}
			}
			return groups
		}
	}
	return nil
}

// accessACL reads file's access ACL: nil, without error, when it has
// none or its file system has no ACLs. An ACL that changes size between
// the two reads is an error.
func (file fileRef) accessACL() ([]byte, error) {
	n, err := file.getxattr(nil) // its size
	if err == nil {
		b := make([]byte, n)
		if n, err = file.getxattr(b); err == nil {
			return b[:n], nil
		}
	}
	if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
		return nil, nil
	}
	return nil, err
}

// getxattr reads the ACL xattr into dest, from the open file when there
// is one, else by path; with an empty dest it returns the size.
func (file fileRef) getxattr(dest []byte) (n int, err error) {
	if file.f == nil {
		return unix.Getxattr(file.path, aclXattr, dest)
	}
	rc, err := file.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	cerr := rc.Control(func(fd uintptr) { n, err = unix.Fgetxattr(int(fd), aclXattr, dest) })
	if cerr != nil {
		return 0, cerr
	}
	return n, err
}

// ownerOf is st's owner uid, for messages.
func ownerOf(st os.FileInfo) string {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return strconv.FormatUint(uint64(sys.Uid), 10)
	}
	return "unknown"
}
