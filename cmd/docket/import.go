package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/docket/docket/adapters/eventcontract"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
)

const importUsage = `usage: docket import openclaw [FILE|-] [--workspace W] [--project P] [--json]

Imports OpenClaw runtime events (contract openclaw_appleseed.runtime_event
1.0) from FILE, or stdin when FILE is "-" or absent. The input is one
envelope, a list of envelopes, a batch object with "events", an
openclaw_operator_session artifact (adapted into a session_started
envelope and, when it has an outcome, a session_feedback envelope), or a
replay bundle written by 'docket export openclaw'.

The whole input is validated first; an invalid field or an envelope id
already stored with other content writes nothing. Raw first: each
envelope is stored byte for byte as the envelope.json artifact of a
runtime_event ledger entry in its session's ledger; session_started
stays raw evidence; session_feedback is projected into a feedback record
(a runtime_projection entry) and an observed, evidence-only memory.
Omitted envelope and event ids are derived from the content, and an
omitted occurred_at is the envelope's recorded_at or the import time; each
is recorded as generated. Importing the same input again adds nothing.

Flags:
  --workspace W   scope of the projected memories (default: the bundle's,
                  else "openclaw")
  --project P     project within the workspace
  --json          print the result as JSON

Exit codes: 0 imported (or nothing new), 1 invalid or conflicting input
(nothing written) or the store failed, 2 usage error.
`

func init() {
	commands["import"] = command{summary: "import runtime events (openclaw) raw-first, with projection", run: runImport}
}

func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("import", importUsage, stderr)
	workspace := fs.String("workspace", "", "")
	project := fs.String("project", "", "")
	asJSON := fs.Bool("json", false, "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return parseErr(err)
	}
	if len(pos) == 0 || pos[0] != "openclaw" {
		return usageError("import needs a runtime: docket import openclaw [FILE|-]", "openclaw is the only runtime with an event contract")
	}
	if len(pos) > 2 {
		return usageError("import takes one file", "concatenate envelopes into a JSON list instead")
	}
	name := "-"
	if len(pos) == 2 {
		name = pos[1]
	}
	data, err := readInput(name, stdin)
	if err != nil {
		return err
	}
	in, err := eventcontract.Parse(data, eventcontract.Options{})
	if err != nil {
		return invalidInput(err)
	}
	led, s, err := openRuntimeState(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	im := &eventcontract.Importer{Ledger: led, Store: s, Workspace: *workspace, Project: *project}
	res, err := im.Import(ctx, in)
	if err != nil {
		var ce *eventcontract.ConflictError
		if errors.As(err, &ce) {
			return fmt.Errorf("conflicting runtime event (nothing written): %w", err)
		}
		return err
	}
	if *asJSON {
		return printJSON(stdout, res)
	}
	for _, e := range res.Envelopes {
		fmt.Fprintf(stdout, "%-9s %s %s envelope %s event %s ledger %s#%d", e.Status, e.SessionID, e.EventKind, e.EnvelopeID, e.EventID, e.LedgerSession, e.Seq)
		switch e.Projection {
		case "raw_only":
			fmt.Fprint(stdout, " raw only")
		default:
			fmt.Fprintf(stdout, " %s %s memory %s", strings.ReplaceAll(e.Projection, "_", " "), e.RecordID, e.MemoryID)
		}
		if len(e.Generated) > 0 {
			fmt.Fprintf(stdout, " (generated: %s)", strings.Join(e.Generated, ", "))
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "openclaw %s: %d imported, %d duplicate, %d projected\n", res.Form, res.Imported, res.Duplicate, res.Projected)
	return nil
}

// readInput reads FILE, or stdin for "-", up to the contract's limit.
func readInput(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, exitCode(1, fmt.Errorf("read input: %w", err))
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, eventcontract.MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read input: %w", err)
	}
	return data, nil
}

// invalidInput lists every invalid field, one per line.
func invalidInput(err error) error {
	var ie *eventcontract.InvalidError
	if !errors.As(err, &ie) {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invalid runtime events, nothing written (%d problem", len(ie.Errs))
	if len(ie.Errs) != 1 {
		b.WriteString("s")
	}
	b.WriteString(")")
	for _, fe := range ie.Errs {
		fmt.Fprintf(&b, "\n  %s: %s", fe.Field, fe.Msg)
	}
	return errors.New(b.String())
}

// openRuntimeState opens the ledger and the store under the state root.
func openRuntimeState(ctx context.Context) (*ledger.Ledger, store.Store, error) {
	h, err := home.Resolve()
	if err != nil {
		return nil, nil, err
	}
	led, err := ledger.Open(h)
	if err != nil {
		return nil, nil, err
	}
	s, err := openCLIStore(ctx)
	if err != nil {
		return nil, nil, err
	}
	return led, s, nil
}
