// Command docket-judge is docket's PreToolUse hook: it reads one PreToolUse
// payload on stdin, judges the proposed tool call (allow, block, revise or
// escalate) and prints the runtime's answer on stdout. The work is
// internal/judgehook's; with a socket configured (sealed mode) this is a
// thin client of the docket daemon.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"

	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/internal/judgehook"
)

func main() {
	if sock, args, ok := hookclient.Socket(os.Args[1:], "runtime"); ok {
		os.Exit(hookclient.Run(hookclient.RouteJudge, sock, args, os.Stdin, os.Stdout, os.Stderr, hookclient.JudgeUnreachable))
	}
	judgehook.UseDocketDetector()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := judgehook.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, judgehook.Options{})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return judgehook.Run(ctx, args, stdin, stdout, stderr, judgehook.Options{})
}
