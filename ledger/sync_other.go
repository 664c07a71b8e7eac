//go:build !linux

package ledger

import "os"

// syncData makes f's appended bytes durable.
func syncData(f *os.File) error { return f.Sync() }
