package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/docket/docket/internal/regular"
)

// MaxRolloutRead bounds how much of the end of a Codex rollout file
// ResolveExit reads looking for a call's exit status.
const MaxRolloutRead = 4 << 20

// ResolveExit fills in the exit status of a shell result that arrived
// without one (ExitUnknown), from the one other place the runtime
// records it. For Codex CLI that is the session's rollout file
// (transcript_path). When Codex 0.169 runs the PostToolUse hook, the
// rollout already holds the call's `item_completed` event, whose item
// (type CommandExecution, id = tool_use_id) carries exit_code and status
// (testdata/hooks/captured/codex-rollout-*). Older versions wrote an
// `exec_command_end` event with exit_code, and the call's
// `function_call_output` (written after the hook) says "Exit code: N" or
// "Process exited with code N"; both are read too. It reads at most
// MaxRolloutRead bytes from the end of the file, and leaves the event as
// it was when the file or the call is not there. It reports whether it
// found the status.
func ResolveExit(e *Event) bool {
	return ResolveExitWith(e, nil)
}

// ResolveExitWith is ResolveExit opening the rollout file with open (nil
// is regular.Open): the sealed-mode daemon's opener refuses a file its caller
// could not read itself.
func ResolveExitWith(e *Event, open func(path string) (*os.File, error)) bool {
	if e == nil || !e.ExitUnknown || e.Runtime != Codex || e.TranscriptPath == "" || e.ToolUseID == "" {
		return false
	}
	if open == nil {
		open = regular.Open
	}
	code, ok := codexRolloutExit(open, e.TranscriptPath, e.ToolUseID)
	if !ok {
		return false
	}
	e.ExitCode = &code
	e.ExitUnknown = false
	if code != 0 {
		e.Failed = true
	}
	return true
}

// codexRolloutExit finds the exit code of call id in a rollout file,
// newest record first, opening it with open.
func codexRolloutExit(open func(string) (*os.File, error), path, id string) (code int, ok bool) {
	// the record was written just before the hook ran: look at the end
	// first, then further back
	scanRolloutTail(open, path, func(b []byte, whole bool) bool {
		code, ok = rolloutExit(b, id)
		return ok || whole
	})
	return code, ok
}

// scanRolloutTail opens a rollout file with open and hands scan its last
// rolloutFirstRead bytes, then, while scan returns false, its last
// MaxRolloutRead; whole says the bytes start at the file's start (else
// their first line, which may be cut, is left out). A file that cannot
// be opened or read, or is not a regular file, is not scanned.
func scanRolloutTail(open func(string) (*os.File, error), path string, scan func(b []byte, whole bool) (done bool)) {
	f, err := open(path)
	if err != nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return
	}
	for _, n := range []int64{rolloutFirstRead, MaxRolloutRead} {
		off := max(st.Size()-n, 0)
		b := make([]byte, st.Size()-off)
		if k, err := f.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && k == len(b)) {
			return
		}
		if off > 0 {
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				b = b[i+1:]
			}
		}
		if scan(b, off == 0) {
			return
		}
	}
}

// rolloutFirstRead is how much of the rollout's end is read first.
const rolloutFirstRead = 64 << 10

// rolloutExit scans rollout lines (newest last) for call id's exit code.
func rolloutExit(b []byte, id string) (int, bool) {
	needle := []byte(strconv.Quote(id))
	for len(b) > 0 {
		i := bytes.LastIndexByte(bytes.TrimRight(b, "\n"), '\n')
		line := b[i+1:]
		if i < 0 {
			line = b
			b = nil
		} else {
			b = b[:i]
		}
		if !bytes.Contains(line, needle) || !gjson.ValidBytes(bytes.TrimSpace(line)) {
			continue
		}
		r := gjson.ParseBytes(line)
		p := r.Get("payload")
		if it := p.Get("item"); p.Get("type").String() == "item_completed" && it.Get("id").String() == id &&
			it.Get("type").String() == "CommandExecution" {
			if c := it.Get("exit_code"); c.Type == gjson.Number {
				return int(c.Int()), true
			}
			continue
		}
		if p.Get("call_id").String() != id {
			continue
		}
		switch p.Get("type").String() {
		case "exec_command_end":
			if c := p.Get("exit_code"); c.Type == gjson.Number {
				return int(c.Int()), true
			}
		case "function_call_output", "custom_tool_call_output":
			out := p.Get("output")
			if out.Type == gjson.String {
				s := out.String()
				if i := strings.Index("\n"+s, "\nOutput:"); i >= 0 {
					s = s[:i] // the command's own output cannot speak for it
				}
				if m, ok := firstLine(s, rolloutExitCode); ok {
					if c, err := strconv.Atoi(m); err == nil {
						return c, true
					}
				}
				// the older JSON form: {"output":…,"metadata":{"exit_code":N}}
				if c := gjson.Get(s, "metadata.exit_code"); c.Type == gjson.Number {
					return int(c.Int()), true
				}
			}
		}
	}
	return 0, false
}

// UnhookedCall is an MCP call a Codex session ran and no hook reported:
// Codex 0.169 runs PostToolUse for an MCP call that succeeded and for
// none that failed, so its rollout is the only record of the failure.
type UnhookedCall struct {
	ID        string          // the call id, the tool_use_id its PreToolUse carried
	Tool      string          // Codex's name for it: mcp__<server>__<tool>
	Arguments json.RawMessage // as the rollout records them
	Error     string          // the result's text, or the error's message
	Line      []byte          // the rollout line, the record's raw artifact
}

// CodexUnhookedFailures returns the MCP calls of a Codex session that
// failed after the last tool call Codex ran a PostToolUse hook for,
// oldest first, from the session's rollout (transcript_path), opened
// with open (nil is regular.Open). Every hook docket runs after such a
// call sees it there: `item_completed` of an McpToolCall whose status is
// "failed" (testdata/hooks/captured/codex-rollout-mcp-failed.jsonl). The
// scan goes back from the end of the file to the newest completed
// CommandExecution, FileChange or McpToolCall that did not fail (its
// PostToolUse ran, and whoever ran before it saw what came earlier). It
// reads the last 64 KiB, and up to MaxRolloutRead when those hold
// neither such a call nor the start of the hook's turn (an item of
// another turn_id): a failure is seen by a hook of its own turn, the
// next PreToolUse or the Stop. So a failure followed by a long message
// is found, and a turn without tool calls costs one read unless it is
// longer than 64 KiB. The rollout is the agent's own file: what it says
// is only a candidate, which the caller checks against the judge's
// signed decisions before recording it (ledgerhook.RecordUnhooked). Nil
// for any other runtime or event.
func CodexUnhookedFailures(e *Event, open func(path string) (*os.File, error)) []UnhookedCall {
	if e == nil || e.Runtime != Codex || e.TranscriptPath == "" {
		return nil
	}
	if open == nil {
		open = regular.Open
	}
	var calls []UnhookedCall
	scanRolloutTail(open, e.TranscriptPath, func(b []byte, whole bool) bool {
		var ended, turnStart bool
		calls, ended, turnStart = unhookedFailures(b, e.TurnID)
		return ended || whole || turnStart
	})
	return calls
}

// unhookedFailures scans rollout lines (newest last) back to the newest
// tool item whose PostToolUse ran, collecting the failed MCP calls after
// it; ended reports that such an item was found, turnStart that an item
// of a turn other than turnID was passed on the way.
func unhookedFailures(b []byte, turnID string) (calls []UnhookedCall, ended, turnStart bool) {
	for len(b) > 0 {
		i := bytes.LastIndexByte(bytes.TrimRight(b, "\n"), '\n')
		line := b[i+1:]
		if i < 0 {
			b = nil
		} else {
			b = b[:i]
		}
		if !bytes.Contains(line, []byte(`"item_completed"`)) || !gjson.ValidBytes(bytes.TrimSpace(line)) {
			continue
		}
		p := gjson.GetBytes(line, "payload")
		if p.Get("type").String() != "item_completed" {
			continue
		}
		if t := p.Get("turn_id").String(); t != "" && t != turnID {
			turnStart = true
		}
		it := p.Get("item")
		typ, status := it.Get("type").String(), it.Get("status").String()
		switch {
		case typ == "McpToolCall" && status == "failed":
			args := json.RawMessage(it.Get("arguments").Raw)
			if !it.Get("arguments").IsObject() {
				args = json.RawMessage("{}")
			}
			c := UnhookedCall{
				ID:        it.Get("id").String(),
				Tool:      "mcp__" + it.Get("server").String() + "__" + it.Get("tool").String(),
				Arguments: args,
				Error:     rolloutCallError(it),
				Line:      bytes.TrimSpace(line),
			}
			if c.ID != "" && it.Get("server").String() != "" && it.Get("tool").String() != "" {
				calls = append(calls, c)
			}
		case typ == "McpToolCall" || typ == "CommandExecution" || typ == "FileChange":
			slices.Reverse(calls)
			return calls, true, turnStart
		}
	}
	slices.Reverse(calls)
	return calls, false, turnStart
}

// rolloutCallError is what a failed McpToolCall item says went wrong:
// its result's text content (an MCP CallToolResult with isError), else
// its error.
func rolloutCallError(it gjson.Result) string {
	var parts []string
	for _, c := range it.Get("result.content").Array() {
		if c.Get("type").String() == "text" {
			parts = append(parts, c.Get("text").String())
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n")
	}
	if e := it.Get("error"); e.Type == gjson.String {
		return e.String()
	} else if m := e.Get("message"); m.Exists() {
		return m.String()
	}
	return "the MCP call failed"
}
