package openclaw_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/e2e/modelserver"
	"github.com/docket/docket/internal/testbin"
)

// fakeToken is shaped like a GitHub personal access token.
const fakeToken = "ghp_R8uPz3LmQw7XvT2nKb9YcHs4JdFa6GeN1oVi"

// TestMCPTools: OpenClaw runs an MCP server's tools under names of its
// own, <server>__<tool> (slack__send_message), which the plugin hands
// docket as they are. docket must judge them as the MCP tools they are,
// as it does Claude Code's mcp__slack__send_message: a token in a query
// sent to a Slack server is redacted before it goes, and a chat post
// people read waits for a human.
func TestMCPTools(t *testing.T) {
	w := newWorld(t)
	sent := filepath.Join(w.root, "sent.log")
	w.mcpServers = map[string]any{"slack": map[string]any{
		"command": testbin.Build(t, "e2e/mcpterm"),
		"args":    []string{"-sent", sent, "-tools", "search_docs,send_message"},
	}}
	r := w.runOpenClaw("mcp", "acme-mcp", "Find out why the deploy token is rejected and tell the team.", []modelserver.Turn{
		{Tool: modelserver.MCP, Name: "slack__search_docs", Args: map[string]any{"query": "why is the deploy token " + fakeToken + " rejected"}},
		{Tool: modelserver.MCP, Name: "slack__send_message", Args: map[string]any{"to": "#ops", "text": "the deploy token is rejected"}},
		{Text: "I searched the docs; posting to #ops needs your approval."},
	}, nil)
	if a := r.model.FirstAsking(0); a == nil || a.Answer.Tool != modelserver.MCP {
		var names []string
		if a != nil {
			var in struct{ Tools []struct{ Name string } }
			json.Unmarshal(a.Body, &in)
			for _, tl := range in.Tools {
				names = append(names, tl.Name)
			}
		}
		t.Fatalf("OpenClaw offered no slack__search_docs tool; its tools: %s\n%s", strings.Join(names, ", "), tail(r.out, 3000))
	}
	b, _ := os.ReadFile(sent)
	if s := string(b); !strings.HasPrefix(s, "search: why is the deploy token ") || strings.Contains(s, fakeToken) ||
		!strings.Contains(s, "[redacted") || strings.Contains(s, "#ops") {
		t.Errorf("sent %q: want the query alone, its token redacted", s)
	}
	// OpenClaw calls the deferred tool through tool_call, and fires
	// before_tool_call for both: the inner call, under the tool's own
	// name, is the one docket judges as the MCP tool it is
	for tool, want := range map[string]string{"slack__search_docs": "revise", "slack__send_message": "escalate"} {
		hs := r.hook("before_tool_call", tool)
		if len(hs) != 1 || hs[0]["decision"] != want {
			t.Errorf("before_tool_call %s: %v, want one %s", tool, hs, want)
		}
	}
}
