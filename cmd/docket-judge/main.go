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

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/internal/judgehook"
)

func main() {
	if sock, args, ok := hookclient.Socket(os.Args[1:]); ok {
		os.Exit(hookclient.Run(hookclient.RouteJudge, sock, args, os.Stdin, os.Stdout, os.Stderr, judgeUnreachable))
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

// judgeUnreachable answers when the daemon does not: read-only calls
// pass to the runtime's own permission rules, everything else is denied.
func judgeUnreachable(args []string, payload []byte, reason string, stdout, stderr io.Writer) int {
	rt := hookclient.Flag(args, "runtime")
	ev, err := hooks.Decode(payload, hooks.Runtime(rt))
	if err != nil {
		io.WriteString(stderr, "docket-judge: error: "+reason+"\n")
		return 2
	}
	if k := ev.Kind(); k == hooks.KindRead || k == hooks.KindSearch {
		io.WriteString(stderr, "docket-judge: warning: "+reason+"; read-only call passed\n")
		return 0
	}
	if err := judgehook.Answer(stdout, ev.Runtime, hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny, Reason: "docket-judge: " + reason}); err != nil {
		io.WriteString(stderr, "docket-judge: error: "+err.Error()+"\n")
		return 2
	}
	return 0
}
