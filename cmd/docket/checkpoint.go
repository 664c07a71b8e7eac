package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/docket/docket/gate"
	"github.com/docket/docket/hooks"
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

// WitnessExt names a witnessed checkpoint: <dir>/<session>.checkpoint.
const WitnessExt = ".checkpoint"

// publish hands the session's signed checkpoint to the witness
// directory after every gate run (allowed, blocked or released, with or
// without a gate_decision entry): the daemon's own files can then be
// rolled back or truncated only at the cost of disagreeing with the
// witness ('docket verify --witness DIR').
func (d *hookDaemon) publish(ev *hooks.Event, r *gate.Result) {
	if d.witness == "" || ev == nil || !home.ValidSessionID(ev.SessionID) {
		return
	}
	h, err := home.Resolve()
	if err != nil {
		return
	}
	l, err := d.ledger(h)
	if err != nil {
		return
	}
	if _, err := os.Stat(h.LedgerPath(ev.SessionID)); err != nil {
		return // nothing recorded for the session yet
	}
	msg, c, err := l.SignedHead(ev.SessionID)
	if err != nil {
		d.log("witness %s: %v", ev.SessionID, err)
		return
	}
	d.witnessMu.Lock()
	defer d.witnessMu.Unlock()
	if err := writeWitness(d.witness, ev.SessionID, msg, c.Size, l.Keys().VerifierKey()); err != nil {
		d.log("witness %s: %v", ev.SessionID, err)
	}
}

// writeWitness replaces dir/<session>.checkpoint with msg unless the
// witness already holds a larger tree: a witness never moves backwards,
// even when the ledger did. Not fsynced: a lost witness write costs a
// weaker check, never a false alarm.
func writeWitness(dir, session string, msg []byte, size int64, vkey string) error {
	path := filepath.Join(dir, session+WitnessExt)
	if old, err := os.ReadFile(path); err == nil {
		// another session's checkpoint planted here does not count
		if c, err := ledger.OpenCheckpoint(old, vkey); err == nil && c.Origin == ledger.Origin(session) && c.Size > size {
			return fmt.Errorf("the witness holds a checkpoint of %d entries and the ledger has %d: the ledger was rolled back; run 'docket verify --witness %s'", c.Size, size, dir)
		}
	}
	tmp, err := os.CreateTemp(dir, "."+session+".*")
	if err != nil {
		return fmt.Errorf("write witness: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(msg); err != nil {
		tmp.Close()
		return fmt.Errorf("write witness: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write witness: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write witness: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write witness: %w", err)
	}
	return nil
}

// witnessed reads the checkpoints in a witness directory, by session.
func witnessed(dir string) (map[string][]byte, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read witness: %w", err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		session, ok := strings.CutSuffix(e.Name(), WitnessExt)
		if !ok || strings.HasPrefix(e.Name(), ".") || !e.Type().IsRegular() || !home.ValidSessionID(session) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read witness: %w", err)
		}
		out[session] = b
	}
	return out, nil
}
