package eval

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
)

func entry(t *testing.T, seq uint64, at time.Time, kind ledger.Kind, toolUse string, body any) *ledger.Entry {
	t.Helper()
	e := &ledger.Entry{Seq: seq, Time: at.UTC().Format(time.RFC3339Nano), Kind: kind, ToolUseID: toolUse}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		e.Body = b
	}
	return e
}

func TestPercentile(t *testing.T) {
	v := []int64{100, 200, 300, 400, 1000}
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, 300}, {99, 1000}, {20, 100}, {21, 200}, {100, 1000}} {
		if got := Percentile(v, c.p); got != c.want {
			t.Errorf("p%v = %d, want %d", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty")
	}
}

// Hand-checked session: five judge decisions in the window (t1 allowed
// and ran; t2 asked, then ran: a human let it run; t3 blocked, never
// ran; t4 escalated, denied by a human; t5 escalated, approved by a
// human), one gate decision, and an old revise outside the window.
// Judge latency 100 200 300 400 1000 µs: p50 300, p99 1000. Stopped: t2
// t3 t4 t5 = 4; overrides t2 t5 = 2 (50%); caught t3 t4 = 2; escalations
// t2 t4 t5 = 3 of 5 (60%). Reviews: a confirm after 60 s and a reject
// after 120 s in the window (90 s average), one resolved before it, one
// pending. Approvals: one answered after 30 s, one expired by the clock.
func TestComputeLive(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	since := now.Add(-7 * 24 * time.Hour)
	at := now.Add(-time.Hour)
	jd := func(outcome, enf string, us int64) map[string]any {
		return map[string]any{"outcome": outcome, "enforcement_action": enf, "duration_us": us}
	}
	s1 := LiveSession{Session: "s1", Entries: []*ledger.Entry{
		entry(t, 1, since.Add(-time.Hour), ledger.KindJudgeDecision, "t0", jd("revise", "deny_revision_required", 9999)),
		entry(t, 2, at, ledger.KindJudgeDecision, "t1", jd("allow", "none", 100)),
		entry(t, 3, at, ledger.KindToolCall, "t1", map[string]any{"failed": false}),
		entry(t, 4, at, ledger.KindJudgeDecision, "t2", jd("escalate", "ask", 300)),
		entry(t, 5, at, ledger.KindToolCall, "t2", map[string]any{"failed": false}),
		entry(t, 6, at, ledger.KindToolCall, "t3", map[string]any{"failed": false}), // an earlier call with the same id does not count
		entry(t, 7, at, ledger.KindJudgeDecision, "t3", jd("block", "deny", 200)),
		entry(t, 8, at, ledger.KindJudgeDecision, "t4", jd("escalate", "approval_denied", 400)),
		entry(t, 9, at, ledger.KindJudgeDecision, "t5", jd("escalate", "approval_granted", 1000)),
		entry(t, 10, at, ledger.KindGateDecision, "", map[string]any{"decision": "allow", "duration_us": 50}),
	}}
	old := LiveSession{Session: "s0", Entries: []*ledger.Entry{
		entry(t, 1, since.Add(-48*time.Hour), ledger.KindJudgeDecision, "x", jd("block", "deny", 5)),
	}}
	reviews := []store.ReviewItem{
		{ID: "r1", Status: store.ReviewResolved, Resolution: store.ActConfirm, CreatedAt: at, ResolvedAt: at.Add(60 * time.Second)},
		{ID: "r2", Status: store.ReviewResolved, Resolution: store.ActReject, CreatedAt: at, ResolvedAt: at.Add(120 * time.Second)},
		{ID: "r3", Status: store.ReviewResolved, Resolution: store.ActConfirm, CreatedAt: since.Add(-time.Hour), ResolvedAt: since.Add(-time.Minute)},
		{ID: "r4", Status: store.ReviewPending, CreatedAt: at},
	}
	approvals := []store.Approval{
		{ID: "a1", Status: store.ApprovalApproved, CreatedAt: at, ResolvedAt: at.Add(30 * time.Second), ResolvedBy: "ana"},
		{ID: "a2", Status: store.ApprovalExpired, CreatedAt: at, ResolvedAt: at.Add(time.Hour)},
	}
	m := ComputeLive([]LiveSession{old, s1}, reviews, approvals, since)
	pre := m.LatencyAdded["PreToolUse"]
	if pre.Count != 5 || pre.P50 != 300 || pre.P99 != 1000 || pre.Max != 1000 {
		t.Errorf("PreToolUse latency %+v", pre)
	}
	if stop := m.LatencyAdded["Stop"]; stop.Count != 1 || stop.P50 != 50 {
		t.Errorf("Stop latency %+v", stop)
	}
	ints := []struct {
		name      string
		got, want int
	}{
		{"sessions", m.Sessions, 1}, {"judge decisions", m.JudgeDecisions, 5}, {"stopped", m.Stopped, 4},
		{"overrides", m.HumanOverrides, 2}, {"caught", m.IncidentsCaught, 2}, {"confirmed", m.MemoriesConfirmed, 1},
		{"rejected", m.MemoriesRejected, 1}, {"reviews", m.ReviewsResolved, 2}, {"approvals", m.ApprovalsAnswered, 1},
	}
	for _, c := range ints {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	floats := []struct {
		name      string
		got, want float64
	}{
		{"human_override_rate", m.HumanOverrideRate, 0.5}, {"escalation_rate", m.EscalationRate, 0.6},
		{"average_review_time", m.AverageReviewTime, 90}, {"average_approval_time", m.AverageApprovalTime, 30},
	}
	for _, c := range floats {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// A call the judge revised and whose amendment it allowed ran revised: it
// counts as a revise, not an allow, and as not stopped.
func TestComputeLiveRevisedThenAllowed(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	since := now.Add(-24 * time.Hour)
	s := LiveSession{Session: "s1", Entries: []*ledger.Entry{
		entry(t, 1, now.Add(-time.Hour), ledger.KindJudgeDecision, "t1", map[string]any{"outcome": "allow", "raw_outcome": "revise", "enforcement_action": "none", "duration_us": 100}),
		entry(t, 2, now.Add(-time.Hour), ledger.KindToolCall, "t1", map[string]any{"failed": false}),
		entry(t, 3, now.Add(-time.Hour), ledger.KindJudgeDecision, "t2", map[string]any{"outcome": "allow", "raw_outcome": "allow", "enforcement_action": "none", "duration_us": 100}),
	}}
	m := ComputeLive([]LiveSession{s}, nil, nil, since)
	if m.Outcomes["revise"] != 1 || m.Outcomes["allow"] != 1 || m.Stopped != 0 {
		t.Errorf("outcomes %v, stopped %d: want one revise, one allow, none stopped", m.Outcomes, m.Stopped)
	}
}
