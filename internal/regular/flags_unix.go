//go:build unix

package regular

import "syscall"

// openFlags: a FIFO opens without waiting for a writer (and reads then
// end at once), a terminal does not become the process's.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
