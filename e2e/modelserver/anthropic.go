package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropic answers POST /v1/messages (Claude Code with
// ANTHROPIC_BASE_URL). A request that offers the Bash tool is a
// conversation turn; others (titles, quota checks) get a short text.
func (s *Server) anthropic(w http.ResponseWriter, r *Request) {
	var in struct {
		Stream   bool `json:"stream"`
		Model    string
		Tools    []struct{ Name string } `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.Body, &in); err != nil {
		s.record(r)
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	for _, t := range in.Tools {
		if t.Name == "Bash" {
			r.Main = true
		}
	}
	var blocks []map[string]any
	stop := "end_turn"
	if r.Main {
		n, last := 0, -1
		for i, m := range in.Messages {
			if m.Role == "assistant" {
				last = i
			}
		}
		r.since = mustRaw(in.Messages[last+1:])
		for _, m := range in.Messages {
			if m.Role != "assistant" {
				continue
			}
			var bs []struct {
				Type, Text string
			}
			if json.Unmarshal(m.Content, &bs) != nil {
				var str string
				if json.Unmarshal(m.Content, &str) == nil && s.isScripted(str) {
					n++
				}
				continue
			}
			for _, b := range bs {
				if b.Type == "tool_use" || (b.Type == "text" && s.isScripted(b.Text)) {
					n++
					break
				}
			}
		}
		r.Turn = n
		t := s.turn(n, r)
		r.Answer = t
		switch t.Tool {
		case Shell:
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_docket_%02d", n), "name": "Bash",
				"input": map[string]any{"command": t.Command, "description": "Run a command", "timeout": 600000}})
			stop = "tool_use"
		case Write:
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_docket_%02d", n), "name": "Write",
				"input": map[string]any{"file_path": t.Path, "content": t.Content}})
			stop = "tool_use"
		case Read:
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_docket_%02d", n), "name": "Read",
				"input": map[string]any{"file_path": t.Path}})
			stop = "tool_use"
		case Edit:
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_docket_%02d", n), "name": "Edit",
				"input": map[string]any{"file_path": t.Path, "old_string": t.Old, "new_string": t.New}})
			stop = "tool_use"
		case MCP:
			var offered []string
			for _, o := range in.Tools {
				offered = append(offered, o.Name)
			}
			if name := mcpTool(offered, t.Name); name != "" {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_docket_%02d", n), "name": name, "input": t.Args})
				stop = "tool_use"
			} else {
				r.Answer = Turn{Text: "no MCP tool " + t.Name + " is offered"}
				blocks = append(blocks, map[string]any{"type": "text", "text": r.Answer.Text})
			}
		default:
			blocks = append(blocks, map[string]any{"type": "text", "text": t.Text})
		}
	} else {
		blocks = append(blocks, map[string]any{"type": "text", "text": "Scripted session"})
	}
	s.record(r)
	model := in.Model
	if model == "" {
		model = "claude-scripted"
	}
	id := fmt.Sprintf("msg_docket_%d", len(s.Requests()))
	usage := map[string]any{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if !in.Stream {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	e := newSSE(w)
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 100, "output_tokens": 1}}})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": mustJSON(b["input"])}})
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 10}})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}
