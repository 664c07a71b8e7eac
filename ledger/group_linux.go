package ledger

import (
	"path/filepath"
	"strconv"
	"syscall"
)

// filesIdentity is the stat identity of a session's ledger, pack and
// head: device, inode, size, and mtime and ctime in nanoseconds. Any
// append by another process changes the ledger's size; any write
// changes a file's ctime, which cannot be set back.
func filesIdentity(sf sessionFiles) string {
	b := make([]byte, 0, 192)
	for _, p := range []string{sf.ledger, filepath.Join(sf.artifacts, PackName), sf.head} {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			b = append(b, "absent;"...)
			continue
		}
		for _, n := range []int64{int64(st.Dev), int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()} {
			b = strconv.AppendInt(b, n, 16)
			b = append(b, ' ')
		}
		b = append(b, ';')
	}
	return string(b)
}
