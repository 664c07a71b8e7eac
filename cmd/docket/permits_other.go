//go:build !linux

package main

import (
	"os"

	"github.com/docket/docket/internal/hookclient"
)

const callerOpenFlags = 0

// permits decides by the world's mode bits alone. Off Linux the hook
// socket serves no caller of another uid (it cannot name one: see
// server.PeerCred), so this is never asked for one.
func permits(file fileRef, peer hookclient.Peer, need os.FileMode) bool {
	return file.st.Mode().Perm()&need != 0
}

func ownerOf(st os.FileInfo) string { return "unknown" }
