package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/install"
)

const uninstallUsage = `usage: docket uninstall [--runtime claude|codex|gemini|cursor] [--scope user|project|local] [--dry-run]
       docket uninstall --runtime openclaw [--config FILE] [--dry-run]
       sudo docket uninstall --sealed ...   (sealed mode: 'docket install --sealed -h')

Removes docket's hook entries from the runtime's settings file: every
handler whose command runs docket-judge, docket-ledger or docket-gate,
and the groups and event lists that held nothing else. Everything else
is kept; the old file is kept beside it as <file>.docket-bak. For
--runtime codex it also takes docket's block out of Codex's config.toml,
or keeps in it only the trust the other scope's hooks still need.

  --runtime R  claude (default), codex, gemini or cursor
  --scope S    project (default), user, or local (Claude Code only)
  --dry-run    print the change as a diff and write nothing

Exit codes: 0 removed (or nothing to remove, or the diff was printed),
1 the settings file is not usable, 2 usage error.
`

func init() {
	commands["uninstall"] = command{summary: "remove docket's hooks from an agent runtime's settings", run: runUninstall}
}

func runUninstall(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if sealed, rest := sealedArg(args); sealed {
		return runSealed(true, rest, stdout, stderr, nil)
	}
	fs := flag.NewFlagSet("uninstall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, uninstallUsage) }
	var f wiringFlags
	f.register(fs, false)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitCode(2, nil)
	}
	if f.runtime == "openclaw" {
		return uninstallOpenClaw(fs, &f, stdout)
	}
	o, err := f.options("uninstall", fs)
	if err != nil {
		return err
	}
	c, err := install.PlanUninstall(o)
	if err != nil {
		return err
	}
	if err := applyChange(c, f.dryRun, stdout,
		fmt.Sprintf("removed %d docket hook(s) from %s", c.Removed, c.Path),
		fmt.Sprintf("no docket hooks in %s", c.Path)); err != nil {
		return err
	}
	if o.Runtime == hooks.Codex {
		// the trust block keeps only what the remaining hooks.json need
		notes, err := codexConfig(o, c, false, true, f.dryRun, stdout)
		if err != nil {
			return err
		}
		for _, n := range notes {
			if !f.dryRun {
				fmt.Fprintln(stderr, "docket: note: "+n)
			}
		}
	}
	return nil
}
