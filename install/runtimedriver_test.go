package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/transcript"
)

// runtimeDriver plays an agent runtime against a settings file: for each
// event it finds the configured command handlers whose matcher fits,
// runs exactly their command lines under `sh -c` with the payload on
// stdin and the configured timeout, and records what came back. It
// speaks Claude Code's and Codex CLI's payload shapes.
type runtimeDriver struct {
	rt         hooks.Runtime
	handlers   []Entry
	env        []string
	cwd        string
	session    string
	turn       string // Codex turn_id
	transcript string
	calls      []hookCall
}

// hookCall is one command the driver ran.
type hookCall struct {
	Event    string // the runtime's event name
	Tool     string
	ToolUse  string
	Command  string
	Code     int
	TimedOut bool
	Stdout   string
	Stderr   string
	Elapsed  time.Duration
}

func newRuntimeDriver(t *testing.T, rt hooks.Runtime, settings []byte, env []string, cwd, session, transcriptPath string) *runtimeDriver {
	t.Helper()
	hs, err := Handlers(rt, settings)
	if err != nil {
		t.Fatalf("driver: read settings: %v", err)
	}
	return &runtimeDriver{rt: rt, handlers: hs, env: env, cwd: cwd, session: session, turn: "turn-" + session, transcript: transcriptPath}
}

// fire sends one event to every matching handler, in order, and returns
// the calls it made.
func (d *runtimeDriver) fire(event, tool, toolUse string, payload map[string]any) []hookCall {
	payload["session_id"] = d.session
	payload["cwd"] = d.cwd
	payload["hook_event_name"] = event
	switch d.rt {
	case hooks.Codex:
		payload["turn_id"] = d.turn
		payload["model"] = "gpt-5.5"
		payload["permission_mode"] = "default"
		payload["transcript_path"] = nil // Codex's ephemeral sessions send null
	case hooks.Gemini:
		payload["transcript_path"] = d.transcript
		payload["timestamp"] = time.Now().UTC().Format(time.RFC3339Nano)
	case hooks.Cursor:
		delete(payload, "session_id")
		delete(payload, "cwd")
		payload["conversation_id"] = d.session
		payload["generation_id"] = d.turn
		payload["workspace_roots"] = []string{d.cwd}
		if event == "beforeShellExecution" {
			payload["cwd"] = d.cwd
		}
	default:
		payload["permission_mode"] = "default"
		payload["transcript_path"] = d.transcript
	}
	in, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	var out []hookCall
	for _, h := range d.handlers {
		if h.Event != event || (tool != "" && !Matches(h.Matcher, tool)) {
			continue
		}
		out = append(out, d.run(h, event, tool, toolUse, in))
	}
	d.calls = append(d.calls, out...)
	return out
}

func (d *runtimeDriver) run(h Entry, event, tool, toolUse string, stdin []byte) hookCall {
	timeout := h.Timeout
	if timeout == 0 {
		timeout = 600 * time.Second // the runtimes' default
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command)
	cmd.Dir = d.cwd
	cmd.Env = d.env
	cmd.Stdin = bytes.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	start := time.Now()
	err := cmd.Run()
	c := hookCall{Event: event, Tool: tool, ToolUse: toolUse, Command: h.Command, Stdout: so.String(), Stderr: se.String(), Elapsed: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		c.TimedOut, c.Code = true, -1
	case errors.As(err, &ee):
		c.Code = ee.ExitCode()
	case err != nil:
		c.Code, c.Stderr = -1, err.Error()
	}
	return c
}

// expect says how many hook calls of each kind a runtime makes for a
// transcript, and the final message.
type expect struct {
	Judged, Recorded, Failures int
	FinalMessage               string
}

// translate turns one step into the runtime's event, the tool name its
// matcher sees, and its payload; ok is false when the runtime has no
// hook for the step (Cursor has none before a file edit or a read).
func (d *runtimeDriver) translate(s transcript.Step) (event, tool string, payload map[string]any, ok bool) {
	p := map[string]any{}
	switch d.rt {
	case hooks.Gemini:
		switch s.Kind {
		case transcript.Use:
			return "BeforeTool", s.Tool, map[string]any{"tool_name": s.Tool, "tool_input": s.Input}, true
		case transcript.Result:
			resp := map[string]any{"llmContent": s.Response, "returnDisplay": "", "error": nil}
			if s.Failed {
				resp["error"] = map[string]any{"message": s.Error}
			}
			return "AfterTool", s.Tool, map[string]any{"tool_name": s.Tool, "tool_input": s.Input, "tool_response": resp}, true
		}
		return "AfterAgent", "", map[string]any{"prompt": "", "prompt_response": s.Text, "stop_hook_active": false}, true
	case hooks.Cursor:
		var in struct {
			Command   string `json:"command"`
			FilePath  string `json:"file_path"`
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
			Content   string `json:"content"`
		}
		json.Unmarshal(s.Input, &in)
		mcp := strings.HasPrefix(s.Tool, "mcp__")
		switch {
		case s.Kind == transcript.Stop:
			return "stop", "", map[string]any{"status": "completed", "loop_count": 0}, true
		case s.Kind == transcript.Use && s.Tool == "Bash":
			return "beforeShellExecution", "", map[string]any{"command": in.Command}, true
		case s.Kind == transcript.Use && mcp:
			return "beforeMCPExecution", "", map[string]any{"tool_name": s.Tool, "tool_input": s.Input}, true
		case s.Kind == transcript.Result && s.Tool == "Bash":
			return "afterShellExecution", "", map[string]any{"command": in.Command, "output": s.Response, "duration": 1}, true
		case s.Kind == transcript.Result && mcp:
			return "afterMCPExecution", "", map[string]any{"tool_name": s.Tool, "tool_input": s.Input, "result_json": string(s.Response)}, true
		case s.Kind == transcript.Result && !s.Failed && (s.Tool == "Edit" || s.Tool == "Write" || s.Tool == "MultiEdit"):
			return "afterFileEdit", "", map[string]any{"file_path": in.FilePath,
				"edits": []map[string]string{{"old_string": in.OldString, "new_string": in.NewString + in.Content}}}, true
		}
		return "", "", nil, false
	}
	// Claude Code and Codex CLI share the shape; Codex has no failure
	// event and reports a failed call as a PostToolUse.
	switch s.Kind {
	case transcript.Use:
		return hooks.PreToolUse, s.Tool, map[string]any{"tool_name": s.Tool, "tool_input": s.Input, "tool_use_id": s.ID}, true
	case transcript.Result:
		p = map[string]any{"tool_name": s.Tool, "tool_input": s.Input, "tool_use_id": s.ID}
		if s.Failed && d.rt == hooks.Claude {
			p["error"], p["is_interrupt"] = s.Error, false
			return hooks.PostToolUseFailure, s.Tool, p, true
		}
		p["tool_response"] = s.Response
		return hooks.PostToolUse, s.Tool, p, true
	}
	return hooks.Stop, "", map[string]any{"stop_hook_active": false, "last_assistant_message": s.Text}, true
}

// replay plays a transcript's steps through the driver as the runtime
// would have, and returns what the hooks should have seen and the calls
// the stop made.
func (d *runtimeDriver) replay(t *testing.T, recorded []byte) (expect, []hookCall) {
	t.Helper()
	steps, err := transcript.Steps(recorded)
	if err != nil {
		t.Fatalf("driver: read transcript: %v", err)
	}
	var ex expect
	var stops []hookCall
	for _, s := range steps {
		event, tool, payload, ok := d.translate(s)
		if !ok {
			continue
		}
		calls := d.fire(event, tool, s.ID, payload)
		switch s.Kind {
		case transcript.Use:
			ex.Judged++
		case transcript.Result:
			ex.Recorded++
			if s.Failed {
				ex.Failures++
			}
		case transcript.Stop:
			ex.FinalMessage, stops = s.Text, calls
		}
	}
	return ex, stops
}

func (c hookCall) String() string {
	return fmt.Sprintf("%s %s %s: exit %d timedout=%v in %v\nstdout: %s\nstderr: %s",
		c.Event, c.Tool, c.ToolUse, c.Code, c.TimedOut, c.Elapsed.Round(time.Millisecond), strings.TrimSpace(c.Stdout), strings.TrimSpace(c.Stderr))
}
