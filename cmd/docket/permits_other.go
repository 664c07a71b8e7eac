//go:build !unix

package main

import "os"

func permits(st os.FileInfo, uid uint32, need os.FileMode) bool {
	return st.Mode().Perm()&need != 0
}
