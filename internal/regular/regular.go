// Package regular opens the files a hook reads because a payload or the
// agent's working tree names them (a transcript, a Codex rollout, a body
// file a command sends out, a .git file): never waiting on a FIFO or a
// device, and only when what was opened is a regular file. A hook that
// blocked on a FIFO would run into its runtime's timeout, and runtimes
// fail open on a timeout.
package regular

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"syscall"
)

// ErrNotRegular is returned for a path that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading without blocking, and returns it only when
// it is a regular file (symlinks followed).
func Open(path string) (*os.File, error) {
	return openRegular(path, 0)
}

// OpenNoFollow is Open of path itself: a symlink is refused, not
// followed.
func OpenNoFollow(path string) (*os.File, error) {
	return openRegular(path, flagNoFollow)
}

func openRegular(path string, extra int) (*os.File, error) {
	f, typ, err := open(path, extra)
	if err != nil {
		return nil, err
	}
	if typ != 0 {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%v)", ErrNotRegular, typ)}
	}
	return f, nil
}

// ErrNotDir is returned by OpenDir for a path that is not a directory.
var ErrNotDir = errors.New("not a directory")

// OpenDir opens directory path (symlinks followed) for listing; anything
// else (a FIFO swapped in for it) fails at once.
func OpenDir(path string) (*os.File, error) {
	f, typ, err := open(path, flagDir)
	if errors.Is(err, syscall.ENOTDIR) {
		// O_DIRECTORY refused it in the kernel
		return nil, &os.PathError{Op: "open", Path: path, Err: ErrNotDir}
	}
	if err != nil {
		return nil, err
	}
	if typ != fs.ModeDir {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: ErrNotDir}
	}
	return f, nil
}

// DirNames lists the names in directory path, sorted, opened with
// OpenDir: off the runtime's poller, and failing at once on anything
// that is not a directory.
func DirNames(path string) ([]string, error) {
	f, err := OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	slices.Sort(names)
	return names, err
}

// ErrTooLarge is returned by ReadFile for a file over its limit.
var ErrTooLarge = errors.New("larger than the limit")

// ReadFile reads the regular file at path, opened with open (Open when
// nil), when it holds at most max bytes.
func ReadFile(open func(string) (*os.File, error), path string, max int64) ([]byte, error) {
	if open == nil {
		open = Open
	}
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &os.PathError{Op: "read", Path: path, Err: ErrTooLarge}
	}
	return b, nil
}
