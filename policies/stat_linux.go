package policies

import (
	"fmt"
	"io/fs"
	"syscall"
)

// statKey identifies a file version: size, mtime, ctime and inode.
func statKey(st fs.FileInfo) string {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d.%d:%d:%d", st.Size(), st.ModTime().UnixNano(), sys.Ctim.Sec, sys.Ctim.Nsec, sys.Dev, sys.Ino)
}
