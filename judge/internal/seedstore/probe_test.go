package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/store/sqlstore"
)

func TestStoreCostProbe(t *testing.T) {
	dir := os.Getenv("PROBE_HOME")
	if dir == "" {
		t.Skip()
	}
	h, _ := home.At(dir)
	ctx := context.Background()
	t0 := time.Now()
	s, err := sqlstore.Open(ctx, h, "")
	if err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	ad := storeadapter.New(s)
	r, err := ad.Recall(ctx, judge.RecallQuery{WorkspaceID: os.Getenv("PROBE_WS"), ProjectID: "proj", SessionID: "s", ActionID: "a1", Summary: "Bash git push origin main", Class: "high_risk", ToolName: "Bash", MaxItems: 5})
	t2 := time.Now()
	err2 := ad.WriteDecision(ctx, judge.DecisionRecord{DecisionID: "dec_x" + time.Now().Format("150405.000000"), IdempotencyKey: time.Now().String(), WorkspaceID: os.Getenv("PROBE_WS"), SessionID: "s", ActionID: "a1", ToolName: "Bash", RiskClass: "high_risk", Decision: "escalate", ReasoningSummary: "x", JudgeID: "policy"})
	t3 := time.Now()
	s.Close()
	t.Logf("open %v recall %v (%d mem, %v) write %v (%v) close %v", t1.Sub(t0), t2.Sub(t1), len(r.Memories), err, t3.Sub(t2), err2, time.Since(t3))
}
