// Command noop is the baseline for whole-process hook benchmarks: a static
// Go binary that reads its stdin and exits 0.
package main

import (
	"io"
	"os"
)

func main() { io.Copy(io.Discard, os.Stdin) }
