package storeadapter

import (
	"context"
	"fmt"
	"testing"

	"github.com/docket/docket/judge"
	"github.com/docket/docket/store/memstore"
)

// A long-lived adapter (docket serve) forgets each action's recall id
// once the action's decision is written, and the decision names it.
func TestRecallIDsForgottenOnWrite(t *testing.T) {
	ms := &memstore.Store{}
	a := New(ms)
	ctx := context.Background()
	for i := 0; i < 50; i++ {
		act := fmt.Sprintf("toolu_%d", i)
		if _, err := a.Recall(ctx, judge.RecallQuery{SessionID: "s1", ActionID: act, ToolName: "Bash", Summary: "git push"}); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("sha256:%064d", i)
		if err := a.WriteDecision(ctx, judge.DecisionRecord{SessionID: "s1", ActionID: act, DecisionID: fmt.Sprintf("dec_%024d", i), IdempotencyKey: key,
			Decision: judge.Allow, ToolName: "Bash", ReasoningSummary: "routine", JudgeID: "policy"}); err != nil {
			t.Fatal(err)
		}
		d, err := ms.GetDecision(ctx, fmt.Sprintf("dec_%024d", i))
		if err != nil || d.RecallID == "" {
			t.Fatalf("decision %d: recall id %q, %v", i, d.RecallID, err)
		}
	}
	if n := len(a.recallIDs); n != 0 {
		t.Errorf("%d recall ids kept after their decisions were written", n)
	}
}
