package server

import (
	"fmt"
	"net"

	"github.com/docket/docket/internal/hookclient"
	"golang.org/x/sys/unix"
)

// PeerCred is the uid, gid and pid of the process on the other end of
// c, as the kernel recorded them at connect (SO_PEERCRED).
func PeerCred(c *net.UnixConn) (hookclient.Peer, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return hookclient.Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := rc.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return hookclient.Peer{}, fmt.Errorf("peer credentials: %w", err)
	}
	if serr != nil {
		return hookclient.Peer{}, fmt.Errorf("peer credentials: %w", serr)
	}
	return hookclient.Peer{UID: cred.Uid, GID: cred.Gid, PID: cred.Pid}, nil
}
