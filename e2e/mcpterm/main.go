// Command mcpterm is a terminal MCP server for the end-to-end tests: one
// tool, run_command {command}, which runs the command with sh -c in the
// directory given by -C DIR (else the server's working directory) and
// answers its combined output. It speaks
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
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// dir is where commands run ("": the working directory).
var dir string

func main() {
	flag.StringVar(&dir, "C", "", "run commands in `dir`")
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
		return map[string]any{"tools": []any{map[string]any{
			"name":        "run_command",
			"description": "Run a shell command in the project and return its output.",
			"inputSchema": map[string]any{
				"type":       "object",
				"properties": map[string]any{"command": map[string]any{"type": "string", "description": "the command line"}},
				"required":   []string{"command"},
			},
		}}}, 0, ""
	case "tools/call":
		var p struct {
			Name      string `json:"name"`
			Arguments struct {
				Command string `json:"command"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(req.Params, &p); err != nil || p.Name != "run_command" {
			return nil, -32602, "unknown tool or bad arguments"
		}
		cmd := exec.Command("sh", "-c", p.Arguments.Command)
		cmd.Dir = dir
		b, err := cmd.CombinedOutput()
		return map[string]any{
			"content": []any{map[string]any{"type": "text", "text": string(b)}},
			"isError": err != nil,
		}, 0, ""
	}
	return nil, -32601, "method not found: " + req.Method
}
