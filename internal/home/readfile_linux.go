package home

import (
	"os"
	"syscall"
)

// readSmall reads a small bookkeeping file: os.ReadFile without the
// netpoller registration os.Open tries on every file (four fcntl calls
// and an epoll_ctl that fails for a regular file), which a hook pays on
// every call. Errors are *os.PathError, as os.ReadFile's.
func readSmall(path string) ([]byte, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	b := make([]byte, 0, 128)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := syscall.Read(fd, b[len(b):cap(b)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
}
