// Command docket-hook is the sealed-mode hook: a thin client of the
// docket daemon (`docket serve --socket PATH`) that links nothing but the
// client, so it starts as fast as a hook can. `docket-hook judge`, `ledger`
// and `gate` forward their payload to the daemon and print its answer,
// exactly what docket-judge, docket-ledger and docket-gate print; if the
// daemon does not answer they fail closed as those do with a socket.
package main

import (
	"fmt"
	"os"

	"github.com/docket/docket/internal/hookclient"
)

const usage = `usage: docket-hook judge|ledger|gate --socket PATH [hook flags] < payload.json

Forwards the payload to the docket daemon on PATH (also DOCKET_SOCKET) and
prints its answer. If the daemon does not answer within the deadline
(--socket-timeout D, DOCKET_SOCKET_TIMEOUT; default: judge 9s, ledger 4s,
gate its --timeout or 12s): judge denies side-effecting calls, gate blocks,
ledger exits 2.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	route, unreachable := "", hookclient.Unreachable(nil)
	switch os.Args[1] {
	case "judge":
		route, unreachable = hookclient.RouteJudge, hookclient.JudgeUnreachable
	case "ledger":
		route, unreachable = hookclient.RouteLedger, hookclient.LedgerUnreachable
	case "gate":
		route, unreachable = hookclient.RouteGate, hookclient.GateUnreachable
	default:
		fmt.Fprint(os.Stderr, usage)
		fmt.Fprintf(os.Stderr, "docket: error: unknown hook %q\n", os.Args[1])
		os.Exit(2)
	}
	sock, args, ok := hookclient.Socket(os.Args[2:], "runtime", "timeout")
	if !ok {
		fmt.Fprint(os.Stderr, usage)
		fmt.Fprintln(os.Stderr, "docket: error: no socket: pass --socket PATH or set DOCKET_SOCKET")
		os.Exit(2)
	}
	os.Exit(hookclient.Run(route, sock, args, os.Stdin, os.Stdout, os.Stderr, unreachable))
}
