// Package sockettest serves a Unix socket for the hook clients' tests: a
// stand-in daemon whose every answer the test writes itself.
package sockettest

import (
	"net"
	"path/filepath"
	"testing"
)

// Serve listens on a fresh Unix socket, closed when the test ends, and
// hands each connection with the first read of its request (up to 1 MiB)
// to answer, which writes what it likes; the connection is closed after.
// It returns the socket's path.
func Serve(t testing.TB, answer func(c net.Conn, req []byte)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "d.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1<<20)
				n, _ := c.Read(buf)
				answer(c, buf[:n])
			}()
		}
	}()
	return sock
}
