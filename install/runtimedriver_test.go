package install

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
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

func newRuntimeDriver(t *testing.T, rt hooks.Runtime, settings []byte, env []string, cwd, session, transcript string) *runtimeDriver {
	t.Helper()
	hs, err := Handlers(rt, settings)
	if err != nil {
		t.Fatalf("driver: read settings: %v", err)
	}
	return &runtimeDriver{rt: rt, handlers: hs, env: env, cwd: cwd, session: session, turn: "turn-" + session, transcript: transcript}
}

// matches applies Claude Code's matcher rules (Codex's and Gemini's
// agree on these): "", "*" match all; a matcher of only [A-Za-z0-9_|] is
// an exact name or a |-list; anything else is an unanchored regular
// expression.
func matches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	if regexp.MustCompile(`^[A-Za-z0-9_|]+$`).MatchString(matcher) {
		for _, m := range strings.Split(matcher, "|") {
			if m == tool {
				return true
			}
		}
		return false
	}
	re, err := regexp.Compile(matcher)
	return err == nil && re.MatchString(tool)
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
		if h.Event != event || (tool != "" && !matches(h.Matcher, tool)) {
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

// step is one thing that happened in a transcript.
type step struct {
	kind    string // "use", "result" or "stop"
	id      string // tool_use id
	tool    string
	input   json.RawMessage
	resp    json.RawMessage // toolUseResult, else the tool_result content
	isError bool
	errText string
	text    string // the final assistant message (stop)
}

// transcriptSteps reads a Claude Code transcript's main chain: each
// tool_use, each tool_result, and a final stop carrying the last
// assistant message's text.
func transcriptSteps(t *testing.T, transcript []byte) []step {
	t.Helper()
	var steps []step
	var lastMsgID string
	var lastText []string
	names := map[string]string{}
	inputs := map[string]json.RawMessage{}
	sc := bufio.NewScanner(bytes.NewReader(transcript))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line struct {
			Type          string          `json:"type"`
			IsSidechain   bool            `json:"isSidechain"`
			ToolUseResult json.RawMessage `json:"toolUseResult"`
			Message       struct {
				ID      string          `json:"id"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.IsSidechain {
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			Text      string          `json:"text"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(line.Message.Content, &blocks) != nil {
			continue // a plain-string user prompt
		}
		for _, b := range blocks {
			switch {
			case line.Type == "assistant" && b.Type == "tool_use":
				names[b.ID], inputs[b.ID] = b.Name, b.Input
				steps = append(steps, step{kind: "use", id: b.ID, tool: b.Name, input: b.Input})
			case line.Type == "assistant" && b.Type == "text":
				if line.Message.ID != lastMsgID {
					lastMsgID, lastText = line.Message.ID, nil
				}
				lastText = append(lastText, b.Text)
			case line.Type == "user" && b.Type == "tool_result":
				st := step{kind: "result", id: b.ToolUseID, tool: names[b.ToolUseID], input: inputs[b.ToolUseID],
					resp: line.ToolUseResult, isError: b.IsError}
				if st.resp == nil {
					st.resp = b.Content
				}
				if b.IsError {
					if json.Unmarshal(b.Content, &st.errText) != nil {
						st.errText = string(b.Content)
					}
				}
				steps = append(steps, st)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("driver: read transcript: %v", err)
	}
	return append(steps, step{kind: "stop", text: strings.Join(lastText, "\n")})
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
func (d *runtimeDriver) translate(s step) (event, tool string, payload map[string]any, ok bool) {
	p := map[string]any{}
	switch d.rt {
	case hooks.Gemini:
		switch s.kind {
		case "use":
			return "BeforeTool", s.tool, map[string]any{"tool_name": s.tool, "tool_input": s.input}, true
		case "result":
			resp := map[string]any{"llmContent": s.resp, "returnDisplay": "", "error": nil}
			if s.isError {
				resp["error"] = map[string]any{"message": s.errText}
			}
			return "AfterTool", s.tool, map[string]any{"tool_name": s.tool, "tool_input": s.input, "tool_response": resp}, true
		}
		return "AfterAgent", "", map[string]any{"prompt": "", "prompt_response": s.text, "stop_hook_active": false}, true
	case hooks.Cursor:
		var in struct {
			Command   string `json:"command"`
			FilePath  string `json:"file_path"`
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
			Content   string `json:"content"`
		}
		json.Unmarshal(s.input, &in)
		mcp := strings.HasPrefix(s.tool, "mcp__")
		switch {
		case s.kind == "stop":
			return "stop", "", map[string]any{"status": "completed", "loop_count": 0}, true
		case s.kind == "use" && s.tool == "Bash":
			return "beforeShellExecution", "", map[string]any{"command": in.Command}, true
		case s.kind == "use" && mcp:
			return "beforeMCPExecution", "", map[string]any{"tool_name": s.tool, "tool_input": s.input}, true
		case s.kind == "result" && s.tool == "Bash":
			return "afterShellExecution", "", map[string]any{"command": in.Command, "output": s.resp, "duration": 1}, true
		case s.kind == "result" && mcp:
			return "afterMCPExecution", "", map[string]any{"tool_name": s.tool, "tool_input": s.input, "result_json": string(s.resp)}, true
		case s.kind == "result" && !s.isError && (s.tool == "Edit" || s.tool == "Write" || s.tool == "MultiEdit"):
			return "afterFileEdit", "", map[string]any{"file_path": in.FilePath,
				"edits": []map[string]string{{"old_string": in.OldString, "new_string": in.NewString + in.Content}}}, true
		}
		return "", "", nil, false
	}
	// Claude Code and Codex CLI share the shape; Codex has no failure
	// event and reports a failed call as a PostToolUse.
	switch s.kind {
	case "use":
		return hooks.PreToolUse, s.tool, map[string]any{"tool_name": s.tool, "tool_input": s.input, "tool_use_id": s.id}, true
	case "result":
		p = map[string]any{"tool_name": s.tool, "tool_input": s.input, "tool_use_id": s.id}
		if s.isError && d.rt == hooks.Claude {
			p["error"], p["is_interrupt"] = s.errText, false
			return hooks.PostToolUseFailure, s.tool, p, true
		}
		p["tool_response"] = s.resp
		return hooks.PostToolUse, s.tool, p, true
	}
	return hooks.Stop, "", map[string]any{"stop_hook_active": false, "last_assistant_message": s.text}, true
}

// replay plays a transcript's steps through the driver as the runtime
// would have, and returns what the hooks should have seen and the calls
// the stop made.
func (d *runtimeDriver) replay(t *testing.T, transcript []byte) (expect, []hookCall) {
	t.Helper()
	var ex expect
	var stops []hookCall
	for _, s := range transcriptSteps(t, transcript) {
		event, tool, payload, ok := d.translate(s)
		if !ok {
			continue
		}
		calls := d.fire(event, tool, s.id, payload)
		switch s.kind {
		case "use":
			ex.Judged++
		case "result":
			ex.Recorded++
			if s.isError {
				ex.Failures++
			}
		case "stop":
			ex.FinalMessage, stops = s.text, calls
		}
	}
	return ex, stops
}

func (c hookCall) String() string {
	return fmt.Sprintf("%s %s %s: exit %d timedout=%v in %v\nstdout: %s\nstderr: %s",
		c.Event, c.Tool, c.ToolUse, c.Code, c.TimedOut, c.Elapsed.Round(time.Millisecond), strings.TrimSpace(c.Stdout), strings.TrimSpace(c.Stderr))
}
