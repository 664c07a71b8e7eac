// Package modelserver is a scripted language-model server on loopback for
// driving real agent CLIs headless: the Anthropic Messages API (Claude
// Code), the OpenAI Responses API (Codex CLI) and the Gemini API
// (Gemini CLI), each streamed as server-sent events the way the CLI asks.
//
// A script is a list of turns. On each main request the server finds how
// many scripted turns the conversation already holds (the assistant's
// tool calls and scripted texts in the history the CLI sent back) and
// answers with the next one, so a CLI that retries a request gets the
// same answer, and a hook that blocks a stop makes the CLI send one more
// request, which gets the next turn. Every request is recorded, so a
// test can check what reached the model: a tool result, a denial, a stop
// hook's reason. Side requests (token counting, titles, classifiers) get
// harmless answers and do not advance the script.
package modelserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
)

// Kinds of tool call a turn can make. Each API maps them onto the tools
// its CLI offers.
const (
	Shell = "shell" // run a shell command: Command
	Write = "write" // create a file: Path (absolute) and Content
	Read  = "read"  // read a file: Path (a shell cat where the CLI has no read tool)
	Edit  = "edit"  // replace Old with New in the file at Path
	MCP   = "mcp"   // call the MCP tool Name with Args
	// Stdin types Command into the command still running from the
	// previous turn (Codex: write_stdin); a Shell turn with TTY starts
	// one that waits for it
	Stdin = "stdin"
)

// Turn is one answer of the scripted model: a tool call (Tool set) or a
// final text (Text).
type Turn struct {
	Tool    string         // Shell or Write; "" for a text answer
	Command string         // Shell
	Path    string         // Write: absolute path
	Content string         // Write
	Old     string         // Edit: the text to replace (one line)
	New     string         // Edit: its replacement (one line)
	TTY     bool           // Shell: in a terminal, left running (Codex: exec_command tty)
	Name    string         // MCP: <server>__<tool>, the server as the CLI's MCP configuration names it
	Args    map[string]any // MCP: its arguments
	Text    string         // a text answer

	// Dynamic, when set, computes the turn from the request that asks for
	// it (the whole conversation so far, as sent by the CLI): e.g. a
	// command copied from a block reason. Its result's Dynamic is ignored.
	Dynamic func(r *Request) Turn
}

// mcpTool is the name under which a CLI offers the MCP tool name
// ("<server>__<tool>"): mcp__<server>__<tool> (Claude Code; Codex, in a
// namespace), mcp_<server>_<tool> (Gemini CLI) or <server>__<tool>
// (OpenClaw); "" if none is offered.
func mcpTool(offered []string, name string) string {
	server, tool, _ := strings.Cut(name, "__")
	for _, o := range offered {
		if o == "mcp__"+server+"__"+tool || o == "mcp_"+server+"_"+tool || o == name {
			return o
		}
	}
	return ""
}

// Request is one request a CLI made.
type Request struct {
	API    string // "anthropic", "responses", "gemini", or "outbound" (a proxied request for another host)
	Method string
	Path   string // URL path and query
	Body   []byte
	Main   bool // a conversation turn (false: a side request)
	Turn   int  // the scripted turn answered (Main only); len(script) when exhausted
	Answer Turn // what the server answered (Main only)

	since []byte // the conversation items after the model's last turn, as a JSON array
}

// Strings returns every string value in the request's JSON body (object
// keys left out), in document order: the conversation's texts, tool
// results and arguments, and the CLI's system prompt and tool schemas.
func (r *Request) Strings() []string { return jsonStrings(r.Body) }

// Since returns the string values of the conversation items the CLI
// added after the model's last turn: tool results, a hook's denial, a
// stop hook's feedback.
func (r *Request) Since() []string { return jsonStrings(r.since) }

// SinceText is Since joined by newlines.
func (r *Request) SinceText() string { return strings.Join(r.Since(), "\n") }

// jsonStrings returns the string values in b, in document order.
func jsonStrings(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var out []string
	// stack holds, for each open container, whether it is an object and
	// whether its next token is a key.
	type frame struct{ obj, key bool }
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			if len(out) == 0 && err != io.EOF {
				return []string{string(b)}
			}
			return out
		}
		isKey := len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].key
		if len(stack) > 0 && stack[len(stack)-1].obj {
			if d, ok := tok.(json.Delim); !ok || (d != '}' && d != ']') {
				stack[len(stack)-1].key = !stack[len(stack)-1].key
			}
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				stack = append(stack, frame{obj: true, key: true})
			case '[':
				stack = append(stack, frame{})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if !isKey {
				out = append(out, t)
			}
		}
	}
}

// Text is Strings joined by newlines.
func (r *Request) Text() string { return strings.Join(r.Strings(), "\n") }

// Server is a running scripted model server.
type Server struct {
	URL string // http://127.0.0.1:PORT

	script []Turn
	srv    *http.Server

	mu       sync.Mutex
	requests []*Request
}

// Start serves script on 127.0.0.1 on a free port until Close.
func Start(script []Turn) (*Server, error) {
	s := &Server{script: script}
	return s, s.listen(http.HandlerFunc(s.serve))
}

// listen serves h on 127.0.0.1 on a free port.
func (s *Server) listen(h http.Handler) error {
	var err error
	s.URL, s.srv, err = serveLoopback(h)
	return err
}

// serveLoopback serves h on 127.0.0.1 on a free port until the server
// it returns is closed.
func serveLoopback(h http.Handler) (url string, srv *http.Server, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen on loopback: %w", err)
	}
	srv = &http.Server{Handler: h}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), srv, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Requests returns every request so far, in arrival order.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// Outbound returns the attempts to reach another host through the
// server as a proxy ("CONNECT host:443", "GET host/path").
func (s *Server) Outbound() []string {
	var out []string
	for _, r := range s.Requests() {
		if r.API == "outbound" {
			out = append(out, r.Path)
		}
	}
	return out
}

// MainRequests returns the conversation requests so far.
func (s *Server) MainRequests() []*Request {
	var out []*Request
	for _, r := range s.Requests() {
		if r.Main {
			out = append(out, r)
		}
	}
	return out
}

// LastAsking returns the last main request that asked for turn n, or
// nil: the one that got turn n, after any waits for a running command.
func (s *Server) LastAsking(n int) *Request {
	var last *Request
	for _, r := range s.MainRequests() {
		if r.Turn == n {
			last = r
		}
	}
	return last
}

// FirstAsking returns the first main request that asked for turn n, or
// nil.
func (s *Server) FirstAsking(n int) *Request {
	for _, r := range s.MainRequests() {
		if r.Turn == n {
			return r
		}
	}
	return nil
}

func (s *Server) record(r *Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
}

// turn resolves scripted turn n for request r.
func (s *Server) turn(n int, r *Request) Turn {
	if n >= len(s.script) {
		return Turn{Text: "The script is over."}
	}
	t := s.script[n]
	if t.Dynamic != nil {
		t = t.Dynamic(r)
		t.Dynamic = nil
	}
	return t
}

// isScripted reports whether text is one of the script's texts.
func (s *Server) isScripted(text string) bool {
	text = strings.TrimSpace(text)
	if text == "" {
		return false
	}
	for _, t := range s.script {
		if t.Text != "" && strings.TrimSpace(t.Text) == text {
			return true
		}
	}
	return text == "The script is over."
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	r := &Request{Method: req.Method, Path: req.URL.RequestURI(), Body: body}
	p := req.URL.Path
	switch {
	case req.Method == http.MethodConnect || req.URL.Host != "":
		// Used as HTTP(S)_PROXY, the server sees every attempt to reach
		// another host, and refuses it.
		r.API = "outbound"
		r.Path = req.Method + " " + req.Host + req.URL.RequestURI()
		s.record(r)
		http.Error(w, "no network in the scripted session", http.StatusForbidden)
	case strings.HasSuffix(p, "/messages/count_tokens"):
		r.API = "anthropic"
		s.record(r)
		writeJSON(w, map[string]any{"input_tokens": 100})
	case strings.HasSuffix(p, "/messages"):
		r.API = "anthropic"
		s.anthropic(w, r)
	case strings.HasSuffix(p, "/responses"):
		r.API = "responses"
		s.responses(w, r)
	case strings.Contains(p, ":streamGenerateContent"), strings.Contains(p, ":generateContent"):
		r.API = "gemini"
		s.gemini(w, r, strings.Contains(p, ":streamGenerateContent"))
	case strings.Contains(p, ":countTokens"):
		r.API = "gemini"
		s.record(r)
		writeJSON(w, map[string]any{"totalTokens": 100})
	case strings.HasSuffix(p, "/models") && req.Method == http.MethodGet:
		s.record(r)
		writeJSON(w, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		s.record(r)
		http.Error(w, `{"error":{"message":"not served by the scripted model"}}`, http.StatusNotFound)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events; event "" writes a data-only event.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (e sse) send(event string, v any) {
	var b bytes.Buffer
	if event != "" {
		fmt.Fprintf(&b, "event: %s\n", event)
	}
	d, _ := json.Marshal(v)
	fmt.Fprintf(&b, "data: %s\n\n", d)
	e.w.Write(b.Bytes())
	if f, ok := e.w.(http.Flusher); ok {
		f.Flush()
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func mustRaw(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
