package openclaw_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/docket/docket/e2e/modelserver"
)

// TestTypedInput: OpenClaw's exec can leave a command running in a
// terminal, and its process tool types into it. docket judges what is
// typed as the line a shell there would run (a read of docket's key is
// refused, a plain line runs), and refuses to start a shell to type
// into, since a line typed in pieces is judged a piece at a time.
func TestTypedInput(t *testing.T) {
	w := newWorld(t)
	keyPath := filepath.Join(w.root, "docket", "keys", "hmac.key")
	session := regexp.MustCompile(`still running \(session ([A-Za-z0-9_-]+)`)
	typeInto := func(data string) modelserver.Turn {
		return modelserver.Turn{Dynamic: func(req *modelserver.Request) modelserver.Turn {
			id := "" // of the one command the run leaves running
			for _, r := range req.Strings() {
				if m := session.FindStringSubmatch(r); m != nil && id == "" {
					id = m[1]
				}
			}
			return modelserver.Turn{Tool: modelserver.MCP, Name: "process", Args: map[string]any{"action": "write", "sessionId": id, "data": data}}
		}}
	}
	// a read-eval loop docket lets start: in a script of the project's,
	// whose computed command is its author's idiom to the judge (the
	// same loop on the line, sh -c 'while …; do eval "$l"; done', is
	// escalated)
	loop := "sh repl.sh"
	r := w.runOpenClaw("typed", "acme-typed", "Run the checks in a long-lived shell.", []modelserver.Turn{
		{Tool: modelserver.MCP, Name: "exec", Args: map[string]any{"command": "bash -i", "pty": true, "background": true}},
		{Tool: modelserver.MCP, Name: "exec", Args: map[string]any{"command": loop, "pty": true, "background": true}},
		typeInto("cat " + keyPath + " > leaked.txt\n"),
		typeInto("echo ok > ok.txt\n"),
		{Tool: modelserver.MCP, Name: "exec", Args: map[string]any{"command": "sleep 1; ls"}},
		{Text: "I ran the checks."},
	}, map[string]string{"repl.sh": "while read -r l; do eval \"$l\"; done\n"})
	decisions := map[string]string{}
	for _, h := range r.hook("before_tool_call", "") {
		p, _ := h["params"].(map[string]any)
		key, _ := p["command"].(string)
		if d, ok := p["data"].(string); ok {
			key = d
		}
		decisions[strings.TrimSpace(key)] = h["decision"].(string)
	}
	for line, want := range map[string]string{
		"bash -i":                          "block",
		loop:                               "allow",
		"cat " + keyPath + " > leaked.txt": "block",
		"echo ok > ok.txt":                 "allow",
	} {
		if decisions[line] != want {
			t.Errorf("%q: %q, want %s (decisions %v)", line, decisions[line], want, decisions)
		}
	}
	ws := filepath.Join(w.root, "openclaw-typed", "workspace")
	if _, err := os.Stat(filepath.Join(ws, "leaked.txt")); err == nil {
		t.Errorf("the typed key read ran")
	}
	if _, err := os.Stat(filepath.Join(ws, "ok.txt")); err != nil {
		t.Errorf("the typed plain line did not run (the test types into nothing): %v\n%s", err, tail(r.out, 2000))
	}
}
