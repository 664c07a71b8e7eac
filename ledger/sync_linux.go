package ledger

import (
	"os"

	"syscall"
)

// syncData makes f's appended bytes durable: fdatasync, which also
// commits the new file size (what a reader needs) but not timestamps.
func syncData(f *os.File) error {
	c, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := c.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return serr
}
