package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

const checkpointUsage = `usage: docket checkpoint --session S [--dir DIR]

Verifies the session's ledger and prints its signed checkpoint (C2SP
tlog-checkpoint in a signed note). Keep it: 'docket verify --session S
--checkpoint FILE' later proves the ledger only grew since.

Exit codes: 0 printed, 1 the ledger does not verify, 2 could not run.
`

const proveUsage = `usage: docket prove --session S --seq N [--dir DIR]

Prints an inclusion proof that entry N is in the session's ledger, against
its current signed checkpoint. 'docket verify --proof FILE --vkey VKEY'
checks it offline.

Exit codes: 0 printed, 1 the ledger does not verify, 2 could not run.
`

func init() {
	commands["checkpoint"] = command{summary: "print a signed checkpoint of a session's ledger", run: runCheckpoint}
	commands["prove"] = command{summary: "print an inclusion proof for one ledger entry", run: runProve}
}

func runCheckpoint(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("checkpoint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, checkpointUsage) }
	session := fs.String("session", "", "")
	dir := fs.String("dir", "", "")
	if err := fs.Parse(args); err != nil {
		return exitCode(2, nil)
	}
	if *session == "" || fs.NArg() > 0 {
		return usageError("checkpoint needs --session S", "list sessions with 'docket verify --all'")
	}
	opts, err := auditOptions(*dir)
	if err != nil {
		return exitCode(2, err)
	}
	msg, _, err := ledger.CurrentCheckpoint(opts.h, *session, opts.VerifyOptions)
	if err != nil {
		return ledgerExit(err)
	}
	_, err = stdout.Write(msg)
	return err
}

func runProve(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("prove", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, proveUsage) }
	session := fs.String("session", "", "")
	seq := fs.Int64("seq", -1, "")
	dir := fs.String("dir", "", "")
	if err := fs.Parse(args); err != nil {
		return exitCode(2, nil)
	}
	if *session == "" || *seq < 0 || fs.NArg() > 0 {
		return usageError("prove needs --session S and --seq N", "")
	}
	opts, err := auditOptions(*dir)
	if err != nil {
		return exitCode(2, err)
	}
	p, err := ledger.Prove(opts.h, *session, *seq, opts.VerifyOptions)
	if err != nil {
		return ledgerExit(err)
	}
	_, err = stdout.Write(p.Marshal())
	return err
}

type audit struct {
	ledger.VerifyOptions
	h home.Home
}

// auditOptions loads what verification needs from a state root.
func auditOptions(dir string) (audit, error) {
	h, err := stateRoot(dir)
	if err != nil {
		return audit{}, err
	}
	keys, err := ledger.LoadKeys(h)
	if err != nil {
		return audit{}, fmt.Errorf("%w (checkpoints and proofs are made where the ledger is written)", err)
	}
	return audit{h: h, VerifyOptions: ledger.VerifyOptions{VerifierKey: keys.VerifierKey(), Keys: keys}}, nil
}

// ledgerExit maps a ledger error to exit 1 for a failed verification and
// 2 for anything else.
func ledgerExit(err error) error {
	var ve *ledger.VerifyError
	if errors.As(err, &ve) {
		return exitCode(1, err)
	}
	return exitCode(2, err)
}
