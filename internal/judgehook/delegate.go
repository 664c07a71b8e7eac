package judgehook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/docket/docket/hooks"
)

// delegateToDocket hands the whole call to `docket judge-hook` (the same
// judgehook.Run, with the model judge linked): docket-judge does not link
// the model client, and a call that consults a model costs a network
// round trip anyway. Its answer is passed on only when it exits 0; any
// other end denies the call (fail closed).
func delegateToDocket(ctx context.Context, args []string, payload []byte, rt hooks.Runtime, stdout, stderr io.Writer) error {
	cmd := docketCommand(append([]string{"judge-hook"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(payload), &out, &errb
	err := runWithContext(ctx, cmd)
	io.Copy(stderr, &errb)
	if err != nil {
		why := strings.TrimSpace(errb.String())
		if i := strings.LastIndexByte(why, '\n'); i >= 0 {
			why = why[i+1:]
		}
		if why == "" {
			why = err.Error()
		}
		return Answer(stdout, rt, hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny,
			Reason: fmt.Sprintf("docket-judge: the policy configures a model judge, which runs in `docket judge-hook`, and that failed (%s); failing closed", why)})
	}
	_, err = stdout.Write(out.Bytes())
	return err
}

func runWithContext(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		cmd.Process.Kill()
		<-done
		return ctx.Err()
	}
}
