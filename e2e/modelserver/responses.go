package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// runningSession finds the session of a command exec_command left
// running ("Process running with session ID 3").
var runningSession = regexp.MustCompile(`Process running with session ID (\d+)`)

// responses answers POST /v1/responses, the OpenAI Responses API, which
// Codex CLI speaks to a model_provider with wire_api = "responses". A
// request that offers tools is a conversation turn.
func (s *Server) responses(w http.ResponseWriter, r *Request) {
	var in struct {
		Stream bool `json:"stream"`
		Tools  []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
		Input []struct {
			Type      string          `json:"type"`
			Name      string          `json:"name"`
			Tools     []searchedTool  `json:"tools"`     // tool_search_output
			Arguments json.RawMessage `json:"arguments"` // tool_search_call
			Role      string          `json:"role"`
			Output    json.RawMessage `json:"output"`
			Content   []struct {
				Type, Text string
			} `json:"content"`
		} `json:"input"`
	}
	if err := json.Unmarshal(r.Body, &in); err != nil {
		s.record(r)
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	tools := map[string]string{} // name → type
	for _, t := range in.Tools {
		name := t.Name
		if t.Type == "local_shell" || t.Type == "tool_search" {
			name = t.Type
		}
		tools[name] = t.Type
	}
	r.Main = len(in.Tools) > 0
	n, last := 0, -1
	for i, it := range in.Input {
		switch it.Type {
		case "function_call", "custom_tool_call", "local_shell_call":
			last = i
			if it.Name != "write_stdin" { // a poll of a running command is not a turn
				n++
			}
		case "message":
			if it.Role != "assistant" {
				continue
			}
			last = i
			for _, c := range it.Content {
				if s.isScripted(c.Text) {
					n++
					break
				}
			}
		}
	}
	var raw struct {
		Input []json.RawMessage `json:"input"`
	}
	json.Unmarshal(r.Body, &raw)
	if last+1 <= len(raw.Input) {
		r.since = mustRaw(raw.Input[last+1:])
	}
	var item map[string]any
	callID := fmt.Sprintf("call_docket_%02d", n)
	// A command still running when exec_command yielded: wait for it
	// (write_stdin with no input), as a model does, before the next turn.
	running := ""
	if last >= 0 && last+1 < len(in.Input) {
		for _, it := range in.Input[last+1:] {
			var out string
			if it.Type == "function_call_output" && json.Unmarshal(it.Output, &out) == nil {
				if m := runningSession.FindStringSubmatch(out); m != nil {
					running = m[1]
				}
			}
		}
	}
	if r.Main && running != "" && tools["write_stdin"] != "" {
		r.Turn = n
		r.Answer = Turn{Tool: Shell, Command: "(waiting for session " + running + ")"}
		id, _ := strconv.Atoi(running)
		chars, wait := "", 30000
		if t := s.turn(n, r); t.Tool == Stdin {
			chars, wait, r.Answer = t.Command, 2000, t
		}
		item = map[string]any{"type": "function_call", "id": "fc_" + callID + "_poll", "call_id": fmt.Sprintf("%s_poll%d", callID, len(s.Requests())),
			"name": "write_stdin", "arguments": mustJSON(map[string]any{"session_id": id, "chars": chars, "yield_time_ms": wait})}
	} else if r.Main {
		r.Turn = n
		t := s.turn(n, r)
		r.Answer = t
		switch t.Tool {
		case Shell:
			item = codexShell(tools, callID, t.Command)
			if t.TTY && item["name"] == "exec_command" {
				item["arguments"] = mustJSON(map[string]any{"cmd": t.Command, "tty": true, "yield_time_ms": 1000})
			}
		case Write, Edit:
			var patch string
			if t.Tool == Write {
				patch = "*** Begin Patch\n*** Add File: " + t.Path + "\n"
				for _, l := range strings.SplitAfter(strings.TrimSuffix(t.Content, "\n"), "\n") {
					patch += "+" + strings.TrimSuffix(l, "\n") + "\n"
				}
			} else {
				patch = "*** Begin Patch\n*** Update File: " + t.Path + "\n@@\n-" + t.Old + "\n+" + t.New + "\n"
			}
			patch += "*** End Patch\n"
			switch tools["apply_patch"] {
			case "custom":
				item = map[string]any{"type": "custom_tool_call", "id": "ctc_" + callID, "call_id": callID, "name": "apply_patch", "input": patch, "status": "completed"}
			case "function":
				item = map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": "apply_patch", "arguments": mustJSON(map[string]any{"input": patch})}
			default:
				item = codexShell(tools, callID, "apply_patch <<'PATCH'\n"+patch+"PATCH")
			}
		case Read:
			item = codexShell(tools, callID, "cat "+shellQuote(t.Path))
		case MCP:
			// Codex defers MCP tools: they are found with tool_search,
			// and offered from its output on (in a namespace)
			var offered []string
			namespace := map[string]string{}
			_, tool, _ := strings.Cut(t.Name, "__")
			searched := false // for this tool
			for name := range tools {
				offered = append(offered, name)
			}
			for _, it := range in.Input {
				searched = searched || it.Type == "tool_search_call" && strings.Contains(string(it.Arguments), `"`+tool+`"`)
				for _, st := range it.Tools {
					if st.Type != "namespace" {
						offered = append(offered, st.Name)
						continue
					}
					for _, nt := range st.Tools {
						offered = append(offered, st.Name+"__"+nt.Name)
						namespace[st.Name+"__"+nt.Name] = st.Name
					}
				}
			}
			slices.Sort(offered)
			switch name := mcpTool(offered, t.Name); {
			case name != "":
				item = map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": name, "arguments": mustJSON(t.Args)}
				if ns := namespace[name]; ns != "" {
					item["name"], item["namespace"] = strings.TrimPrefix(name, ns+"__"), ns
				}
			case tools["tool_search"] != "" && !searched:
				// not a turn of the script: the call the turn needs is
				// asked for again once the search has answered
				item = map[string]any{"type": "tool_search_call", "id": "tsc_" + callID, "call_id": "ts_" + callID, "status": "completed",
					"execution": "client", "arguments": map[string]any{"query": tool}}
			default:
				r.Answer = Turn{Text: "no MCP tool " + t.Name + " is offered"}
				item = textItem(n, r.Answer.Text)
			}
		default:
			item = textItem(n, t.Text)
		}
	} else {
		item = textItem(n, "Scripted session")
	}
	s.record(r)
	id := fmt.Sprintf("resp_docket_%d", len(s.Requests()))
	respond(w, id, item, in.Stream)
}

// searchedTool is a tool in a tool_search_output: a function, or a
// namespace of them (an MCP server's).
type searchedTool struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

// respond answers a Responses API request with one output item: a JSON
// response, or the event stream the OpenAI clients expect (created,
// item added, the text or arguments as one delta and done, item done,
// completed).
func respond(w http.ResponseWriter, id string, item map[string]any, stream bool) {
	usage := map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 10, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110}
	if !stream {
		writeJSON(w, map[string]any{"id": id, "object": "response", "status": "completed", "output": []any{item}, "usage": usage})
		return
	}
	e := newSSE(w)
	e.send("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "status": "in_progress"}})
	e.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	switch item["type"] {
	case "message":
		text := item["content"].([]any)[0].(map[string]any)["text"]
		e.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": item["id"],
			"output_index": 0, "content_index": 0, "delta": text})
		e.send("response.output_text.done", map[string]any{"type": "response.output_text.done", "item_id": item["id"],
			"output_index": 0, "content_index": 0, "text": text})
	case "function_call":
		e.send("response.function_call_arguments.delta", map[string]any{"type": "response.function_call_arguments.delta",
			"item_id": item["id"], "output_index": 0, "delta": item["arguments"]})
		e.send("response.function_call_arguments.done", map[string]any{"type": "response.function_call_arguments.done",
			"item_id": item["id"], "output_index": 0, "arguments": item["arguments"]})
	}
	e.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	e.send("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "status": "completed", "output": []any{item}, "usage": usage}})
}

func textItem(n int, text string) map[string]any {
	return map[string]any{"type": "message", "id": fmt.Sprintf("msg_docket_%02d", n), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
}

// codexShell is a shell call in the shape of the shell tool the request
// offers: shell_command {command}, shell {command: argv}, exec_command
// {cmd} or the built-in local_shell.
func codexShell(tools map[string]string, callID, cmd string) map[string]any {
	fc := func(name string, args any) map[string]any {
		return map[string]any{"type": "function_call", "id": "fc_" + callID, "call_id": callID, "name": name, "arguments": mustJSON(args)}
	}
	switch {
	case tools["shell_command"] != "":
		return fc("shell_command", map[string]any{"command": cmd})
	case tools["shell"] != "":
		return fc("shell", map[string]any{"command": []string{"bash", "-lc", cmd}})
	case tools["exec_command"] != "":
		return fc("exec_command", map[string]any{"cmd": cmd, "yield_time_ms": 30000})
	case tools["local_shell"] != "":
		return map[string]any{"type": "local_shell_call", "id": "lsc_" + callID, "call_id": callID, "status": "completed",
			"action": map[string]any{"type": "exec", "command": []string{"bash", "-lc", cmd}}}
	}
	return fc("shell", map[string]any{"command": []string{"bash", "-lc", cmd}})
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
