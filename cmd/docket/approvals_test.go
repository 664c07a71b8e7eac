package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/server"
	"github.com/docket/docket/store"
)

func TestApprovalsCommand(t *testing.T) {
	s := storeEnv(t)
	ctx := context.Background()
	for _, a := range []store.Approval{
		{ID: "apr_push", Tool: "Bash", Summary: "git push --force origin main", Reason: "high risk", RiskClass: "high_risk"},
		{ID: "apr_rm", Tool: "Bash", Summary: "rm -rf build"},
		{ID: "apr_old", Tool: "Write", Summary: "edit prod.yaml", CreatedAt: time.Now().Add(-time.Hour)},
	} {
		if _, err := s.SubmitApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	out, _, code := docket(t, "approvals")
	if code != 0 || !strings.Contains(out, "apr_push") || !strings.Contains(out, "apr_rm") || strings.Contains(out, "apr_old") {
		t.Fatalf("approvals list (exit %d):\n%s", code, out)
	}
	tests := []struct {
		args []string
		code int
		out  string
		errs string
	}{
		{[]string{"approvals", "show", "apr_push"}, 0, "the call does not run", ""},
		{[]string{"approvals", "modify", "apr_push"}, 2, "", "--args"},
		{[]string{"approvals", "modify", "apr_push", "--args", "[1]"}, 2, "", "JSON object"},
		{[]string{"approvals", "approve"}, 2, "", "exactly one ID"},
		{[]string{"approvals", "bless", "apr_push"}, 2, "", "unknown approvals command"},
		{[]string{"approvals", "list", "--status", "open"}, 2, "", "unknown --status"},
		{[]string{"approvals", "escalate", "apr_push", "--owner", "sec"}, 0, "escalated", ""},
		{[]string{"approvals", "modify", "apr_push", "--args", `{"command":"git push origin main"}`}, 0, "modified", ""},
		{[]string{"approvals", "approve", "apr_push"}, 1, "", "already modified"},
		{[]string{"approvals", "reject", "apr_rm", "--note", "not now"}, 0, "rejected", ""},
		{[]string{"approvals", "approve", "apr_old"}, 1, "", "expired"},
		{[]string{"approvals", "approve", "apr_nope"}, 1, "", "not found"},
	}
	for _, tt := range tests {
		out, errs, code := docket(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errs, tt.errs) {
			t.Errorf("docket %v: exit %d out %q err %q; want exit %d, %q, %q", tt.args, code, out, errs, tt.code, tt.out, tt.errs)
		}
	}
	a, err := s.GetApproval(ctx, "apr_push")
	if err != nil || a.Status != store.ApprovalModified || a.ResolvedBy != "ana" || !a.Allows() || string(a.Arguments) != `{"command":"git push origin main"}` {
		t.Fatalf("apr_push after modify: %+v %v", a, err)
	}
	out, _, _ = docket(t, "approvals", "list", "--status", "all", "--json")
	var all []store.Approval
	if json.Unmarshal([]byte(out), &all) != nil || len(all) != 3 {
		t.Fatalf("list --status all --json: %s", out)
	}
	out, _, _ = docket(t, "approvals", "show", "apr_old", "--json")
	var old store.Approval
	if json.Unmarshal([]byte(out), &old) != nil || old.Status != store.ApprovalExpired {
		t.Fatalf("expired approval: %s", out)
	}
}

// An approval resolved or a memory reviewed at the terminal reaches the
// event stream docket serve publishes, like one taken through the API.
func TestCLIActionsReachEventStream(t *testing.T) {
	s := storeEnv(t)
	ctx := context.Background()
	if _, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_push", Session: "s1", Tool: "Bash", Summary: "git push origin main"}); err != nil {
		t.Fatal(err)
	}
	if _, _, code := docket(t, "approvals", "approve", "apr_push"); code != 0 {
		t.Fatalf("approve: exit %d", code)
	}
	if _, _, code := docket(t, "approvals", "approve", "apr_nope"); code != 1 {
		t.Fatalf("approve of an unknown id: exit %d", code)
	}
	ev := cliEvents(ctx, s, io.Discard)
	if ev == nil {
		t.Fatal("no event log in the store's database")
	}
	evs, err := ev.After(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Type != server.EventApprovalResolved || !strings.Contains(string(evs[0].Data), `"by":"ana"`) || !strings.Contains(string(evs[0].Data), `"status":"approved"`) {
		t.Fatalf("events after a CLI approval: %+v", evs)
	}
}
