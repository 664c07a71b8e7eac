package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

const verifyUsage = `usage: docket verify [--session S | --all] [--checkpoint FILE | --witness DIR] [--vkey FILE] [--dir DIR] [--accept-sealed] [--json]
       docket verify --proof FILE [--vkey FILE]

Verifies ledgers: each entry's encoding, seq, session, hash chain and HMAC,
every artifact's digest, the signed head, and (with --checkpoint) that the
ledger extends a checkpoint kept earlier. Works on a copied state root on
another machine (--dir or $DOCKET_HOME): without the HMAC key it checks
everything else with the public verifier key and says what it could not
check. --proof checks an inclusion proof from 'docket prove' offline.

Without --session it also takes an inventory of the state root: every
session the signed session index (ledger/.sessions) lists or any file
names (head, tree, artifact pack, run/cwd) must still have its ledger, and
every ledger must be in the index. A seal entry (bytes found after the last
valid entry or bundle, set aside by the next append) is a finding too.

Flags:
  --session S        verify one session (default: all sessions)
  --all              verify every session
  --checkpoint FILE  a signed checkpoint ('docket checkpoint') the ledger must extend
  --witness DIR      the witness directory of 'docket serve --witness DIR':
                     every session witnessed there must still have a
                     ledger that extends its witnessed checkpoint (a
                     rolled-back, truncated or deleted ledger fails)
  --vkey FILE        checkpoint verifier key (default: keys/checkpoint.vkey)
  --dir DIR          state root to verify (default: $DOCKET_HOME)
  --no-artifacts     skip artifact digests
  --accept-sealed    do not count seal entries as findings
  --json             print a JSON report

Exit codes: 0 intact, 1 tampered or inconsistent (the first bad entry and
why), 2 could not run.
`

func init() {
	commands["verify"] = command{summary: "verify ledgers, checkpoints and proofs offline", run: runVerify}
}

type verifyFlags struct {
	session, checkpoint, vkey, dir, proof  string
	witness                                string
	all, asJSON, noArtifacts, acceptSealed bool
}

func runVerify(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var f verifyFlags
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, verifyUsage) }
	fs.StringVar(&f.session, "session", "", "")
	fs.BoolVar(&f.all, "all", false, "")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "")
	fs.StringVar(&f.vkey, "vkey", "", "")
	fs.StringVar(&f.dir, "dir", "", "")
	fs.StringVar(&f.proof, "proof", "", "")
	fs.StringVar(&f.witness, "witness", "", "")
	fs.BoolVar(&f.asJSON, "json", false, "")
	fs.BoolVar(&f.noArtifacts, "no-artifacts", false, "")
	fs.BoolVar(&f.acceptSealed, "accept-sealed", false, "")
	if err := fs.Parse(args); err != nil {
		return exitCode(2, nil)
	}
	switch {
	case fs.NArg() > 0:
		return usageError("verify takes no arguments", "name a session with --session S")
	case f.session != "" && f.all:
		return usageError("--session and --all are mutually exclusive", "")
	case f.checkpoint != "" && f.session == "":
		return usageError("--checkpoint needs --session", "a checkpoint describes one session's ledger")
	case f.witness != "" && (f.checkpoint != "" || f.proof != ""):
		return usageError("--witness is checked with the ledgers, not with --checkpoint or --proof", "")
	case f.proof != "" && (f.session != "" || f.all || f.checkpoint != ""):
		return usageError("--proof is checked on its own", "drop --session, --all and --checkpoint")
	}
	h, err := stateRoot(f.dir)
	if err != nil {
		return exitCode(2, err)
	}
	// The verifier key checks checkpoints and proofs; without one the
	// ledgers themselves are still checked.
	vkey, vkeyErr := readVerifierKey(h, f.vkey)
	if vkeyErr != nil && (f.proof != "" || f.checkpoint != "" || f.vkey != "" || f.witness != "") {
		return exitCode(2, vkeyErr)
	}
	if f.proof != "" {
		return checkProof(f.proof, vkey, f.asJSON, stdout)
	}
	opts := ledger.VerifyOptions{VerifierKey: vkey, SkipArtifacts: f.noArtifacts, AcceptSealed: f.acceptSealed, Progress: stderr}
	if keys, err := ledger.LoadKeys(h); err == nil {
		opts.Keys = keys
	}
	if f.checkpoint != "" {
		if opts.Checkpoint, err = os.ReadFile(f.checkpoint); err != nil {
			return exitCode(2, fmt.Errorf("read checkpoint: %w", err))
		}
	}
	sessions := []string{f.session}
	var findings []ledger.Finding
	if f.session == "" {
		inv, err := ledger.TakeInventory(h, opts.Keys)
		if err != nil {
			return exitCode(2, err)
		}
		findings = inv.Findings()
		sessions = nil
		for _, s := range inv.Sessions {
			if s.Ledger {
				sessions = append(sessions, s.Session)
			}
		}
	}
	var witness map[string][]byte
	if f.witness != "" {
		if witness, err = witnessed(f.witness); err != nil {
			return exitCode(2, err)
		}
		listed := map[string]bool{}
		for _, s := range sessions {
			listed[s] = true
		}
		for s, cp := range witness {
			if f.session != "" && s != f.session {
				continue
			}
			if _, err := os.Stat(h.LedgerPath(s)); errors.Is(err, os.ErrNotExist) {
				size := "?"
				if c, err := ledger.OpenCheckpoint(cp, vkey); err == nil {
					size = fmt.Sprint(c.Size)
				}
				findings = append(findings, ledger.Finding{Session: s, Reason: fmt.Sprintf("the witness holds a checkpoint of %s entries but the ledger is gone: deleted or rolled back", size)})
				delete(listed, s)
				continue
			}
			if !listed[s] {
				sessions = append(sessions, s)
			}
		}
	}
	var reports []*ledger.Report
	ok := len(findings) == 0
	for _, s := range sessions {
		o := opts
		if cp, found := witness[s]; found {
			o.Checkpoint = cp
		}
		rep, err := ledger.Verify(h, s, o)
		if errors.Is(err, ledger.ErrNoLedger) && f.witness != "" {
			continue // named by the index, gone: an inventory finding already
		}
		if err != nil {
			return exitCode(2, err)
		}
		reports = append(reports, rep)
		ok = ok && rep.OK
	}
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		out := map[string]any{"ok": ok, "sessions": reports}
		if len(findings) > 0 {
			out["findings"] = findings
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		printFindings(stdout, findings)
		printReports(stdout, reports)
	}
	if !ok {
		return exitCode(1, nil)
	}
	return nil
}

func printFindings(w io.Writer, findings []ledger.Finding) {
	for _, f := range findings {
		if f.Session != "" {
			fmt.Fprintf(w, "FAIL  %s  %s\n", f.Session, f.Reason)
		} else {
			fmt.Fprintf(w, "FAIL  %s\n", f.Reason)
		}
	}
}

func printReports(w io.Writer, reports []*ledger.Report) {
	if len(reports) == 0 {
		fmt.Fprintln(w, "no ledgers")
		return
	}
	for _, r := range reports {
		if r.OK {
			sealed := ""
			if len(r.Sealed) > 0 {
				sealed = fmt.Sprintf(", %d sealed (accepted)", len(r.Sealed))
			}
			fmt.Fprintf(w, "ok    %s  %d entries, %d artifact sets (%d bytes)%s\n", r.Session, r.Entries, r.Artifacts, r.ArtifactBytes, sealed)
		} else if r.Failure.Seq >= 0 {
			fmt.Fprintf(w, "FAIL  %s  seq %d: %s\n", r.Session, r.Failure.Seq, r.Failure.Reason)
		} else {
			fmt.Fprintf(w, "FAIL  %s  %s\n", r.Session, r.Failure.Reason)
		}
	}
	fmt.Fprintf(w, "checked: %s\n", strings.Join(reports[0].Checked, ", "))
	if len(reports[0].NotChecked) > 0 {
		fmt.Fprintf(w, "not checked: %s\n", strings.Join(reports[0].NotChecked, ", "))
	}
}

func checkProof(path, vkey string, asJSON bool, stdout io.Writer) error {
	text, err := os.ReadFile(path)
	if err != nil {
		return exitCode(2, fmt.Errorf("read proof: %w", err))
	}
	e, c, err := ledger.CheckInclusion(text, vkey)
	if err != nil {
		if asJSON {
			json.NewEncoder(stdout).Encode(map[string]any{"ok": false, "reason": err.Error()})
		}
		return exitCode(1, fmt.Errorf("inclusion proof: %w", err))
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"ok": true, "session": e.Session, "seq": e.Seq, "tree_size": c.Size, "entry": e})
	}
	fmt.Fprintf(stdout, "ok    entry %d (%s, %s) is in %s of size %d\n", e.Seq, e.Kind, e.Tool, c.Origin, c.Size)
	return nil
}

// stateRoot is --dir when given, else the environment's state root.
func stateRoot(dir string) (home.Home, error) {
	if dir != "" {
		return home.At(dir)
	}
	return home.Resolve()
}

// readVerifierKey reads the checkpoint verifier key from path, else from
// the state root.
func readVerifierKey(h home.Home, path string) (string, error) {
	if path == "" {
		path = h.VerifierKeyPath()
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("no checkpoint verifier key at %s; pass --vkey FILE (or run 'docket init' on the machine that writes the ledger)", path)
	}
	if err != nil {
		return "", fmt.Errorf("read verifier key: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
