//go:build !unix

package regular

import (
	"io/fs"
	"os"
)

// No O_DIRECTORY or O_NOFOLLOW here: OpenDir checks the type after
// opening, OpenNoFollow by an lstat first (no FIFOs to fear either).
const (
	flagDir      = 1 << 30
	flagNoFollow = 1 << 29
)

// open is os.Open and its file type.
func open(path string, extra int) (*os.File, fs.FileMode, error) {
	if extra&flagNoFollow != 0 {
		if st, err := os.Lstat(path); err != nil {
			return nil, 0, err
		} else if st.Mode()&os.ModeSymlink != 0 {
			return nil, 0, &os.PathError{Op: "open", Path: path, Err: ErrNotRegular}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Mode().Type(), nil
}
