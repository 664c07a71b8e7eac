package judge

import (
	"context"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/policies"
)

// A runtime's shell tool evaluated under its own name (run_shell, kind
// shell) gets the shell classifier and every protection Bash gets.
func TestEvaluateShellKindTool(t *testing.T) {
	tests := []struct {
		name, tool, kind string
		ctxKind          hooks.ToolKind
		input            string
		want             Outcome
	}{
		{"kind shell, no context kind", "run_shell", "shell", "", `{"command":"cat ~/.ssh/id_rsa"}`, Block},
		{"kind shell, context kind shell", "run_shell", "shell", hooks.KindShell, `{"command":"cat ~/.ssh/id_rsa"}`, Block},
		{"kind shell, aws credentials", "terminal", "shell", "", `{"command":"cat ~/.aws/credentials"}`, Block},
		{"kind shell, rm -rf /", "run_shell", "shell", "", `{"command":"rm -rf /"}`, Block},
		{"kind shell, harmless", "run_shell", "shell", "", `{"command":"ls"}`, Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _, _ := evalEngine(t)
			p, in := runtimeProposal(tt.tool, policies.ReadOnly, tt.input)
			p.Tool.Kind = tt.kind
			p.Context.ToolKind = tt.ctxKind
			ev := e.Evaluate(context.Background(), p, in, "flow-1")
			if ev.Outcome != tt.want {
				t.Fatalf("outcome %s, want %s: %s (class %s, rules %v)", ev.Outcome, tt.want, ev.Reason, ev.RiskClass, ev.RuleIDs)
			}
		})
	}
}
