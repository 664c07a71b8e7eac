//go:build unix

package main

import (
	"os"
	"syscall"
)

// permits reports whether uid may use st by its owner bits (the owner's
// copy of need shifted left by 6) or by the world bits (need).
func permits(st os.FileInfo, uid uint32, need os.FileMode) bool {
	if st.Mode().Perm()&need != 0 {
		return true
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Uid == uid && st.Mode().Perm()&(need<<6) != 0
}
