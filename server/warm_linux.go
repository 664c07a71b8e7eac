package server

import (
	"os"
	"strconv"
	"syscall"
	"time"
)

// identity appends p's identity to b — device, inode, mode, size, mtime
// and ctime in nanoseconds of its lstat, and for a symlink its target
// and the same of what it points to — and reports whether p is (or
// points to) a directory, the latest mtime or ctime seen, and whether p
// exists. Plain system calls into a stack Stat_t: a warm hook call
// fingerprints some thirty paths, and building a FileInfo and strings
// for each cost more than the calls.
func identity(b []byte, p string) ([]byte, bool, time.Time, bool) {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) != nil {
		return append(b, "absent"...), false, time.Time{}, false
	}
	b = appendStat(b, &st)
	latest := statLatest(&st)
	if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		if t, err := os.Readlink(p); err == nil {
			b = append(append(append(b, "->"...), t...), 0)
		}
		if syscall.Stat(p, &st) != nil {
			return append(b, "dangling"...), false, latest, false
		}
		b = appendStat(b, &st)
		if l := statLatest(&st); l.After(latest) {
			latest = l
		}
	}
	return b, st.Mode&syscall.S_IFMT == syscall.S_IFDIR, latest, true
}

func appendStat(b []byte, st *syscall.Stat_t) []byte {
	for _, v := range []uint64{uint64(st.Dev), uint64(st.Ino), uint64(st.Mode), uint64(st.Size),
		uint64(st.Mtim.Sec), uint64(st.Mtim.Nsec), uint64(st.Ctim.Sec), uint64(st.Ctim.Nsec)} {
		b = strconv.AppendUint(b, v, 16)
		b = append(b, ' ')
	}
	return b
}

// statLatest is the later of st's mtime and ctime.
func statLatest(st *syscall.Stat_t) time.Time {
	if st.Ctim.Sec > st.Mtim.Sec || st.Ctim.Sec == st.Mtim.Sec && st.Ctim.Nsec > st.Mtim.Nsec {
		return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
	}
	return time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec))
}
