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

// openFile is os.OpenFile for the regular files an append uses, without
// the netpoller registration os.OpenFile tries on every file (four fcntl
// calls and an epoll_ctl that fails for a regular file).
func openFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != syscall.EINTR {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
}
