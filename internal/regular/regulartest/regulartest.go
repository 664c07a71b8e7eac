//go:build unix

// Package regulartest helps a test show that code reading a path an
// agent controls does not wait on a FIFO there.
package regulartest

import (
	"syscall"
	"testing"
	"time"
)

// Mkfifo makes a FIFO at path.
func Mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Within fails t when f has not returned within d: code blocked on a FIFO
// would hold a hook until its runtime's timeout. f keeps running after a
// failure (nothing can interrupt an open(2) waiting for a writer).
func Within(t testing.TB, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}
