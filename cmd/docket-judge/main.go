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
	os.Exit(judgehook.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr, options))
}

// options cancel a long wait (recall, a headless approval, the model
// judge's hand-over) on SIGINT, so the hook still answers and records.
// signal.Notify starts a goroutine and locks an OS thread for it; set up
// only when such a wait begins, a routine call does not pay for it.
var options = judgehook.Options{
	Interrupt: func(ctx context.Context) (context.Context, context.CancelFunc) {
		return signal.NotifyContext(ctx, os.Interrupt)
	},
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return judgehook.Run(ctx, args, stdin, stdout, stderr, options)
}
