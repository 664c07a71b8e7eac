package judge

import (
	"context"
	"testing"

	"github.com/docket/docket/internal/home"
)

// The installed docket is looked up only when a call runs a docket binary
// by path; the lookup's answer still decides which one is trusted.
func TestInstalledDocketFoundOnUse(t *testing.T) {
	h, _ := home.At("/home/u/.local/state/docket")
	tests := []struct {
		name      string
		command   string
		wantFinds bool
		wantRule  string // "" means no built-in protection fired
	}{
		{"routine", "go test ./...", false, ""},
		{"bare docket", "docket verify --session s1", false, ""},
		{"installed docket", "/opt/x/bin/docket verify --session s1", true, ""},
		{"another docket", "/tmp/bin/docket review confirm rev_1 --as instruction", true, ProtectFakeDocket},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			finds := 0
			e := &Engine{Home: h, Protector: &Protector{Home: h, UserHome: "/home/u", XDGState: "/home/u/.local/state",
				findDocket: func() string { finds++; return "/opt/x/bin/docket" }}}
			e.SetPolicy(defaultSet(t))
			_, d := e.Decide(context.Background(), ev("Bash", map[string]any{"command": tc.command}))
			if (finds > 0) != tc.wantFinds {
				t.Errorf("looked up the installed docket %d times, want lookups: %v", finds, tc.wantFinds)
			}
			if r := builtinRule(d); r != tc.wantRule {
				t.Errorf("rule %q, want %q (%s)", r, tc.wantRule, d.Reason)
			}
		})
	}
}
