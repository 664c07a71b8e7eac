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
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/install"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

const installUsage = `usage: docket install [--runtime claude|codex|gemini|cursor] [--scope user|project|local] [--dry-run] [--bin DIR] [--trust-project]
       docket install --runtime openclaw [--config FILE] [--server URL] [--token T] [--plugin-dir DIR] [--dry-run]
       sudo docket install --sealed ...   (sealed mode: 'docket install --sealed -h')

Merges docket's hook entries into the runtime's settings file:
PreToolUse → docket-judge, PostToolUse and PostToolUseFailure →
docket-ledger (5 s), Stop and SubagentStop → docket-gate (15 s, told to
decide within 12 s), under the runtime's own event names and with
absolute paths. The judge's timeout outlasts its own deadline under
judges.md (escalation.timeout + model.timeout + 10 s, plus 5 s: 145 s
with the defaults), because a runtime that times a hook out fails open. Every other key
and hook in the file is kept; the old file is kept beside it as
<file>.docket-bak. Running it again changes nothing.

  --runtime R  claude (default), codex, gemini or cursor
  --scope S    project (default; the current directory), user, or local
               (Claude Code's uncommitted .claude/settings.local.json)
  --dry-run    print the change as a diff and write nothing
  --bin DIR    where docket-judge, docket-ledger and docket-gate are
               (default: the directory of this docket executable)
  --trust-project
               codex only: also mark the project trusted in Codex's
               config.toml (Codex runs no project hook until it is)

Codex CLI runs a hook only once it is trusted: for --runtime codex,
install also writes, in one marked block of $CODEX_HOME/config.toml
(~/.codex/config.toml), the trusted_hash of each of docket's entries
(computed as Codex computes it) and the state root as a writable root of
the workspace-write sandbox (so 'docket validate' can record evidence
there). What it cannot write without changing the user's own tables it
prints, with the exact lines. uninstall removes the block.

OpenClaw runs docket as a plugin that calls 'docket serve': --runtime
openclaw writes the plugin into $DOCKET_HOME/openclaw-plugin (or
--plugin-dir) and, into OpenClaw's config (--config, else
$OPENCLAW_CONFIG_PATH, else $OPENCLAW_HOME/.openclaw/openclaw.json, else
~/.openclaw/openclaw.json), its load path, its entry (enabled, with
allowConversationAccess for the claim gate) and its config: serverUrl
(--server, else the running server's, else http://127.0.0.1:7420) and
token (--token, else the one already there, else a new runtime token
named openclaw).

Settings files:
  claude  ~/.claude/settings.json  .claude/settings.json  .claude/settings.local.json
  codex   ~/.codex/hooks.json ($CODEX_HOME)  .codex/hooks.json
  gemini  ~/.gemini/settings.json  .gemini/settings.json
  cursor  ~/.cursor/hooks.json  .cursor/hooks.json

Exit codes: 0 wired (or already wired, or the diff was printed),
1 the settings file or the binaries are not usable, 2 usage error.
`

func init() {
	commands["install"] = command{summary: "wire docket's hooks into an agent runtime's settings", run: runInstall}
}

// wiringFlags are the flags install and uninstall share.
type wiringFlags struct {
	runtime, scope, bin  string
	dryRun, trustProject bool
	openclaw             openclawFlags
}

func (f *wiringFlags) register(fs *flag.FlagSet, withBin bool) {
	fs.StringVar(&f.runtime, "runtime", "claude", "")
	fs.StringVar(&f.scope, "scope", "project", "")
	fs.BoolVar(&f.dryRun, "dry-run", false, "")
	f.openclaw.register(fs, withBin)
	if withBin {
		fs.StringVar(&f.bin, "bin", "", "")
		fs.BoolVar(&f.trustProject, "trust-project", false, "")
	}
}

// options validates the flags and resolves the directories. Usage
// problems come back as exit-2 errors before anything is read.
func (f *wiringFlags) options(cmd string, fs *flag.FlagSet) (install.Options, error) {
	if fs.NArg() > 0 {
		hint := ""
		if _, err := hooks.ParseRuntime(fs.Arg(0)); err == nil {
			hint = fmt.Sprintf("name the runtime with a flag: docket %s --runtime %s", cmd, fs.Arg(0))
		}
		return install.Options{}, usageError(fmt.Sprintf("%s takes no arguments, got %q", cmd, fs.Arg(0)), hint)
	}
	rt, err := hooks.ParseRuntime(f.runtime)
	if err != nil {
		return install.Options{}, usageError(err.Error(), "")
	}
	scope, err := install.ParseScope(f.scope)
	if err != nil {
		return install.Options{}, usageError(err.Error(), "")
	}
	if scope == install.Local && rt != hooks.Claude {
		return install.Options{}, usageError(fmt.Sprintf("--scope local is Claude Code's settings.local.json; %s has none", rt),
			"use --scope project (this directory) or --scope user")
	}
	o := install.Options{Runtime: rt, Scope: scope}
	if o.HomeDir, err = os.UserHomeDir(); err != nil && scope == install.User {
		return o, fmt.Errorf("locate home directory: %w", err)
	}
	if o.ProjectDir, err = os.Getwd(); err != nil {
		return o, fmt.Errorf("locate project directory: %w", err)
	}
	return o, nil
}

func runInstall(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	if sealed, rest := sealedArg(args); sealed {
		return runSealed(false, rest, stdout, stderr, nil)
	}
	fs := flag.NewFlagSet("install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, installUsage) }
	var f wiringFlags
	f.register(fs, true)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return exitCode(2, nil)
	}
	if f.runtime == "openclaw" {
		return installOpenClaw(fs, &f, stdout, stderr)
	}
	o, err := f.options("install", fs)
	if err != nil {
		return err
	}
	if f.trustProject && (o.Runtime != hooks.Codex || o.Scope != install.Project) {
		return usageError("--trust-project is for --runtime codex --scope project", "")
	}
	if f.bin == "" {
		if f.bin, err = install.DefaultBinDir(); err != nil {
			return err
		}
	}
	if o.BinDir, err = filepath.Abs(f.bin); err != nil {
		return fmt.Errorf("resolve --bin: %w", err)
	}
	// The judge's hook timeout must outlast its own deadline under the
	// judges.md in force, or the runtime kills it and fails open.
	if h, err := home.Resolve(); err == nil {
		if j, err := policies.LoadJudges(h); err == nil {
			o.JudgeTimeout = install.JudgeTimeoutFor(j)
		}
	}
	if err := install.CheckBinaries(o.BinDir); err != nil {
		return fmt.Errorf("hook binaries not usable: %v\nhint: build them with 'make build' and pass --bin ./bin, or run 'make install'", err)
	}
	c, err := install.PlanInstall(o)
	if err != nil {
		return err
	}
	if err := applyChange(c, f.dryRun, stdout, fmt.Sprintf("wired docket into %s (%s, %s scope)", c.Path, o.Runtime, o.Scope),
		fmt.Sprintf("already wired: %s", c.Path)); err != nil {
		return err
	}
	var notes []string
	switch o.Runtime {
	case hooks.Codex:
		if notes, err = codexConfig(o, c, f.trustProject, false, f.dryRun, stdout); err != nil {
			return err
		}
	case hooks.Gemini:
		notes = install.GeminiNotes(c.New)
	}
	if note := runtimeNote(o); note != "" {
		notes = append(notes, note)
	}
	if !f.dryRun {
		for _, n := range notes {
			fmt.Fprintln(stderr, "docket: note: "+n)
		}
	}
	return nil
}

// codexConfig brings docket's block in Codex's config.toml in line with
// the hooks.json files as c leaves them: trust for each of docket's hook
// entries, the project's trust when asked, the state root writable in
// the workspace-write sandbox. It returns what the user must still do.
func codexConfig(o install.Options, c *install.Change, trustProject, uninstall, dryRun bool, stdout io.Writer) ([]string, error) {
	co := install.CodexOptions{
		ConfigPath: install.CodexConfigPath(o.HomeDir),
		Hooks:      install.CodexFiles(o.HomeDir, o.ProjectDir, c),
	}
	if o.Scope == install.Project {
		co.ProjectDir, co.TrustProject = o.ProjectDir, trustProject
		if uninstall {
			co.DropProject = install.CodexProjectDir(o.ProjectDir)
		}
	}
	if h, err := home.Resolve(); err == nil {
		co.StateRoot = h.Root
	}
	p, err := install.PlanCodexConfig(co)
	if err != nil {
		return nil, err
	}
	done, nothing := "updated Codex's hook trust in "+p.Change.Path, "Codex already trusts docket's hooks: "+p.Change.Path
	if uninstall {
		done, nothing = "updated docket's trust block in "+p.Change.Path, "no docket trust block to change in "+p.Change.Path
	}
	if err := applyChange(p.Change, dryRun, stdout, done, nothing); err != nil {
		return nil, err
	}
	notes := p.Notes
	if o.Scope == install.Project && !trustProject && !uninstall && len(c.New) > 0 {
		probs, _, _ := install.CodexProblems(co.ConfigPath, c.Path, c.New, co.ProjectDir, "")
		for _, pr := range probs {
			if strings.HasPrefix(pr, "project ") {
				notes = append(notes, pr+"; trust it in codex when asked, or run 'docket install --runtime codex --trust-project'")
			}
		}
	}
	return notes, nil
}

// runtimeNote is what a user must still do for the runtime to run the
// hooks docket wired.
func runtimeNote(o install.Options) string {
	switch {
	case o.Runtime == hooks.Cursor:
		return "Cursor's stop hook carries no final message, so the gate cannot read the agent's claims there and blocks the stop until loop_limit; judge and ledger work as wired"
	case o.Runtime == hooks.Claude && o.Scope != install.User:
		return "Claude Code asks to trust a project's hooks in interactive sessions; /hooks shows what is loaded"
	}
	return ""
}

// applyChange prints c's diff under --dry-run, or writes it and says so.
func applyChange(c *install.Change, dryRun bool, stdout io.Writer, done, nothing string) error {
	if dryRun {
		if !c.Changed() {
			fmt.Fprintf(stdout, "no change: %s\n", c.Path)
			return nil
		}
		_, err := io.WriteString(stdout, c.Diff())
		return err
	}
	if !c.Changed() {
		fmt.Fprintln(stdout, nothing)
		return nil
	}
	backup, err := install.Apply(c, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, done)
	if backup != "" {
		fmt.Fprintf(stdout, "previous settings kept in %s\n", backup)
	}
	return nil
}
