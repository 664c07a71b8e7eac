package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/docket/docket/adapters/eventcontract"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

const exportUsage = `usage: docket export openclaw --session S [--out FILE]

Writes the replay bundle of runtime session S (its id as the runtime sent
it): the source artifact, the session report, the handoff, every stored
envelope (byte for byte, base64, with the values docket generated and a
readable view) and the projected feedback records. 'docket import
openclaw BUNDLE' into a fresh state root reproduces the same envelope,
event, record and memory ids; importing it twice adds nothing.

Flags:
  --session S   the runtime session id (required)
  --out FILE    write to FILE instead of stdout

Exit codes: 0 written, 1 no runtime events for the session or the ledger
did not verify, 2 usage error.
`

func init() {
	commands["export"] = command{summary: "write a runtime session's replay bundle (openclaw)", run: runExport}
}

func runExport(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flagSet("export", exportUsage, stderr)
	session := fs.String("session", "", "")
	out := fs.String("out", "", "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return parseErr(err)
	}
	if len(pos) != 1 || pos[0] != "openclaw" {
		return usageError("export needs a runtime: docket export openclaw --session S", "openclaw is the only runtime with an event contract")
	}
	if *session == "" {
		return usageError("export needs --session", "the session ids appear in 'docket import openclaw' output")
	}
	led, err := openLedger()
	if err != nil {
		return err
	}
	s, err := eventcontract.Load(led, *session)
	if err != nil {
		return err
	}
	b, err := eventcontract.Export(s)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return fmt.Errorf("encode bundle: %w", err)
	}
	data = append(data, '\n')
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	if err := home.WriteFileAtomic(*out, data, 0o600); err != nil {
		return fmt.Errorf("write bundle: %w", err)
	}
	fmt.Fprintf(stderr, "docket: wrote %s (%d envelopes, %d projected records)\n", *out, len(b.Envelopes), len(b.ProjectedRecords))
	return nil
}

// openLedger opens the ledger under the state root.
func openLedger() (*ledger.Ledger, error) {
	h, err := home.Resolve()
	if err != nil {
		return nil, err
	}
	return ledger.Open(h)
}
