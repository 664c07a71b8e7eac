package hookclient

import (
	"io"
	"time"

	"github.com/docket/docket/internal/hookclient/wire"
)

// MaxStdin bounds what a thin client forwards (and the daemon reads).
const MaxStdin = wire.MaxStdin

// Unreachable answers when the daemon does not (see wire.Unreachable).
type Unreachable = wire.Unreachable

// Socket reports the configured socket and args without --socket and
// --socket-timeout (see wire.Socket).
func Socket(args []string, valueFlags ...string) (string, []string, bool) {
	return wire.Socket(args, valueFlags...)
}

// Flag returns the value of --name V or --name=V in args ("" if absent).
func Flag(args []string, name string) string { return wire.Flag(args, name) }

// Run forwards one invocation to the daemon on sock and prints its
// answer, or unreachable's (see wire.Run).
func Run(route, sock string, args []string, stdin io.Reader, stdout, stderr io.Writer, unreachable Unreachable) int {
	return wire.Run(route, sock, args, stdin, stdout, stderr, unreachable)
}

// Call sends req to route on the daemon on sock (see wire.Call).
func Call(sock, route string, req Request, timeout time.Duration) (*Response, error) {
	return wire.Call(sock, route, req, timeout)
}
