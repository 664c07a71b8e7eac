package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// FunctionTurn is one answer of a scripted model for an SDK that calls
// function tools by name (the OpenAI Agents SDK): a function call (Name
// and Arguments, a JSON object as text) or a final text (Text).
type FunctionTurn struct {
	Name      string
	Arguments string
	Text      string
}

// FunctionRequest is one request the SDK made.
type FunctionRequest struct {
	API  string // "chat_completions" or "responses"
	Body []byte
	Turn int // the scripted turn answered; len(script) when exhausted
	// ToolResults are the tool results the conversation holds, in order:
	// what each executed, rejected or failed call returned to the model.
	ToolResults []string
}

// FunctionServer is a scripted model speaking the non-streamed OpenAI Chat
// Completions API (POST /v1/chat/completions) and Responses API (POST
// /v1/responses), as the OpenAI Agents SDK calls them from Runner.run.
// Like Server, it counts the scripted function calls the conversation
// already holds and answers with the next turn, so a retried request gets
// the same answer.
type FunctionServer struct {
	URL string // http://127.0.0.1:PORT; the SDK's baseURL is URL + "/v1"

	script []FunctionTurn
	srv    *http.Server

	mu       sync.Mutex
	requests []*FunctionRequest
}

// StartFunctions serves script on 127.0.0.1 on a free port until Close.
func StartFunctions(script []FunctionTurn) (*FunctionServer, error) {
	s := &FunctionServer{script: script}
	var err error
	s.URL, s.srv, err = serveLoopback(http.HandlerFunc(s.serve))
	return s, err
}

// Close stops the server.
func (s *FunctionServer) Close() error { return s.srv.Close() }

// Requests returns every conversation request so far, in arrival order.
func (s *FunctionServer) Requests() []*FunctionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*FunctionRequest(nil), s.requests...)
}

func (s *FunctionServer) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	r := &FunctionRequest{Body: body}
	var n int
	var err error
	switch {
	case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/chat/completions"):
		r.API = "chat_completions"
		n, r.ToolResults, err = chatHistory(body)
	case req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/responses"):
		r.API = "responses"
		n, r.ToolResults, err = responsesHistory(body)
	default:
		http.Error(w, `{"error":{"message":"not served by the scripted model"}}`, http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	r.Turn = n
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
	t := FunctionTurn{Text: "The script is over."}
	if n < len(s.script) {
		t = s.script[n]
	}
	callID := fmt.Sprintf("call_%d", n+1)
	w.Header().Set("Content-Type", "application/json")
	usage := map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15, "input_tokens": 10, "output_tokens": 5}
	if r.API == "chat_completions" {
		msg := map[string]any{"role": "assistant", "content": t.Text}
		finish := "stop"
		if t.Name != "" {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": callID, "type": "function", "function": map[string]any{"name": t.Name, "arguments": t.Arguments}}}}
			finish = "tool_calls"
		}
		json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n+1), "object": "chat.completion", "created": 1_763_900_000,
			"model": "scripted", "choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	item := map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n+1), "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}}
	if t.Name != "" {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", n+1), "call_id": callID, "name": t.Name,
			"arguments": t.Arguments, "status": "completed"}
	}
	json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("resp_%d", n+1), "object": "response", "created_at": 1_763_900_000,
		"status": "completed", "model": "scripted", "output": []any{item},
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
			"input_tokens_details": map[string]int{"cached_tokens": 0}, "output_tokens_details": map[string]int{"reasoning_tokens": 0}}})
}

// chatHistory counts the assistant tool calls in a Chat Completions
// request and collects the tool results.
func chatHistory(body []byte) (int, []string, error) {
	var in struct {
		Messages []struct {
			Role      string            `json:"role"`
			Content   json.RawMessage   `json:"content"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return 0, nil, err
	}
	n := 0
	var results []string
	for _, m := range in.Messages {
		n += len(m.ToolCalls)
		if m.Role == "tool" {
			results = append(results, contentText(m.Content))
		}
	}
	return n, results, nil
}

// responsesHistory counts the function calls in a Responses request's
// input and collects their outputs.
func responsesHistory(body []byte) (int, []string, error) {
	var in struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return 0, nil, err
	}
	var items []struct {
		Type   string          `json:"type"`
		Output json.RawMessage `json:"output"`
	}
	if len(in.Input) > 0 && in.Input[0] == '[' {
		if err := json.Unmarshal(in.Input, &items); err != nil {
			return 0, nil, err
		}
	}
	n := 0
	var results []string
	for _, it := range items {
		switch it.Type {
		case "function_call":
			n++
		case "function_call_output":
			results = append(results, contentText(it.Output))
		}
	}
	return n, results, nil
}

// contentText flattens a message content (a string, or parts with text)
// to its text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.Join(jsonStrings(raw), "\n")
}
