//go:build !linux

package server

import (
	"errors"
	"net"

	"github.com/docket/docket/internal/hookclient"
)

// PeerCred is not implemented here: the hook socket refuses every
// caller rather than serve one it cannot name.
func PeerCred(c *net.UnixConn) (hookclient.Peer, error) {
	return hookclient.Peer{}, errors.New("peer credentials: not supported on this system")
}
