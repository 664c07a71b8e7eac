package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
)

// OpenClawRevision starts the user message OpenClaw sends when a
// before_agent_finalize hook asks for a revision.
const OpenClawRevision = "Before accepting the previous final answer, apply this revision request"

// StartOpenClaw serves script on 127.0.0.1 for OpenClaw with a custom
// provider of api "openai-responses": the Responses API as OpenClaw's
// tools take it (exec {command}, read {path}, write {path, content}).
// Everything but /responses is served as Start serves it.
func StartOpenClaw(script []Turn) (*Server, error) {
	s := &Server{script: script}
	return s, s.listen(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/responses") && req.URL.Host == "" {
			s.openclawResponses(w, req)
			return
		}
		s.serve(w, req)
	}))
}

// openclawResponses answers one Responses API request from OpenClaw. A
// request that offers tools is a conversation turn; the turn is the
// number of tool calls and scripted texts the input already holds, so a
// revision request after a final answer (before_agent_finalize) gets the
// next turn.
func (s *Server) openclawResponses(w http.ResponseWriter, req *http.Request) {
	body, _ := readBody(req)
	r := &Request{API: "responses", Method: req.Method, Path: req.URL.RequestURI(), Body: body}
	var in struct {
		Stream bool              `json:"stream"`
		Tools  []json.RawMessage `json:"tools"`
		Input  []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		s.record(r)
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	r.Main = len(in.Tools) > 0
	n, last := 0, -1
	for i, raw := range in.Input {
		var it struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(raw, &it)
		switch {
		case it.Type == "function_call":
			n, last = n+1, i
		case it.Role == "assistant":
			last = i
			for _, t := range jsonStrings(it.Content) {
				if s.isScripted(t) {
					n++
					break
				}
			}
		case it.Role == "user":
			// A before_agent_finalize revision sends the instruction in a
			// new user message and leaves the final answer it revises out
			// of the history: that answer was a turn.
			for _, t := range jsonStrings(it.Content) {
				if strings.Contains(t, OpenClawRevision) {
					n++
					break
				}
			}
		}
	}
	if last+1 <= len(in.Input) {
		r.since = mustRaw(in.Input[last+1:])
	}
	var item map[string]any
	if r.Main {
		r.Turn = n
		t := s.turn(n, r)
		r.Answer = t
		callID := fmt.Sprintf("call_oc_%02d", n)
		fc := func(name string, args any) map[string]any {
			return map[string]any{"type": "function_call", "id": "fc_oc_" + fmt.Sprint(n), "call_id": callID, "name": name,
				"arguments": mustJSON(args), "status": "completed"}
		}
		switch t.Tool {
		case Shell:
			item = fc("exec", map[string]any{"command": t.Command})
		case Read:
			item = fc("read", map[string]any{"path": t.Path})
		case Write:
			item = fc("write", map[string]any{"path": t.Path, "content": t.Content})
		case Edit:
			item = fc("edit", map[string]any{"path": t.Path, "oldText": t.Old, "newText": t.New})
		case MCP:
			var offered []string
			for _, raw := range in.Tools {
				var tool struct{ Name string }
				json.Unmarshal(raw, &tool)
				offered = append(offered, tool.Name)
			}
			if name := mcpTool(offered, t.Name); name != "" {
				item = fc(name, t.Args)
			} else if slices.Contains(offered, "tool_call") {
				// OpenClaw defers MCP tools behind Tool Search: tool_call
				// calls one by its name (<server>__<tool>)
				item = fc("tool_call", map[string]any{"id": t.Name, "args": t.Args})
			} else {
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
	id := fmt.Sprintf("resp_oc_%d", len(s.Requests()))
	respond(w, id, item, in.Stream)
}

func readBody(req *http.Request) ([]byte, error) {
	return io.ReadAll(io.LimitReader(req.Body, 64<<20))
}
