//go:build unix

package regular

import (
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The flags open adds for OpenDir and OpenNoFollow.
const (
	flagDir      = syscall.O_DIRECTORY
	flagNoFollow = syscall.O_NOFOLLOW
)

// open opens path with O_NONBLOCK (a FIFO opens without waiting for a
// writer), O_NOCTTY (a terminal does not become the process's) and
// extra, and returns it with its file type. A regular file or a
// directory gets its O_NONBLOCK cleared before it becomes an *os.File:
// os.NewFile would otherwise register it with the runtime's poller,
// which costs system calls on every file, and neither reads differently.
// Three system calls in all: open, fstat and fcntl.
func open(path string, extra int) (*os.File, fs.FileMode, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_CLOEXEC|extra, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	var typ fs.FileMode
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		typ = fs.ModeDir
	case unix.S_IFIFO:
		typ = fs.ModeNamedPipe
	case unix.S_IFCHR:
		typ = fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		typ = fs.ModeDevice
	case unix.S_IFSOCK:
		typ = fs.ModeSocket
	default:
		typ = fs.ModeIrregular
	}
	if typ == 0 || typ == fs.ModeDir {
		// F_SETFL sets only the status flags (O_APPEND, O_NONBLOCK, …):
		// none but O_NONBLOCK was set, and it is cleared
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, 0); err != nil {
			syscall.Close(fd)
			return nil, 0, &os.PathError{Op: "fcntl", Path: path, Err: err}
		}
	}
	return os.NewFile(uintptr(fd), path), typ, nil
}
