package judge

import "slices"

// words is a set of strings held as a list literal. A package-level map
// literal is built by the package's init in every process that links
// the package (each hook call, whether or not it looks anything up); a
// list of constants is laid out by the linker and costs nothing until
// it is read. The lists are short: a scan is as quick as hashing.
type words []string

// has reports whether s is one of w.
func (w words) has(s string) bool { return slices.Contains(w, s) }
