package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/docket/docket/install"
)

// This file is a small stand-in for Claude Code: it reads the hooks that
// `docket install` wrote into .claude/settings.json and runs exactly those
// command lines, under `sh -c`, in the project directory, with the
// event's JSON payload on stdin and the configured timeout — which is all
// Claude Code does with a command hook.

// handler is one command hook from a settings file.
type handler struct {
	Event, Matcher, Command string
	Timeout                 time.Duration
}

// readSettings returns the command hooks of a Claude Code settings file.
func readSettings(path string) ([]handler, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string  `json:"type"`
				Command string  `json:"command"`
				Timeout float64 `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var hs []handler
	for event, groups := range s.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if h.Type == "command" {
					hs = append(hs, handler{event, g.Matcher, h.Command, time.Duration(h.Timeout * float64(time.Second))})
				}
			}
		}
	}
	return hs, nil
}

// runtime fires hook events for one session in one project.
type runtime struct {
	handlers   []handler
	env        []string
	cwd        string
	session    string
	transcript string
}

// hookResult is what one hook command did.
type hookResult struct {
	Command string
	Code    int
	Stdout  string
	Stderr  string
}

// fire sends one event to every matching hook and returns what each did.
// tool is "" for events without a matcher (Stop).
func (r *runtime) fire(ctx context.Context, event, tool string, payload map[string]any) ([]hookResult, error) {
	payload["session_id"] = r.session
	payload["transcript_path"] = r.transcript
	payload["cwd"] = r.cwd
	payload["permission_mode"] = "default"
	payload["hook_event_name"] = event
	in, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	var out []hookResult
	for _, h := range r.handlers {
		if h.Event != event || (tool != "" && !install.Matches(h.Matcher, tool)) {
			continue
		}
		res, err := r.run(ctx, h, in)
		if err != nil {
			return out, err
		}
		out = append(out, res)
	}
	return out, nil
}

func (r *runtime) run(ctx context.Context, h handler, stdin []byte) (hookResult, error) {
	timeout := h.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", h.Command)
	cmd.Dir, cmd.Env, cmd.Stdin = r.cwd, r.env, bytes.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	res := hookResult{Command: h.Command, Stdout: so.String(), Stderr: se.String()}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("%s: timed out after %v (Claude Code would fail open here)", h.Command, timeout)
	case errors.As(err, &ee):
		res.Code = ee.ExitCode()
	case err != nil:
		return res, fmt.Errorf("%s: %w", h.Command, err)
	}
	return res, nil
}

// preToolUse asks the judge about a call and returns its decision
// ("allow", "deny", "ask", or "" for no opinion) and reason.
func (r *runtime) preToolUse(ctx context.Context, id, tool string, input json.RawMessage) (decision, reason string, err error) {
	res, err := r.fire(ctx, "PreToolUse", tool, map[string]any{"tool_name": tool, "tool_input": input, "tool_use_id": id})
	if err != nil {
		return "", "", err
	}
	for _, h := range res {
		if h.Code == 2 { // Claude Code: exit 2 blocks, stderr is the reason
			return "deny", strings.TrimSpace(h.Stderr), nil
		}
		if h.Code != 0 {
			return "", "", fmt.Errorf("%s exited %d: %s", h.Command, h.Code, strings.TrimSpace(h.Stderr))
		}
		if strings.TrimSpace(h.Stdout) == "" {
			continue
		}
		var a struct {
			Out struct {
				Decision string `json:"permissionDecision"`
				Reason   string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(h.Stdout), &a); err != nil {
			return "", "", fmt.Errorf("%s answered %q: %w", h.Command, h.Stdout, err)
		}
		decision, reason = a.Out.Decision, a.Out.Reason
		if decision == "deny" || decision == "ask" {
			break
		}
	}
	return decision, reason, nil
}

// postToolUse reports a finished call to the ledger hooks: PostToolUse
// with the tool's response, or PostToolUseFailure with its error.
func (r *runtime) postToolUse(ctx context.Context, id, tool string, input, response json.RawMessage, failure string) error {
	event, p := "PostToolUse", map[string]any{"tool_name": tool, "tool_input": input, "tool_use_id": id}
	if failure != "" {
		event, p["error"], p["is_interrupt"] = "PostToolUseFailure", failure, false
	} else {
		p["tool_response"] = response
	}
	res, err := r.fire(ctx, event, tool, p)
	if err != nil {
		return err
	}
	if len(res) == 0 {
		return fmt.Errorf("no %s hook is configured for %s", event, tool)
	}
	for _, h := range res {
		if h.Code != 0 {
			return fmt.Errorf("%s exited %d: %s", h.Command, h.Code, strings.TrimSpace(h.Stderr))
		}
	}
	return nil
}

// stop ends the turn with message and returns the gate's block reason
// ("" when the stop is allowed).
func (r *runtime) stop(ctx context.Context, message string) (string, error) {
	res, err := r.fire(ctx, "Stop", "", map[string]any{"stop_hook_active": false, "last_assistant_message": message})
	if err != nil {
		return "", err
	}
	if len(res) == 0 {
		return "", errors.New("no Stop hook is configured")
	}
	for _, h := range res {
		if h.Code != 0 {
			return "", fmt.Errorf("%s exited %d: %s", h.Command, h.Code, strings.TrimSpace(h.Stderr))
		}
		if strings.TrimSpace(h.Stdout) == "" {
			continue
		}
		var a struct{ Decision, Reason string }
		if err := json.Unmarshal([]byte(h.Stdout), &a); err != nil {
			return "", fmt.Errorf("%s answered %q: %w", h.Command, h.Stdout, err)
		}
		if a.Decision == "block" {
			return a.Reason, nil
		}
	}
	return "", nil
}
