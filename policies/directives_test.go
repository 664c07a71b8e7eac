package policies

import (
	"strings"
	"testing"
)

func TestDefaultDirectives(t *testing.T) {
	d := DefaultDirectives()
	if len(d.Directives) != 3 {
		t.Fatalf("want 3 default directives, got %d", len(d.Directives))
	}
	for i := 1; i < len(d.Directives); i++ {
		a, b := d.Directives[i-1], d.Directives[i]
		if a.Priority < b.Priority || a.Priority == b.Priority && a.ID > b.ID {
			t.Errorf("not in priority order: %s before %s", a.ID, b.ID)
		}
	}
	for _, tool := range []string{"WebFetch", "mcp__slack__slack_post_message", "mcp__linear__create_issue", "mcp__github__add_issue_comment", "MCP__Slack__post"} {
		if !d.Outbound(tool) {
			t.Errorf("%s should be outbound", tool)
		}
	}
	for _, tool := range []string{"Read", "Bash", "Edit", "mcp__filesystem__read_file"} {
		if d.Outbound(tool) {
			t.Errorf("%s should not be outbound", tool)
		}
	}
}

func TestParseDirectivesRejects(t *testing.T) {
	base := string(defaultDirectivesBytes(t))
	tests := []struct {
		name, from, to, want string
	}{
		{"remove privacy", "id: PRIVACY_NO_PII", "id: SOMETHING_ELSE", "PRIVACY_NO_PII is required"},
		{"weaken safety", "check: safety\n    action: escalate", "check: safety\n    action: revise", "cannot be revised"},
		{"weaken secrets", "check: outbound_secrets\n    action: revise", "check: outbound_secrets\n    action: allow", "must be revise, escalate or block"},
		{"change check", "check: outbound_secrets", "check: outbound_pii", "check must stay"},
		{"unknown kind", "kinds: [email,", "kinds: [dna,", "unknown kind"},
		{"unknown field", "priority: 100\n    check: safety", "priority: 100\n    enabled: false\n    check: safety", "malformed yaml"},
		{"priority range", "priority: 100\n    check: safety", "priority: 1000\n    check: safety", "not in 1..100"},
		{"schema", "docket.directives.v1", "docket.directives.v0", "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.from) {
				t.Fatalf("default has no %q", tt.from)
			}
			_, err := ParseDirectives(Source{Name: DirectivesFile, Origin: "test", Data: []byte(strings.Replace(base, tt.from, tt.to, 1))})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseDirectivesStricterAndExtra(t *testing.T) {
	src := strings.Replace(string(defaultDirectivesBytes(t)), "check: outbound_secrets\n    action: revise", "check: outbound_secrets\n    action: block", 1) +
		"" // a stricter action is accepted
	src = strings.Replace(src, "directives:\n", "directives:\n  - id: NO_CUSTOMER_NAMES\n    priority: 90\n    check: outbound_pii\n    action: block\n    kinds: [email]\n", 1)
	d, err := ParseDirectives(Source{Name: DirectivesFile, Origin: "test", Data: []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Directives[len(d.Directives)-1].ID != "NO_CUSTOMER_NAMES" {
		t.Errorf("priority 90 should sort last: %+v", d.Directives)
	}
}

func defaultDirectivesBytes(t *testing.T) []byte {
	t.Helper()
	b, err := Default(DirectivesFile)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
