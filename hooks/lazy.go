package hooks

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on first use. Every hook binary links this
// package, and most calls need none of its expressions (each runtime's
// codec needs its own), so none is compiled at start-up.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
