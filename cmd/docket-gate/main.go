// Command docket-gate is the Stop and SubagentStop hook: it reads the
// agent's final message and blocks the stop when the message claims done,
// fixed, tests passing, shipped, blocked or a delegation that the session's
// ledger cannot back with fresh, signed validator evidence. The work is
// internal/gatehook's; with a socket configured (sealed mode) this is a
// thin client of the docket daemon.
package main

import (
	"context"
	"io"
	"os"

	"github.com/docket/docket/internal/gatehook"
	"github.com/docket/docket/internal/hookclient"
)

var version = ""

func main() {
	if sock, args, ok := hookclient.Socket(os.Args[1:], "runtime", "timeout"); ok {
		os.Exit(hookclient.Run(hookclient.RouteGate, sock, args, os.Stdin, os.Stdout, os.Stderr, hookclient.GateUnreachable))
	}
	gatehook.Version = version
	os.Exit(gatehook.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type usageError = gatehook.UsageError

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return gatehook.Run(ctx, args, stdin, stdout, stderr)
}
