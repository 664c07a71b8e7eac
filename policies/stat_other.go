//go:build !linux && !darwin

package policies

import "io/fs"

// statKey is empty where there is no ctime: every check reads the files.
func statKey(fs.FileInfo) string { return "" }
