// Command docket is docket's CLI: key setup, the validator runner, the
// auditor's tools, and the human queues.
//
// Exit codes are per subcommand and written in each one's usage text; a
// usage error exits 2.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"strings"
)

var version = ""

const usage = `usage: docket <command> [flags]

Commands:
%s
Run 'docket <command> -h' for a command's flags and exit codes.
`

// command is one subcommand. run returns an error; an *exitError carries a
// specific exit code, any other error exits 1.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

// commands is the table of subcommands; each lives in a file of its name.
var commands = map[string]command{}

// exitError ends the process with code after printing err (when non-nil).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode wraps err so that main exits with code.
func exitCode(code int, err error) error { return &exitError{code: code, err: err} }

// usageError reports a bad invocation: exit 2, with an optional hint line.
func usageError(msg, hint string) error {
	if hint != "" {
		msg += "\nhint: " + hint
	}
	return exitCode(2, errors.New(msg))
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(report(err, os.Stderr))
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(stderr, usage, commandList())
		if len(args) == 0 {
			return exitCode(2, nil)
		}
		return nil
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(stdout, "docket", buildVersion())
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return usageError(fmt.Sprintf("unknown command %q", args[0]), "run 'docket help' for the list")
	}
	return cmd.run(ctx, args[1:], stdin, stdout, stderr)
}

// report prints err as "docket: error: …" and returns the exit code.
func report(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
		err = ee.err
	}
	fmt.Fprintf(stderr, "docket: error: %v\n", err)
	return code
}

func commandList() string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-12s %s\n", n, commands[n].summary)
	}
	return b.String()
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
