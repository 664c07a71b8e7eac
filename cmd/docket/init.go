package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/validators"
)

const initUsage = `usage: docket init [--toolchains]

Creates the state root ($DOCKET_HOME, else $XDG_STATE_HOME/docket, else
~/.local/state/docket): the HMAC key and the Ed25519 checkpoint key
(mode 0400, never overwritten), the checkpoint verifier key
(keys/checkpoint.vkey, printed), the default policies and validator
definitions (installed read-only; existing files are kept), the approval
of those defaults (see 'docket policy'), and toolchains.json: the go and
python3 found on your PATH, by real path and version, which validators run
instead of whatever is first on an agent's PATH. Running it again changes
nothing.

Flags:
  --toolchains   record the toolchains again (after an upgrade)

Exit codes: 0 ready, 1 could not create the state root.
`

func init() {
	commands["init"] = command{summary: "create the state root, keys and default policies", run: runInit}
}

func runInit(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, initUsage) }
	retool := fs.Bool("toolchains", false, "")
	if err := fs.Parse(args); err != nil {
		return exitCode(2, nil)
	}
	if fs.NArg() > 0 {
		return usageError("init takes no arguments", "")
	}
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(h.Root, 0o700); err != nil {
		return fmt.Errorf("create state root: %w", err)
	}
	res, err := ledger.Init(h)
	if err != nil {
		return err
	}
	created := res.Created
	files := map[string][]byte{}
	for _, name := range policies.Names() {
		b, err := policies.Default(name)
		if err != nil {
			return err
		}
		files[filepath.Join(h.PoliciesDir(), name)] = b
	}
	for name, b := range defaultValidatorDefinitions() {
		files[filepath.Join(h.ValidatorsDir(), name)] = b
	}
	for path, b := range files {
		ok, err := installReadOnly(path, b)
		if err != nil {
			return err
		}
		if ok {
			created = append(created, path)
		}
	}
	// the defaults just installed are the approved policy; files that
	// differ from them wait for a human's `docket policy approve`
	switch a, changes, _, err := policies.Status(h); {
	case err != nil:
		fmt.Fprintf(stderr, "docket: warning: policy approval: %v\n", err)
	case a == nil && len(changes) == 0:
		if _, err := policies.Approve(h, "docket init", time.Now()); err != nil {
			return err
		}
		created = append(created, policies.ApprovalPath(h))
	case len(changes) > 0:
		fmt.Fprintf(stderr, "docket: warning: the policy files differ from the approved ones (%s); review them with 'docket policy approve'\n", changes[0])
	}
	rec, notes := validators.RecordToolchains(ctx, nil)
	wrote, err := validators.WriteToolchainRecord(h, rec, *retool)
	if err != nil {
		return err
	}
	if wrote {
		created = append(created, h.ToolchainsPath())
		for _, name := range []string{"go", "python3"} {
			if t, ok := rec.Tools[name]; ok {
				fmt.Fprintf(stdout, "toolchain %s: %s (%s)\n", name, t.Path, t.Version)
			}
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "docket: warning: toolchain %s\n", n)
		}
	}
	fmt.Fprintf(stdout, "state root: %s\n", h.Root)
	if len(created) == 0 {
		fmt.Fprintln(stdout, "already initialized; nothing changed")
	} else {
		fmt.Fprintf(stdout, "created %d files\n", len(created))
	}
	fmt.Fprintf(stdout, "checkpoint verifier key (%s):\n%s\n", h.VerifierKeyPath(), res.VerifierKey)
	return nil
}

// installReadOnly writes b to path with mode 0444 unless path exists.
func installReadOnly(path string, b []byte) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("install %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(path)
		return false, fmt.Errorf("install %s: %w", path, err)
	}
	return true, f.Close()
}
