//go:build unix

package regular

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// open opens path with O_NONBLOCK (a FIFO opens without waiting for a
// writer) and O_NOCTTY (a terminal does not become the process's), and
// returns it with its stat. A regular file gets its O_NONBLOCK cleared
// before it becomes an *os.File: os.NewFile would otherwise register it
// with the runtime's poller, which a hook pays for in set-up and system
// calls, and a regular file reads the same either way.
func open(path string) (*os.File, os.FileInfo, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG {
		if err := unix.SetNonblock(fd, false); err != nil {
			syscall.Close(fd)
			return nil, nil, &os.PathError{Op: "fcntl", Path: path, Err: err}
		}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat() // from the open file: no second path lookup
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
