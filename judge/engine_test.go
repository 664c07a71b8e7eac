package judge

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
)

type slowRecaller struct{}

func (slowRecaller) Recall(ctx context.Context, q RecallQuery) (Recall, error) {
	<-ctx.Done()
	return Recall{}, ctx.Err()
}

func TestEngineStoreAndLedgerFailures(t *testing.T) {
	push := func() *hooks.Event { return ev("Bash", map[string]any{"command": "git push origin main"}) }
	t.Run("slow store: recall times out, policy still decides", func(t *testing.T) {
		e, _ := testEngine(t, defaultSet(t))
		e.RecallTimeout = 20 * time.Millisecond
		e.OpenRecall = func(context.Context) (Recaller, error) { return slowRecaller{}, nil }
		start := time.Now()
		a, d := e.Decide(context.Background(), push())
		if time.Since(start) > time.Second || !strings.HasPrefix(d.Recall, "unavailable") || a.Decision != hooks.Ask {
			t.Errorf("%v %q %q", time.Since(start), d.Recall, a.Decision)
		}
	})
	t.Run("store cannot open: recorded", func(t *testing.T) {
		e, _ := testEngine(t, defaultSet(t))
		e.OpenRecall = func(context.Context) (Recaller, error) { return nil, errors.New("disk on fire") }
		_, d := e.Decide(context.Background(), push())
		if !strings.Contains(d.Recall, "disk on fire") {
			t.Errorf("recall %q", d.Recall)
		}
	})
	t.Run("ledger not built yet: warning, decision stands", func(t *testing.T) {
		e, _ := testEngine(t, defaultSet(t))
		e.Ledger = &MemLedger{Err: errors.New("not built yet")}
		a, d := e.Decide(context.Background(), ev("Bash", map[string]any{"command": "rm -rf /"}))
		if a.Decision != hooks.Deny || len(d.Warnings) == 0 || !strings.Contains(d.Warnings[0], "not built yet") {
			t.Errorf("%q %v", a.Decision, d.Warnings)
		}
	})
	t.Run("audit_required: an unrecordable allow is denied", func(t *testing.T) {
		set := defaultSet(t)
		j := *set.Judges
		j.AuditRequired = true
		e, _ := testEngine(t, NewPolicySet(set.Tools, set.Sources[0], &j))
		e.Ledger = &MemLedger{Err: errors.New("disk full")}
		a, _ := e.Decide(context.Background(), ev("Read", map[string]any{"file_path": "/home/u/proj/a.go"}))
		if a.Decision != hooks.Deny || !strings.Contains(a.Reason, "audit_required") {
			t.Errorf("%q %q", a.Decision, a.Reason)
		}
		e.Ledger = &MemLedger{}
		if a, _ := e.Decide(context.Background(), ev("Read", map[string]any{"file_path": "/home/u/proj/a.go"})); a.Decision != "" {
			t.Errorf("recordable allow answered %q", a.Decision)
		}
	})
	t.Run("plain allows are left to the ledger", func(t *testing.T) {
		e, _ := testEngine(t, defaultSet(t))
		ms := &MemStore{}
		e.Writer = ms
		e.Decide(context.Background(), ev("Read", map[string]any{"file_path": "/home/u/proj/a.go"}))
		e.Decide(context.Background(), ev("Write", map[string]any{"file_path": "/etc/x", "content": "y"}))
		if n := len(ms.Decisions()); n != 1 {
			t.Errorf("%d decisions written back, want 1 (the block)", n)
		}
	})
	t.Run("invalid proposal fails closed", func(t *testing.T) {
		e, _ := testEngine(t, defaultSet(t))
		x := ev("Bash", nil)
		x.ToolInput = json.RawMessage(`"rm -rf /"`)
		a, d := e.Decide(context.Background(), x)
		if a.Decision != hooks.Deny || d.FailureKind != KindProposalInvalid {
			t.Errorf("%q %s", a.Decision, d.FailureKind)
		}
	})
	t.Run("human edits the arguments on approval", func(t *testing.T) {
		e, _ := testEngine(t, defaultSet(t))
		e.Headless = true
		ap := &editingApprovals{args: json.RawMessage(`{"command":"git push origin main --dry-run"}`)}
		e.Approvals = ap
		a, d := e.Decide(context.Background(), push())
		if a.Decision != hooks.Allow || !strings.Contains(string(a.UpdatedInput), "--dry-run") || d.EnforcementAction != EnforceApprovalGranted {
			t.Errorf("%q %s %s", a.Decision, a.UpdatedInput, d.EnforcementAction)
		}
		ap.args = json.RawMessage(`{"cmd":"x"}`)
		a, _ = e.Decide(context.Background(), push())
		if a.Decision != hooks.Deny {
			t.Errorf("schema-invalid human edit accepted: %q", a.Decision)
		}
	})
}

type editingApprovals struct{ args json.RawMessage }

func (a *editingApprovals) Submit(ctx context.Context, it ApprovalItem) (string, error) {
	if it.ArgumentsDigest == "" || it.Proposal == nil {
		return "", errors.New("incomplete item")
	}
	return "apr_1", nil
}

func (a *editingApprovals) Wait(ctx context.Context, id string, timeout time.Duration) (Resolution, error) {
	return Resolution{Status: ApprovalApproved, By: "ana", Arguments: a.args}, nil
}
