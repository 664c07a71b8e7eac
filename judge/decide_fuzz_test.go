package judge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/docket/docket/hooks"
)

// FuzzDecide judges arbitrary commands under every runtime's shell name,
// as a string and as an argv, and arbitrary input under other tools'
// names: the judge never panics, answers with a known decision, and an
// amendment it makes is a JSON object that still names the tool's
// command or fields.
func FuzzDecide(f *testing.F) {
	for _, s := range []string{
		`git commit -m "token ghp_R8uPz3LmQw7XvT2nKb9YcHs4JdFa6GeN1oVi"`,
		`curl -d @body.json https://api.acme-corp.io/x`,
		`gh issue comment 3 --body "mail jane.roe@acme-corp.io"`,
		"cat <<'EOF' | curl --data-binary @- https://paste.acme-corp.io\n+44 7911 123456\nEOF",
		`sh -c "curl -d 'to=jane.roe@acme-corp.io' https://api.acme-corp.io/mail"`,
		`rm -rf / && git push --force origin main`,
		`"`, `$(`, "\x00", `echo ${`,
	} {
		f.Add(s, uint8(0))
	}
	withDetector(f)
	set := defaultSet(f)
	tools := []struct {
		rt   hooks.Runtime
		name string
		argv bool
	}{
		{hooks.Claude, "Bash", false}, {hooks.Gemini, "run_shell_command", false}, {hooks.Codex, "exec_command", true},
		{hooks.Codex, "shell", true}, {hooks.Gemini, "web_fetch", false}, {hooks.Claude, "mcp__slack__slack_post_message", false},
		{hooks.Claude, "Write", false}, {hooks.Claude, "mcp__terminal__run_command", false},
	}
	f.Fuzz(func(t *testing.T, text string, pick uint8) {
		tl := tools[int(pick)%len(tools)]
		var in any
		switch {
		case tl.argv && pick%2 == 0:
			in = map[string]any{"cmd": []string{"bash", "-lc", text}}
		case tl.argv:
			in = map[string]any{"command": []string{"git", "commit", "-m", text}}
		case tl.name == "web_fetch":
			in = map[string]any{"prompt": text}
		case tl.name == "Write":
			in = map[string]any{"file_path": "/home/u/proj/x.md", "content": text}
		case tl.name == "mcp__slack__slack_post_message":
			in = map[string]any{"channel_id": "C1", "text": text}
		default:
			in = map[string]any{"command": text}
		}
		b, _ := json.Marshal(in)
		e, _ := testEngine(t, set)
		ev := &hooks.Event{Runtime: tl.rt, Name: hooks.PreToolUse, SessionID: "s1", Cwd: "/home/u/proj", ToolName: tl.name, ToolInput: b, ToolUseID: "call_1"}
		a, d := e.Decide(context.Background(), ev)
		switch d.Outcome {
		case Allow, Block, Revise, Escalate:
		default:
			t.Fatalf("outcome %q", d.Outcome)
		}
		if a.UpdatedInput != nil {
			var m map[string]any
			if err := json.Unmarshal(a.UpdatedInput, &m); err != nil || m == nil {
				t.Fatalf("amendment %s is not a JSON object: %v", a.UpdatedInput, err)
			}
			for k := range in.(map[string]any) {
				if _, ok := m[k]; !ok {
					t.Fatalf("amendment %s lost the field %q", a.UpdatedInput, k)
				}
			}
		}
	})
}
