// Command mcpterm is an MCP server for the end-to-end tests. Its tools:
// run_command {command} runs the command with sh -c in the directory
// given by -C DIR (else the server's working directory) and answers its
// combined output, as the terminal servers agents are given do;
// search_docs {query} and send_message {to, text} stand for a hosted
// documentation search and a chat server's post: each appends what it
// would send, "search: query" or "to: text", to the file -sent FILE names.
// -tools a,b lists only the tools named (a server of one purpose). It speaks
// MCP's stdio transport (newline-delimited JSON-RPC 2.0), as the
// terminal servers agents are given do; the CLIs start it from their MCP
// configuration, and their hooks see its calls as mcp__<server>__run_command
// (or the CLI's own spelling of an MCP tool).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"slices"
	"strings"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

var (
	dir  string // where commands run ("": the working directory)
	sent string // where messages go
	only string // the tools listed ("": all)
)

func main() {
	flag.StringVar(&dir, "C", "", "run commands in `dir`")
	flag.StringVar(&sent, "sent", "", "append sent messages to `file`")
	flag.StringVar(&only, "tools", "", "list only these `tools` (comma-separated)")
	flag.Parse()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 16<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req request
		if json.Unmarshal(in.Bytes(), &req) != nil || len(req.ID) == 0 {
			continue // a notification (initialized, cancelled): no answer
		}
		result, code, msg := answer(req)
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if code != 0 {
			resp["error"] = map[string]any{"code": code, "message": msg}
		} else {
			resp["result"] = result
		}
		out.Encode(resp)
	}
}

// answer is the result of req, or a JSON-RPC error code and message.
func answer(req request) (any, int, string) {
	switch req.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(req.Params, &p)
		if p.ProtocolVersion == "" {
			p.ProtocolVersion = "2025-06-18"
		}
		return map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": "mcpterm", "version": "1.0.0"},
		}, 0, ""
	case "ping":
		return map[string]any{}, 0, ""
	case "tools/list":
		str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
		all := []map[string]any{
			{
				"name":        "run_command",
				"description": "Run a shell command in the project and return its output.",
				"inputSchema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"command": str("the command line")},
					"required":   []string{"command"},
				},
			},
			{
				"name":        "search_docs",
				"description": "Search the team's hosted documentation.",
				"inputSchema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"query": str("what to look for")},
					"required":   []string{"query"},
				},
			},
			{
				"name":        "send_message",
				"description": "Send a chat message to a person or a channel.",
				"inputSchema": map[string]any{
					"type":       "object",
					"properties": map[string]any{"to": str("the recipient"), "text": str("the message")},
					"required":   []string{"to", "text"},
				},
			},
		}
		var listed []any
		for _, t := range all {
			if only == "" || slices.Contains(strings.Split(only, ","), t["name"].(string)) {
				listed = append(listed, t)
			}
		}
		return map[string]any{"tools": listed}, 0, ""
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Command  string `json:"command"`
				Query    string `json:"query"`
				To, Text string
			} `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return nil, -32602, "bad arguments"
		}
		var out string
		var failed bool
		switch p.Name {
		case "run_command":
			cmd := exec.Command("sh", "-c", p.Arguments.Command)
			cmd.Dir = dir
			b, err := cmd.CombinedOutput()
			out, failed = string(b), err != nil
		case "send_message", "search_docs":
			line := p.Arguments.To + ": " + p.Arguments.Text
			if p.Name == "search_docs" {
				line = "search: " + p.Arguments.Query
			}
			out = "sent"
			if err := appendLine(sent, line); err != nil {
				out, failed = err.Error(), true
			}
		default:
			return nil, -32602, "unknown tool " + p.Name
		}
		return map[string]any{
			"content": []any{map[string]any{"type": "text", "text": out}},
			"isError": failed,
		}, 0, ""
	}
	return nil, -32601, "method not found: " + req.Method
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
