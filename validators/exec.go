package validators

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// maxArtifact bounds each captured output stream; the rest is counted
// and dropped.
const maxArtifact = 32 << 20

// waitDelay is how long a finished or killed command's leftover children
// may hold its output pipes open.
const waitDelay = 3 * time.Second

// proc is one finished process run.
type proc struct {
	exitCode int // -1 when it did not exit normally
	timedOut bool
	duration time.Duration
	dropped  int64 // output bytes beyond maxArtifact
}

// runProc runs argv in dir with env (nil: inherit), stdin from /dev/null,
// in its own process group, capturing stdout and stderr into the named
// artifacts and also into onStdout (may be nil). On timeout the whole
// process group is killed. An error means the command could not start.
func (x *execution) runProc(ctx context.Context, argv []string, env []string, timeout time.Duration, prefix string, onStdout io.Writer) (*proc, error) {
	outF, err := x.artifactFile(prefix + ".stdout")
	if err != nil {
		return nil, err
	}
	defer outF.Close()
	errF, err := x.artifactFile(prefix + ".stderr")
	if err != nil {
		return nil, err
	}
	defer errF.Close()
	stdout := &capWriter{w: outF}
	stderr := &capWriter{w: errF}

	if x.runAs != nil {
		if env, err = x.runAsEnv(env); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = x.cwd
	cmd.Env = env
	if onStdout != nil {
		cmd.Stdout = io.MultiWriter(stdout, onStdout)
	} else {
		cmd.Stdout = stdout
	}
	cmd.Stderr = stderr
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)
	if x.runAs != nil {
		if err := setCredential(cmd, x.runAs); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	pid := cmd.Process.Pid
	err = cmd.Wait()
	p := &proc{exitCode: -1, duration: time.Since(start)}
	killProcessGroup(pid) // leftovers a command sent to the background
	p.timedOut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	var ee *exec.ExitError
	switch {
	case err == nil:
		p.exitCode = 0
	case errors.As(err, &ee):
		p.exitCode = ee.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		p.exitCode = cmd.ProcessState.ExitCode()
	}
	p.dropped = stdout.dropped + stderr.dropped
	return p, nil
}

// describe says how a failed process ended.
func (p *proc) describe(timeout time.Duration) string {
	switch {
	case p.timedOut:
		return fmt.Sprintf("timed out after %v (process group killed)", timeout)
	case p.exitCode < 0:
		return "killed by a signal"
	}
	return fmt.Sprintf("exit status %d", p.exitCode)
}

type capWriter struct {
	w       io.Writer
	n       int64
	dropped int64
}

func (c *capWriter) Write(b []byte) (int, error) {
	room := maxArtifact - c.n
	if room <= 0 {
		c.dropped += int64(len(b))
		return len(b), nil
	}
	k := len(b)
	if int64(k) > room {
		k = int(room)
		c.dropped += int64(len(b) - k)
	}
	n, err := c.w.Write(b[:k])
	c.n += int64(n)
	if err != nil {
		return n, err
	}
	return len(b), nil
}

// lineWriter calls fn with each complete line written to it (without the
// newline). Lines longer than maxLine are cut.
type lineWriter struct {
	buf []byte
	fn  func(line []byte)
}

const maxLine = 1 << 20

func (l *lineWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(l.buf)+len(b) <= maxLine {
				l.buf = append(l.buf, b...)
			}
			break
		}
		if len(l.buf)+i <= maxLine {
			l.buf = append(l.buf, b[:i]...)
		}
		l.fn(l.buf)
		l.buf = l.buf[:0]
		b = b[i+1:]
	}
	return n, nil
}

// Flush delivers a final unterminated line.
func (l *lineWriter) Flush() {
	if len(l.buf) > 0 {
		l.fn(l.buf)
		l.buf = l.buf[:0]
	}
}
