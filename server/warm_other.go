//go:build !unix

package server

import (
	"os"
	"time"
)

func statIdentity(fi os.FileInfo) (string, time.Time) { return fallbackIdentity(fi), fi.ModTime() }
