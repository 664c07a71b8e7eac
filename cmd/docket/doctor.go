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
	"time"

	"github.com/docket/docket/install"
	"github.com/docket/docket/internal/home"
)

const doctorUsage = `usage: docket doctor [--json]

Checks that docket protects this user and project, and says how to fix
what it finds: keys present and private; the state root outside synced
folders (iCloud, Dropbox, OneDrive, Google Drive, Syncthing); hooks wired
in every settings file that applies, binaries executable, timeouts sane;
policies parse and their policy_version; the recorded toolchains still
answer and no agent of this user can rewrite them; every ledger verifies; the
store opens; the LLM judge's model family differs from the agent's; the
recent judge-unavailable rate.

  --json  print {"healthy": bool, "results": [{check, status, detail, fix}]}

Statuses: ok, warn (works, but weaker than it should be), fail, skip
(could not be checked, with the reason).

Exit codes: 0 nothing failed, 1 a check failed, 2 usage error or the
state root cannot be located.
`

func init() {
	commands["doctor"] = command{summary: "check the installation and say how to fix it", run: runDoctor}
}

func runDoctor(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, doctorUsage) }
	asJSON := fs.Bool("json", false, "")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitCode(2, nil)
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Sprintf("doctor takes no arguments, got %q", fs.Arg(0)), "")
	}
	h, err := home.Resolve()
	if err != nil {
		return exitCode(2, err)
	}
	env := &install.Env{Home: h, Now: time.Now()}
	env.UserHome, _ = os.UserHomeDir()
	if env.ProjectDir, err = os.Getwd(); err != nil {
		return exitCode(2, fmt.Errorf("locate project directory: %w", err))
	}
	results := install.Doctor(env)
	healthy := install.Healthy(results)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(struct {
			Healthy bool             `json:"healthy"`
			Results []install.Result `json:"results"`
		}{healthy, results}); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			fmt.Fprintf(stdout, "%-4s  %-18s %s\n", strings.ToUpper(string(r.Status)), r.Check, r.Detail)
			if r.Fix != "" && (r.Status == install.Fail || r.Status == install.Warn) {
				fmt.Fprintf(stdout, "%24s fix: %s\n", "", r.Fix)
			}
		}
	}
	if !healthy {
		return exitCode(1, nil)
	}
	return nil
}
