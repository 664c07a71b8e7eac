package judge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

// capturedEvent decodes a payload the real Codex CLI or Gemini CLI sent
// (testdata/hooks/captured), with fields replaced by set.
func capturedEvent(t *testing.T, file string, set map[string]any) *hooks.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "hooks", "captured", file))
	if err != nil {
		t.Fatal(err)
	}
	if set != nil {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for k, v := range set {
			m[k] = v
		}
		b, _ = json.Marshal(m)
	}
	e, err := hooks.Decode(b, "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// capturedEngine judges with the state root the captured runs used.
func capturedEngine(t *testing.T, root string) *Engine {
	h, _ := home.At(root)
	e := &Engine{Home: h, Protector: &Protector{Home: h, UserHome: "/home/dev"}}
	e.SetPolicy(defaultSet(t))
	return e
}

// Gemini's run_shell_command and Codex's tools go through the Bash
// classifier and the built-in protections: in the captured runs a key read
// and a force push were allowed, and apply_patch was an unknown external
// call whose paths nobody read.
func TestCapturedCallsJudgedByKind(t *testing.T) {
	gem := capturedEngine(t, "/home/dev/runs/g4/dh")
	cdx := capturedEngine(t, "/home/dev/runs/c4/dh")
	patch := func(body string) map[string]any {
		return map[string]any{"tool_input": map[string]any{"command": "*** Begin Patch\n" + body + "*** End Patch\n"}}
	}
	for _, tc := range []struct {
		name     string
		e        *Engine
		file     string
		set      map[string]any
		decision string // the answer's decision ("" allows)
		rule     string // a rule id the decision must carry, "" for none
		class    policies.RiskClass
	}{
		{"gemini key read via $DOCKET_HOME", gem, "gemini-BeforeTool-run_shell_command-denied.json", nil, hooks.Deny, "builtin:", ""},
		{"gemini relative key read", gem, "gemini-BeforeTool-relative-key-read-allowed.json", nil, hooks.Deny, "builtin:", ""},
		{"gemini go test", gem, "gemini-BeforeTool-run_shell_command.json", nil, "", "", ""},
		{"gemini force push", gem, "gemini-BeforeTool-run_shell_command.json",
			map[string]any{"tool_input": map[string]any{"command": "git push --force origin main", "description": "run"}}, hooks.Ask, "force-push-with-lease", policies.HighRisk},
		{"gemini write_file", gem, "gemini-BeforeTool-write_file.json", nil, "", "", policies.ReversibleWrite},
		{"gemini write_file into the state root", gem, "gemini-BeforeTool-write_file.json",
			map[string]any{"tool_input": map[string]any{"file_path": "../runs/g4/dh/ledger/x.jsonl", "content": "{}"}}, hooks.Deny, "builtin:", ""},
		{"gemini replace", gem, "gemini-BeforeTool-replace.json", nil, "", "", policies.ReversibleWrite},
		{"gemini glob over the keys' parent", gem, "gemini-BeforeTool-write_file.json",
			map[string]any{"tool_name": "glob", "tool_input": map[string]any{"pattern": "**/*.key", "path": "/home/dev/runs/g4"}}, hooks.Deny, "builtin:", ""},
		{"gemini glob in the project", gem, "gemini-BeforeTool-write_file.json",
			map[string]any{"tool_name": "glob", "tool_input": map[string]any{"pattern": "**/*.go", "path": "/home/dev/gem-proj"}}, "", "", policies.ReadOnly},
		{"gemini read_many_files with a key", gem, "gemini-BeforeTool-write_file.json",
			map[string]any{"tool_name": "read_many_files", "tool_input": map[string]any{"paths": []string{"p.go", "../runs/g4/dh/keys/hmac.key"}}}, hooks.Deny, "builtin:", ""},
		{"codex key read", cdx, "codex-PreToolUse-Bash-denied.json", nil, hooks.Deny, "builtin:", ""},
		{"codex apply_patch", cdx, "codex-PreToolUse-apply_patch.json", nil, "", "", policies.ReversibleWrite},
		{"codex patch adds into the state root", cdx, "codex-PreToolUse-apply_patch.json",
			patch("*** Update File: p.go\n@@\n-a\n+b\n*** Add File: ../runs/c4/dh/ledger/forged.jsonl\n+{}\n"), hooks.Deny, "builtin:", ""},
		{"codex patch moves onto a key", cdx, "codex-PreToolUse-apply_patch.json",
			patch("*** Update File: p.go\n*** Move to: /home/dev/runs/c4/dh/keys/hmac.key\n"), hooks.Deny, "builtin:", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := capturedEvent(t, tc.file, tc.set)
			a, d := tc.e.Decide(context.Background(), ev)
			if a.Decision != tc.decision {
				t.Errorf("decision %q, want %q (%v %q)", a.Decision, tc.decision, d.RuleIDs, d.Reason)
			}
			if tc.rule != "" && !strings.Contains(strings.Join(d.RuleIDs, " "), tc.rule) {
				t.Errorf("rules %v, want %s", d.RuleIDs, tc.rule)
			}
			if d.Proposal == nil {
				t.Fatal("no proposal")
			}
			if tc.class != "" && d.Proposal.Action.RiskClass != tc.class {
				t.Errorf("class %s, want %s (%v)", d.Proposal.Action.RiskClass, tc.class, d.Proposal.Context.ClassReasons)
			}
			if ev.Kind() == hooks.KindShell {
				if d.Proposal.Context.Shell == nil {
					t.Error("shell call not classified by the shell classifier")
				}
				// judged exactly as Claude Code's Bash with the same command
				cmd, _ := ev.ShellCommand()
				bash := *ev
				bash.Runtime, bash.ToolName, bash.ToolKind = hooks.Claude, "Bash", ""
				bash.ToolInput, _ = json.Marshal(map[string]string{"command": cmd})
				ba, bd := tc.e.Decide(context.Background(), &bash)
				if ba.Decision != a.Decision || bd.Proposal.Action.RiskClass != d.Proposal.Action.RiskClass || strings.Join(bd.RuleIDs, " ") != strings.Join(d.RuleIDs, " ") {
					t.Errorf("%s: %q %s %v; Bash: %q %s %v", ev.ToolName, a.Decision, d.Proposal.Action.RiskClass, d.RuleIDs,
						ba.Decision, bd.Proposal.Action.RiskClass, bd.RuleIDs)
				}
			}
			if a.Decision != "" {
				// what Gemini CLI is told: it has no "ask", so an escalation is a deny
				out, _, err := hooks.Encode(ev.Runtime, a)
				if err != nil || (a.Decision != hooks.Allow && !strings.Contains(string(out), `"deny"`)) {
					t.Errorf("encoded %s %v", out, err)
				}
			}
		})
	}
}

func TestClassifyAliasesByKind(t *testing.T) {
	tools, _, err := policies.LoadTools(home.Home{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, input, alias, kind string
		target                   string
		mcpServer, mcpTool       string // Gemini CLI's mcp_context
	}{
		{"run_shell_command", `{"command":"ls"}`, "Bash", "shell", "ls", "", ""},
		{"write_file", `{"file_path":"/w/a","content":"x"}`, "Write", "file_write", "/w/a", "", ""},
		{"replace", `{"file_path":"/w/a","old_string":"x","new_string":"y"}`, "Edit", "file_edit", "/w/a", "", ""},
		{"apply_patch", `{"command":"*** Begin Patch\n*** Add File: a\n*** Update File: b\n*** End Patch\n"}`, "Edit", "patch", "a, b", "", ""},
		{"read_file", `{"file_path":"/w/a"}`, "Read", "read", "/w/a", "", ""},
		{"Bash", `{"command":"ls"}`, "", "shell", "ls", "", ""},       // in the registry itself
		{"Write", `{"file_path":"/w/a"}`, "", "file", "/w/a", "", ""}, // registry kind kept
		{"mcp__x__y", `{}`, "", "api", "", "", ""},
		// Gemini CLI's name for an MCP tool: known by its mcp__ name
		{"mcp_github_merge_pull_request", `{"pull_number":3}`, "mcp__github__merge_pull_request", "api", "", "github", "merge_pull_request"},
		{"mcp_my_srv_do_it", `{}`, "mcp__my_srv__do_it", "api", "", "my_srv", "do_it"},
	} {
		ev := &hooks.Event{Runtime: hooks.Gemini, Name: hooks.PreToolUse, SessionID: "s", ToolName: tc.tool, ToolInput: json.RawMessage(tc.input),
			MCPServer: tc.mcpServer, MCPTool: tc.mcpTool}
		if tc.mcpServer != "" {
			ev.ToolKind = hooks.KindMCP
		}
		p, err := Assemble(ev, tools)
		if err != nil {
			t.Fatal(err)
		}
		target := ""
		if p.Action.Target != nil {
			target = *p.Action.Target
		}
		if p.Context.Alias != tc.alias || p.Tool.Kind != tc.kind || target != tc.target || p.Tool.Name != tc.tool {
			t.Errorf("%s: alias %q kind %q target %q name %q", tc.tool, p.Context.Alias, p.Tool.Kind, target, p.Tool.Name)
		}
	}
}
