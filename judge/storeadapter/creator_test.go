package storeadapter

import (
	"context"
	"fmt"
	"testing"

	"github.com/docket/docket/judge"
	"github.com/docket/docket/store/memstore"
)

// The hooks' approval ids stay what they were (session and action only);
// an adapter with a Creator queues under ids of its own and records its
// creator on what it writes.
func TestCreator(t *testing.T) {
	ctx := context.Background()
	ms := &memstore.Store{}
	if got, want := ApprovalID("", "s1", "toolu_1"), "apr_"+shortHash("s1\x00toolu_1"); got != want {
		t.Fatalf("hook approval id %s, want %s", got, want)
	}
	ids := map[string]bool{}
	for _, c := range []string{"", "tok_a", "tok_b"} {
		ids[ApprovalID(c, "s1", "toolu_1")] = true
	}
	if len(ids) != 3 {
		t.Fatalf("approval ids collide across creators: %v", ids)
	}
	item := judge.ApprovalItem{SessionID: "s1", ActionID: "toolu_1", ToolName: "Bash", Summary: "deploy", Reason: "prod"}
	for i, c := range []string{"", "tok_a", "tok_b"} {
		a := New(ms)
		a.Creator = c
		id, err := a.Submit(ctx, item)
		if err != nil {
			t.Fatal(err)
		}
		if id != ApprovalID(c, "s1", "toolu_1") {
			t.Errorf("creator %q: approval %s, want %s", c, id, ApprovalID(c, "s1", "toolu_1"))
		}
		if ap, err := ms.GetApproval(ctx, id); err != nil || ap.Creator != c {
			t.Errorf("creator %q: stored approval %+v %v", c, ap, err)
		}
		did := fmt.Sprintf("dec_%024d", i)
		if err := a.WriteDecision(ctx, judge.DecisionRecord{SessionID: "s1", ActionID: "toolu_1", DecisionID: did, IdempotencyKey: "k-" + c,
			Decision: judge.Escalate, ToolName: "Bash", ReasoningSummary: "prod", JudgeID: "policy"}); err != nil {
			t.Fatal(err)
		}
		if d, err := ms.GetDecision(ctx, did); err != nil || d.Creator != c {
			t.Errorf("creator %q: stored decision creator %q %v", c, d.Creator, err)
		}
	}
}
