//go:build !linux

package home

import "os"

// readSmall is os.ReadFile (readfile_linux.go saves the poller
// registration).
func readSmall(path string) ([]byte, error) { return os.ReadFile(path) }
