package ledger

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
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

// tryLock takes the exclusive lock on path without waiting, as
// flock.TryLock does (flock(2) on the file, created 0600 if missing),
// without the poller registration; ok is false when the lock is held
// elsewhere or anything fails, and the caller takes the waiting path.
func tryLock(path string) (unlock func(), ok bool) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false
	}
	for {
		err = syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, false
	}
	return func() {
		syscall.Flock(fd, syscall.LOCK_UN)
		syscall.Close(fd)
	}, true
}

// startWriteback starts writing f's dirty pages out without waiting
// (sync_file_range SYNC_FILE_RANGE_WRITE): no durability by itself, an
// fsync must follow. Errors are left to that fsync.
func startWriteback(f *os.File) {
	c, err := f.SyscallConn()
	if err != nil {
		return
	}
	c.Control(func(fd uintptr) {
		unix.SyncFileRange(int(fd), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
	})
}

// readFile is os.ReadFile through openFile.
func readFile(name string) ([]byte, error) {
	f, err := openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size() < 1<<30 {
		size = int(st.Size()) + 1
	}
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if errors.Is(err, io.EOF) {
				return b, nil
			}
			return nil, err
		}
	}
}
