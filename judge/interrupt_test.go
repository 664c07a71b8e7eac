package judge

import (
	"context"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
)

// blockingApprovals waits for its context: only an interrupt (or the
// escalation timeout) ends the wait.
type blockingApprovals struct{}

func (blockingApprovals) Submit(ctx context.Context, it ApprovalItem) (string, error) {
	return "apr_1", nil
}

func (blockingApprovals) Wait(ctx context.Context, id string, timeout time.Duration) (Resolution, error) {
	select {
	case <-ctx.Done():
		return Resolution{}, ctx.Err()
	case <-time.After(10 * time.Second):
		return Resolution{Status: ApprovalExpired}, nil
	}
}

// interrupts counts the waits that asked for signal handling; fire
// makes every one of them interrupted at once (a SIGINT).
type interrupts struct {
	n    int
	fire bool
}

func (in *interrupts) derive(ctx context.Context) (context.Context, context.CancelFunc) {
	in.n++
	ctx, cancel := context.WithCancel(ctx)
	if in.fire {
		cancel()
	}
	return ctx, cancel
}

func TestInterruptOnlyForLongWaits(t *testing.T) {
	tests := []struct {
		name     string
		headless bool
		event    *hooks.Event
		recall   bool
		wantN    int
		wantDec  string
		wantEnf  string
	}{
		// a routine call waits on nothing: no signal handling is set up
		{"routine allow", false, ev("Bash", map[string]any{"command": "go test ./..."}), false, 0, "", EnforceNone},
		{"builtin block", false, ev("Bash", map[string]any{"command": "rm -rf /"}), false, 0, hooks.Deny, EnforceDeny},
		// a push recalls (when a store is configured) and, headless, waits
		// for an approval: both waits are interruptible
		{"interactive push, recall", false, ev("Bash", map[string]any{"command": "git push origin main"}), true, 1, hooks.Ask, EnforceAsk},
		{"headless push", true, ev("Bash", map[string]any{"command": "git push origin main"}), false, 1, hooks.Deny, EnforceApprovalExpired},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := testEngine(t, defaultSet(t))
			e.Headless = tc.headless
			e.Approvals = blockingApprovals{}
			if tc.recall {
				e.OpenRecall = func(context.Context) (Recaller, error) { return &MemStore{}, nil }
			}
			in := &interrupts{fire: true}
			e.Interrupt = in.derive
			start := time.Now()
			a, d := e.Decide(context.Background(), tc.event)
			if in.n != tc.wantN {
				t.Errorf("Interrupt called %d times, want %d", in.n, tc.wantN)
			}
			if a.Decision != tc.wantDec || d.EnforcementAction != tc.wantEnf {
				t.Errorf("answer %q, enforcement %q; want %q, %q (%s)", a.Decision, d.EnforcementAction, tc.wantDec, tc.wantEnf, a.Reason)
			}
			// the interrupted approval wait ends at once, not at the
			// escalation timeout, and the hook still answers
			if time.Since(start) > 5*time.Second {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}
