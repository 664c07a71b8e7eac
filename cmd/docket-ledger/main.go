// Command docket-ledger is the PostToolUse and PostToolUseFailure hook (and
// the UserPromptSubmit hook, which records the prompt that starts a causal
// chain): it reads one hook payload on stdin and appends one entry, with
// its raw artifacts, to the session's ledger under $DOCKET_HOME. The work is
// internal/ledgerhook's; with a socket configured (sealed mode) this is a
// thin client of the docket daemon.
package main

import (
	"context"
	"io"
	"os"

	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/internal/ledgerhook"
)

var version = ""

func main() {
	if sock, args, ok := hookclient.Socket(os.Args[1:], "runtime"); ok {
		os.Exit(hookclient.Run(hookclient.RouteLedger, sock, args, os.Stdin, os.Stdout, os.Stderr, hookclient.LedgerUnreachable))
	}
	ledgerhook.Version = version
	os.Exit(ledgerhook.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, ledgerhook.Options{}))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return ledgerhook.Run(ctx, args, stdin, stdout, stderr, ledgerhook.Options{})
}
