// Package ledgerhook is docket-ledger's work as a function: the binary
// runs it in-process, `docket serve --socket` runs it for a thin client.
// It reads one PostToolUse or PostToolUseFailure payload and appends one
// entry, with the call's raw artifacts, to the session's ledger under
// $DOCKET_HOME.
package ledgerhook

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/ledger"
	"github.com/tidwall/gjson"
)

// Version is set by the linker in docket-ledger.
var Version = ""

// Usage is docket-ledger's usage text.
const Usage = `usage: docket-ledger [--runtime claude|codex|gemini|cursor] [--socket PATH]

Reads one PostToolUse or PostToolUseFailure payload on stdin and appends one
entry to $DOCKET_HOME/ledger/<session_id>.jsonl, storing the call's input,
output, working directory and status as artifacts. With --socket PATH
(or DOCKET_SOCKET) the docket daemon on PATH appends it (sealed mode).

A UserPromptSubmit payload (Gemini BeforeAgent, Cursor beforeSubmitPrompt)
appends a user_prompt entry: the prompt's digest, the prompt as an
artifact, and the O-Tag of the chain it starts. It also brings the trust
levels up to date (docket trust).

Exit codes:
  0  recorded; nothing is printed
  1  a prompt not recorded; one line on stderr says why (not 2: on
     UserPromptSubmit exit 2 would erase the user's prompt)
  2  not recorded; one line on stderr says why (the runtime shows it)
`

// Options are what differs between the binary and the daemon.
type Options struct {
	// Peer, when set, is recorded in the entry's body ("peer").
	Peer *hookclient.Peer
	// OpenLedger, when set, replaces ledger.Open (the daemon keeps the
	// ledger and its keys warm).
	OpenLedger func(h home.Home) (Appender, error)
	// Admit, when set, vets the decoded payload before the hook reads
	// anything it names (the daemon: a transcript the caller could not
	// read); an error fails the call.
	Admit func(*hooks.Event) error
	// Open, when set, opens the files the payload names (a Codex
	// rollout) instead of regular.Open (the daemon: it refuses a file the
	// caller could not read, checked on the file it opened).
	Open func(path string) (*os.File, error)
}

// Appender appends one entry and holds the keys that sign it (for the
// trust files a prompt refreshes); *ledger.Ledger is one.
type Appender interface {
	Append(session string, r ledger.Record) (*ledger.Entry, error)
	Keys() *ledger.Keys
}

// Main runs one invocation and returns the exit code, writing exactly
// what docket-ledger writes.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, o Options) int {
	if err := Run(ctx, args, stdin, stdout, stderr, o); err != nil {
		fmt.Fprintf(stderr, "docket-ledger: error: %v\n", err)
		var pe *promptError
		if errors.As(err, &pe) {
			return 1
		}
		return 2
	}
	return 0
}

// Run is docket-ledger's work: parse, read the payload, append.
func Run(_ context.Context, args []string, stdin io.Reader, _, stderr io.Writer, o Options) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error: %v", r)
		}
	}()
	fs := flag.NewFlagSet("docket-ledger", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rt := fs.String("runtime", "", "runtime whose payload is on stdin (default: detect)")
	showVersion := fs.Bool("version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		fmt.Fprint(stderr, Usage)
		return fmt.Errorf("%v", err)
	}
	if *showVersion {
		fmt.Fprintln(stderr, "docket-ledger", buildVersion())
		return nil
	}
	payload, err := hooks.ReadPayload(stdin)
	if err != nil {
		return err
	}
	ev, err := hooks.Decode(payload, hooks.Runtime(*rt))
	if err != nil {
		return err
	}
	if o.Admit != nil {
		if err := o.Admit(ev); err != nil {
			return err
		}
	}
	if ev.Name != hooks.PostToolUse && ev.Name != hooks.PostToolUseFailure && ev.Name != hooks.UserPromptSubmit {
		return fmt.Errorf("event %q is not a tool result: wire docket-ledger to PostToolUse and PostToolUseFailure (and UserPromptSubmit)", ev.RawName)
	}
	// A Codex shell result carries no exit status; its rollout does.
	hooks.ResolveExitWith(ev, o.Open)
	if !home.ValidSessionID(ev.SessionID) {
		return promptErr(ev, fmt.Errorf("session_id %q cannot name a ledger", ev.SessionID))
	}
	h, err := home.Resolve()
	if err != nil {
		return promptErr(ev, err)
	}
	open := func(h home.Home) (Appender, error) { return ledger.Open(h) }
	if o.OpenLedger != nil {
		open = o.OpenLedger
	}
	l, err := open(h)
	if err != nil {
		return promptErr(ev, err)
	}
	if ev.Name == hooks.UserPromptSubmit {
		if err := recordPrompt(h, l, ev, payload, o.Peer, stderr); err != nil {
			return &promptError{err}
		}
		return nil
	}
	rec := record(ev, payload)
	if o.Peer != nil {
		// a map, like the rest of the body, so its keys are sorted
		rec.Body.(map[string]any)["peer"] = map[string]any{"uid": o.Peer.UID, "gid": o.Peer.GID, "pid": o.Peer.PID}
	}
	if _, err := l.Append(ev.SessionID, rec); err != nil {
		return err
	}
	// Not evidence: a convenience for `docket validate`'s default session.
	_ = h.RecordSessionForDir(ev.Cwd, ev.SessionID)
	return nil
}

// maxErrorInBody bounds the error text copied into the entry body; the
// whole text is in the "error" artifact.
const maxErrorInBody = 500

// record turns a tool-result event into a ledger record: a tool_call or
// tool_failure entry whose artifacts are the raw payload, the tool input
// and response, stdout and stderr when the response has them, the error
// text and the working directory. The body says whether the call failed,
// its tool_kind (and mcp_name), its exit code when known and
// exit_unknown when the runtime did not say (a Codex shell call whose
// rollout has no record of it).
func record(ev *hooks.Event, payload []byte) ledger.Record {
	kind := ledger.KindToolCall
	if ev.Failed {
		kind = ledger.KindToolFailure
	}
	// readers over the decoded bytes: no copy of a large payload
	arts := []ledger.Artifact{{Name: "payload.json", Data: bytes.NewReader(payload)}}
	addBytes := func(name string, data []byte) {
		arts = append(arts, ledger.Artifact{Name: name, Data: bytes.NewReader(data)})
	}
	add := func(name string, data string) {
		arts = append(arts, ledger.Artifact{Name: name, Data: strings.NewReader(data)})
	}
	if ev.ToolInput != nil {
		addBytes("input.json", ev.ToolInput)
	}
	if ev.ToolResponse != nil {
		addBytes("response.json", ev.ToolResponse)
		// stdout and stderr as r.Get finds them (the first of each
		// name), in one pass over a response that may be large
		var out, errOut gjson.Result
		gjson.ParseBytes(ev.ToolResponse).ForEach(func(k, v gjson.Result) bool {
			switch {
			case k.Str == "stdout" && !out.Exists():
				out = v
			case k.Str == "stderr" && !errOut.Exists():
				errOut = v
			}
			return true
		})
		if out.Type == gjson.String {
			add("stdout", out.Str)
		}
		if errOut.Type == gjson.String {
			add("stderr", errOut.Str)
		}
	}
	if ev.Error != "" {
		add("error", ev.Error)
	}
	if ev.Cwd != "" {
		add("cwd", ev.Cwd)
	}
	body := map[string]any{"failed": ev.Failed}
	// tool_kind is what the call did in docket's vocabulary (shell,
	// file_write, file_edit, patch, read, search, fetch, mcp, other), so
	// the gate reasons about kinds rather than each runtime's tool names.
	if k := ev.Kind(); k != "" {
		body["tool_kind"] = string(k)
	}
	if m := ev.MCPName(); m != "" && m != ev.ToolName {
		// an MCP tool the runtime names its own way (Gemini CLI's
		// mcp_<server>_<tool>): the name the claim lexicon and the
		// bindings know it by (hooks.RecordedMCPName)
		body["mcp_name"] = m
	}
	if ev.ExitUnknown {
		// the runtime said nothing about how the call ended: not a success
		body["exit_unknown"] = true
	}
	if ev.ToolUseIDDerived {
		body["tool_use_id_derived"] = true
	}
	if ev.Cwd != "" {
		body["cwd"] = ev.Cwd
	}
	if ev.ExitCode != nil {
		body["exit_code"] = *ev.ExitCode
	}
	if ev.Interrupted {
		body["interrupted"] = true
	}
	if ev.Error != "" {
		msg := ev.Error
		if len(msg) > maxErrorInBody {
			msg = strings.ToValidUTF8(msg[:maxErrorInBody], "") + "…"
		}
		body["error"] = msg
	}
	if ev.DurationMS > 0 {
		body["duration_ms"] = ev.DurationMS
	}
	if ev.AgentType != "" {
		body["agent_type"] = ev.AgentType
	}
	if ev.TurnID != "" {
		body["turn_id"] = ev.TurnID
	}
	return ledger.Record{
		Kind: kind, Runtime: string(ev.Runtime), Event: ev.Name, Tool: ev.ToolName,
		ToolUseID: ev.ToolUseID, AgentID: ev.AgentID,
		Args: ev.ToolInput, Body: body, Artifacts: arts,
	}
}

func buildVersion() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "devel"
}
