//go:build !linux

package ledger

import "os"

// syncData makes f's appended bytes durable.
func syncData(f *os.File) error { return f.Sync() }

// openFile is os.OpenFile (sync_linux.go saves the poller registration).
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// tryLock always leaves the lock to gofrs/flock here.
func tryLock(path string) (unlock func(), ok bool) { return nil, false }

// startWriteback does nothing here (see sync_linux.go).
func startWriteback(f *os.File) {}

// readFile is os.ReadFile.
func readFile(name string) ([]byte, error) { return os.ReadFile(name) }
