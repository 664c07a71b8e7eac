// Package install wires docket into an agent runtime: it merges docket's
// hook entries into the runtime's settings file (and takes them out
// again), and it runs the doctor's checks.
//
// Every runtime gets the same wiring onto docket's three hook binaries,
// under the runtime's own event names, with absolute binary paths:
//
//	PreToolUse                      → docket-judge   judge deadline + 5 s (145 s by default; at least 10 s)
//	PostToolUse, PostToolUseFailure → docket-ledger  5 s
//	Stop, SubagentStop              → docket-gate    15 s, run with --timeout 12s
//	UserPromptSubmit (Gemini:       → docket-ledger  10 s (the prompt: the O-Tag of what follows;
//	  BeforeAgent)                    not for Cursor)
//
// A runtime that times a hook out fails open, so every hook timeout is
// set above the binary's own deadline, and each binary fails closed
// when its deadline passes. The judge's deadline is judges.md's
// escalation.timeout + model.timeout + 10 s (a headless escalation waits
// that long for `docket approve`), so its hook timeout is derived from
// judges.md at install time; the 10 s floor covers an LLM judge call.
// The ledger's 5 s holds its 3 s lock wait and an append. The gate gets
// 15 s and is told to decide within 12 s, blocking when it cannot.
//
// docket's entries are recognised by their command's program name
// (docket-judge, docket-ledger, docket-gate), never by position, so
// install replaces them in place and uninstall removes exactly them.
package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/policies"
)

// The hook binaries docket wires.
const (
	JudgeBin  = "docket-judge"
	LedgerBin = "docket-ledger"
	GateBin   = "docket-gate"
)

// HookBin is the sealed-mode thin client: 'docket-hook judge|ledger|gate
// --socket PATH' does what docket-judge, docket-ledger and docket-gate do
// with a socket, linking nothing but the client.
const HookBin = "docket-hook"

// hookSub maps a hook binary to its docket-hook subcommand.
var hookSub = map[string]string{JudgeBin: "judge", LedgerBin: "ledger", GateBin: "gate"}

// Binaries lists the hook binaries.
var Binaries = []string{JudgeBin, LedgerBin, GateBin}

// Timeouts docket configures, and the bounds doctor accepts.
const (
	// JudgeTimeout is the judge's floor; the wired value is
	// JudgeTimeoutFor the judges.md in force.
	JudgeTimeout  = 10 * time.Second
	LedgerTimeout = 5 * time.Second
	GateTimeout   = 15 * time.Second
	// PromptTimeout is docket-ledger's on UserPromptSubmit: an append
	// and the trust levels' refresh.
	PromptTimeout = 10 * time.Second
	// GateDeadline is the --timeout the gate is run with: inside
	// GateTimeout, so the gate blocks before the runtime kills it.
	GateDeadline = 12 * time.Second

	// MinTimeout is the least a docket hook may be given: below it the
	// runtime kills a healthy hook and fails open.
	MinTimeout = 2 * time.Second
	// MaxTimeout is the most: the runtimes' own default (600 s); above
	// it a stuck hook stalls the agent for nothing.
	MaxTimeout = 600 * time.Second
)

// JudgeDeadline is how long docket-judge may take under judges j: a
// headless escalation's wait, an LLM judge call, and 10 s for the rest
// (cmd/docket-judge bounds each decision by exactly this).
func JudgeDeadline(j *policies.Judges) time.Duration {
	return j.EscalationTimeout + j.ModelTimeout + 10*time.Second
}

// JudgeTimeoutFor is the hook timeout the judge needs under judges j:
// its deadline plus 5 s, rounded up to 5 s, and never under JudgeTimeout.
func JudgeTimeoutFor(j *policies.Judges) time.Duration {
	d := JudgeDeadline(j) + 5*time.Second
	if r := d % (5 * time.Second); r != 0 {
		d += 5*time.Second - r
	}
	return max(d, JudgeTimeout)
}

// DefaultJudgeTimeout is JudgeTimeoutFor the embedded default judges.md
// (JudgeTimeout if it does not load).
var DefaultJudgeTimeout = sync.OnceValue(func() time.Duration {
	data, err := policies.Default(policies.JudgesFile)
	if err != nil {
		return JudgeTimeout
	}
	j, err := policies.ResolveJudges(policies.Source{Name: policies.JudgesFile, Origin: "embedded:" + policies.JudgesFile, Data: data})
	if err != nil {
		return JudgeTimeout
	}
	return JudgeTimeoutFor(j)
})

// Scope says which settings file of a runtime to edit.
type Scope string

const (
	User    Scope = "user"    // the user's own settings, every project
	Project Scope = "project" // the project's shared settings
	Local   Scope = "local"   // the project's uncommitted settings (Claude Code only)
)

// ParseScope maps a --scope value to a Scope.
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case User, Project, Local:
		return Scope(s), nil
	}
	return "", fmt.Errorf("unknown scope %q (want user, project or local)", s)
}

// Wire is one hook entry docket writes.
type Wire struct {
	Event      string // the runtime's event name: the key under "hooks"
	Normalized string // docket's event (hooks.PreToolUse, …)
	Binary     string // JudgeBin, LedgerBin or GateBin
	Args       []string
	Timeout    time.Duration
	Matcher    string // "" for events without a matcher
	// Thin, when set, runs Binary's work through HookBin (sealed mode):
	// docket-hook judge|ledger|gate.
	Thin bool
}

// Command is w's command line with the binaries in binDir, for runtime
// rt.
func (w Wire) Command(binDir string, rt hooks.Runtime) string {
	c := Command(binDir, w.Binary, rt)
	if w.Thin {
		c = shellQuote(filepath.Join(binDir, HookBin)) + " " + hookSub[w.Binary] + " --runtime " + string(rt)
	}
	for _, a := range w.Args {
		c += " " + shellQuote(a)
	}
	return c
}

func tool(event, normalized, bin string, d time.Duration) Wire {
	return Wire{Event: event, Normalized: normalized, Binary: bin, Timeout: d, Matcher: "*"}
}

// prompt records the user's prompt: docket-ledger, no matcher. Gemini
// CLI fires BeforeAgent again for every retry an AfterAgent block forces;
// docket-ledger knows those by the gate's block count and records none
// of them. Not for Cursor, whose beforeSubmitPrompt wants an answer
// docket-ledger does not give, and which has not been tried for real.
func prompt(event string) Wire {
	return Wire{Event: event, Normalized: hooks.UserPromptSubmit, Binary: LedgerBin, Timeout: PromptTimeout}
}

func stop(event, normalized string) Wire {
	return Wire{Event: event, Normalized: normalized, Binary: GateBin, Timeout: GateTimeout,
		Args: []string{"--timeout", GateDeadline.String()}}
}

// Wiring returns the entries docket writes for rt, in the order they are
// written, with the judge's timeout for the embedded judges.md
// (Options.JudgeTimeout replaces it).
//
// Codex CLI has no PostToolUseFailure (a failed call is a PostToolUse);
// Gemini CLI has BeforeTool, AfterTool and AfterAgent only; Cursor gates
// shell and MCP calls before they run, records shell, MCP and file-edit
// calls after, and gates stop (it has no matcher field).
func Wiring(rt hooks.Runtime) []Wire {
	jt := DefaultJudgeTimeout()
	switch rt {
	case hooks.Claude:
		return []Wire{
			tool(hooks.PreToolUse, hooks.PreToolUse, JudgeBin, jt),
			tool(hooks.PostToolUse, hooks.PostToolUse, LedgerBin, LedgerTimeout),
			tool(hooks.PostToolUseFailure, hooks.PostToolUseFailure, LedgerBin, LedgerTimeout),
			stop(hooks.Stop, hooks.Stop),
			stop(hooks.SubagentStop, hooks.SubagentStop),
			prompt(hooks.UserPromptSubmit),
		}
	case hooks.Codex:
		return []Wire{
			tool(hooks.PreToolUse, hooks.PreToolUse, JudgeBin, jt),
			tool(hooks.PostToolUse, hooks.PostToolUse, LedgerBin, LedgerTimeout),
			stop(hooks.Stop, hooks.Stop),
			stop(hooks.SubagentStop, hooks.SubagentStop),
			prompt(hooks.UserPromptSubmit),
		}
	case hooks.Gemini:
		return []Wire{
			tool("BeforeTool", hooks.PreToolUse, JudgeBin, jt),
			tool("AfterTool", hooks.PostToolUse, LedgerBin, LedgerTimeout),
			stop("AfterAgent", hooks.Stop),
			prompt("BeforeAgent"),
		}
	case hooks.Cursor:
		nm := func(w Wire) Wire { w.Matcher = ""; return w }
		return []Wire{
			nm(tool("beforeShellExecution", hooks.PreToolUse, JudgeBin, jt)),
			nm(tool("beforeMCPExecution", hooks.PreToolUse, JudgeBin, jt)),
			nm(tool("afterShellExecution", hooks.PostToolUse, LedgerBin, LedgerTimeout)),
			nm(tool("afterMCPExecution", hooks.PostToolUse, LedgerBin, LedgerTimeout)),
			nm(tool("afterFileEdit", hooks.PostToolUse, LedgerBin, LedgerTimeout)),
			stop("stop", hooks.Stop),
		}
	}
	return nil
}

// SettingsPath returns the settings file docket edits for rt at scope.
// homeDir is the user's home directory, projectDir the project root.
//
//	claude  user ~/.claude/settings.json ($CLAUDE_CONFIG_DIR)   project .claude/settings.json   local .claude/settings.local.json
//	codex   user $CODEX_HOME/hooks.json (~/.codex)   project .codex/hooks.json
//	gemini  user ~/.gemini/settings.json   project .gemini/settings.json
//	cursor  user ~/.cursor/hooks.json      project .cursor/hooks.json
func SettingsPath(rt hooks.Runtime, scope Scope, homeDir, projectDir string) (string, error) {
	base := projectDir
	if scope == User {
		base = homeDir
	}
	if base == "" {
		return "", fmt.Errorf("no directory for %s scope", scope)
	}
	if scope == Local && rt != hooks.Claude {
		return "", &ScopeError{Runtime: rt, Scope: scope}
	}
	switch rt {
	case hooks.Claude:
		if scope == User {
			if cd := os.Getenv("CLAUDE_CONFIG_DIR"); cd != "" {
				return filepath.Join(cd, "settings.json"), nil
			}
		}
		if scope == Local {
			return filepath.Join(base, ".claude", "settings.local.json"), nil
		}
		return filepath.Join(base, ".claude", "settings.json"), nil
	case hooks.Codex:
		if scope == User {
			if ch := os.Getenv("CODEX_HOME"); ch != "" {
				return filepath.Join(ch, "hooks.json"), nil
			}
		}
		return filepath.Join(base, ".codex", "hooks.json"), nil
	case hooks.Gemini:
		return filepath.Join(base, ".gemini", "settings.json"), nil
	case hooks.Cursor:
		return filepath.Join(base, ".cursor", "hooks.json"), nil
	}
	return "", fmt.Errorf("unknown runtime %q", rt)
}

// ScopeError reports a scope the runtime has no settings file for.
type ScopeError struct {
	Runtime hooks.Runtime
	Scope   Scope
}

func (e *ScopeError) Error() string {
	return fmt.Sprintf("%s has no %s-scope settings file", e.Runtime, e.Scope)
}

// Command is the command line docket writes for binary bin in binDir
// under runtime rt: the absolute path, single-quoted for the shell when
// it needs quoting, and --runtime, so the binary decodes the payload as
// that runtime's without guessing.
func Command(binDir, bin string, rt hooks.Runtime) string {
	return shellQuote(filepath.Join(binDir, bin)) + " --runtime " + string(rt)
}

// CommandRuntime returns the value of a --runtime flag in a command
// line, or "" when it has none.
func CommandRuntime(cmd string) string { return commandFlag(cmd, "runtime") }

// commandFlag returns the value of flag name (-name or --name, followed
// by its value or joined with =) in a command line, or "".
func commandFlag(cmd, name string) string {
	f := strings.Fields(cmd)
	for i, w := range f {
		if (w == "--"+name || w == "-"+name) && i+1 < len(f) {
			return strings.Trim(f[i+1], `'"`)
		}
		for _, p := range []string{"--" + name + "=", "-" + name + "="} {
			if v, ok := strings.CutPrefix(w, p); ok {
				return strings.Trim(v, `'"`)
			}
		}
	}
	return ""
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:@%,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CommandProgram returns the program a hook command line runs: its first
// word, with shell quotes removed. ok is false for an empty command.
func CommandProgram(cmd string) (prog string, ok bool) {
	s := strings.TrimLeft(cmd, " \t")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|':
			return b.String(), b.Len() > 0
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				b.WriteString(s[i+1:])
				return b.String(), b.Len() > 0
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				b.WriteString(s[i+1:])
				return b.String(), b.Len() > 0
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case c == '\\' && i+1 < len(s):
			b.WriteByte(s[i+1])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), b.Len() > 0
}

// DocketBinary returns which docket hook binary cmd runs, or "" when it
// runs something else. It looks at the program's base name only, so an
// entry pointing at an older install location is still docket's.
func DocketBinary(cmd string) string {
	prog, ok := CommandProgram(cmd)
	if !ok {
		return ""
	}
	base := prog
	if i := strings.LastIndexAny(prog, `/\`); i >= 0 {
		base = prog[i+1:]
	}
	base = strings.TrimSuffix(base, ".exe")
	if base == HookBin {
		// docket-hook SUB: the first word naming a hook
		for _, w := range strings.Fields(cmd)[1:] {
			for b, sub := range hookSub {
				if w == sub {
					return b
				}
			}
		}
		return ""
	}
	for _, b := range Binaries {
		if base == b {
			return b
		}
	}
	return ""
}

// DefaultBinDir is the directory of the running executable, symlinks
// resolved: `docket install` wires the hook binaries installed beside it.
func DefaultBinDir() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate docket executable: %w", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Dir(exe), nil
}

// CheckBinaries reports the hook binaries missing from binDir or not
// executable there.
func CheckBinaries(binDir string) error {
	var problems []string
	for _, b := range Binaries {
		if err := checkExecutable(filepath.Join(binDir, b)); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%s: not found", p)
		}
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s: is a directory", p)
	}
	if st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s: not executable", p)
	}
	return nil
}
