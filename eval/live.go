package eval

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
)

// LiveDefinitions say what `docket report metrics` reports.
var LiveDefinitions = []Metric{
	{"latency_added", "latency added per hook", "per hook, p50 / p99 / max of the time the hook spent deciding, from the duration_us its ledger entries carry: PreToolUse from judge_decision entries (judging, store recall and write-back; not process start-up), Stop from gate_decision entries (claims read, evidence matched); a Stop with no claim and PostToolUse record no entry with a timing"},
	{"human_override_rate", "human override rate", "judge decisions that stopped a call (block, revise or escalate) which a human then let run — an escalation approved (headless approval granted, or an interactive ask after which the call ran) or a denial after which the call ran anyway — / judge decisions that stopped a call"},
	{"escalation_rate", "escalation rate", "judge decisions with outcome escalate / all judge decisions"},
	{"incidents_caught_before_execution", "incidents caught before execution", "judge decisions that stopped a call (block, revise or escalate) after which the call never ran (no tool_call or tool_failure entry with its tool_use_id)"},
	{"memories_confirmed", "memories confirmed", "review items resolved with confirm in the window"},
	{"memories_rejected", "memories rejected", "review items resolved with reject in the window"},
	{"average_review_time", "average review time", "mean time from a review item's creation to its resolution, over items resolved in the window (seconds)"},
	{"average_approval_time", "average approval time", "mean time from an approval's creation to a human's answer, over approvals answered in the window (seconds)"},
}

// Latency is one hook's timing distribution, in microseconds.
type Latency struct {
	Count int   `json:"count"`
	P50   int64 `json:"p50_us"`
	P99   int64 `json:"p99_us"`
	Max   int64 `json:"max_us"`
}

// LiveMetrics are the live counterparts of the evaluation's metrics,
// computed from a state root's ledger and store.
type LiveMetrics struct {
	Since             time.Time          `json:"since"`
	Sessions          int                `json:"sessions"`
	JudgeDecisions    int                `json:"judge_decisions"`
	Outcomes          map[string]int     `json:"outcomes"`
	LatencyAdded      map[string]Latency `json:"latency_added"`
	Stopped           int                `json:"stopped"`
	HumanOverrides    int                `json:"human_overrides"`
	HumanOverrideRate float64            `json:"human_override_rate"`
	EscalationRate    float64            `json:"escalation_rate"`
	IncidentsCaught   int                `json:"incidents_caught_before_execution"`
	// store figures
	MemoriesConfirmed   int     `json:"memories_confirmed"`
	MemoriesRejected    int     `json:"memories_rejected"`
	ReviewsResolved     int     `json:"reviews_resolved"`
	AverageReviewTime   float64 `json:"average_review_time"`
	ApprovalsAnswered   int     `json:"approvals_answered"`
	AverageApprovalTime float64 `json:"average_approval_time"`
	// Skipped names sessions left out, with why (not intact, unreadable).
	Skipped []string `json:"skipped,omitempty"`
}

// Percentile returns the p-th percentile (0 < p <= 100) of sorted values
// by the nearest-rank method: the smallest value with at least p% of the
// values at or below it.
func Percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p / 100 * float64(len(sorted))))
	k = min(max(k, 1), len(sorted))
	return sorted[k-1]
}

type judgeBody struct {
	Outcome           string `json:"outcome"`
	RawOutcome        string `json:"raw_outcome"`
	EnforcementAction string `json:"enforcement_action"`
	DurationMicros    *int64 `json:"duration_us"`
}

type gateBody struct {
	DurationMicros *int64 `json:"duration_us"`
}

// LiveSession is one session's ledger entries.
type LiveSession struct {
	Session string
	Entries []*ledger.Entry
}

// ComputeLive computes the live metrics over entries newer than since
// (by entry time) and review items and approvals resolved since then.
func ComputeLive(sessions []LiveSession, reviews []store.ReviewItem, approvals []store.Approval, since time.Time) LiveMetrics {
	m := LiveMetrics{Since: since, Outcomes: map[string]int{}, LatencyAdded: map[string]Latency{}}
	var judgeLat, gateLat []int64
	escalations := 0
	for _, s := range sessions {
		counted := false
		// ran: tool_use_id -> seq of the tool_call / tool_failure entries
		ran := map[string][]uint64{}
		for _, e := range s.Entries {
			if (e.Kind == ledger.KindToolCall || e.Kind == ledger.KindToolFailure) && e.ToolUseID != "" {
				ran[e.ToolUseID] = append(ran[e.ToolUseID], e.Seq)
			}
		}
		for _, e := range s.Entries {
			t, err := time.Parse(time.RFC3339Nano, e.Time)
			if err != nil || t.Before(since) {
				continue
			}
			switch e.Kind {
			case ledger.KindJudgeDecision:
				var b judgeBody
				if json.Unmarshal(e.Body, &b) != nil {
					continue
				}
				counted = true
				m.JudgeDecisions++
				if b.Outcome == string(Allow) && b.RawOutcome == string(Revise) {
					// revised, and the amended call allowed: it ran revised
					m.Outcomes[string(Revise)]++
				} else {
					m.Outcomes[b.Outcome]++
				}
				if b.DurationMicros != nil {
					judgeLat = append(judgeLat, *b.DurationMicros)
				}
				if b.Outcome == string(Escalate) {
					escalations++
				}
				if b.Outcome == string(Allow) || b.EnforcementAction == "audit_bypass" {
					continue
				}
				m.Stopped++
				after := slices.ContainsFunc(ran[e.ToolUseID], func(seq uint64) bool { return seq > e.Seq })
				if e.ToolUseID == "" {
					after = false
				}
				if after || b.EnforcementAction == "approval_granted" {
					m.HumanOverrides++
				} else {
					m.IncidentsCaught++
				}
			case ledger.KindGateDecision:
				var b gateBody
				if json.Unmarshal(e.Body, &b) == nil && b.DurationMicros != nil {
					gateLat = append(gateLat, *b.DurationMicros)
				}
				counted = true
			}
		}
		if counted {
			m.Sessions++
		}
	}
	for hook, v := range map[string][]int64{"PreToolUse": judgeLat, "Stop": gateLat} {
		slices.Sort(v)
		l := Latency{Count: len(v), P50: Percentile(v, 50), P99: Percentile(v, 99)}
		if len(v) > 0 {
			l.Max = v[len(v)-1]
		}
		m.LatencyAdded[hook] = l
	}
	m.EscalationRate = ratio(escalations, m.JudgeDecisions)
	m.HumanOverrideRate = ratio(m.HumanOverrides, m.Stopped)
	var reviewSum, approvalSum time.Duration
	for _, it := range reviews {
		if it.Status != store.ReviewResolved || it.ResolvedAt.Before(since) {
			continue
		}
		m.ReviewsResolved++
		reviewSum += it.ResolvedAt.Sub(it.CreatedAt)
		switch it.Resolution {
		case store.ActConfirm:
			m.MemoriesConfirmed++
		case store.ActReject:
			m.MemoriesRejected++
		}
	}
	for _, a := range approvals {
		if a.ResolvedAt.IsZero() || a.ResolvedAt.Before(since) || a.ResolvedBy == "" {
			continue // pending, expired by the clock, or before the window
		}
		m.ApprovalsAnswered++
		approvalSum += a.ResolvedAt.Sub(a.CreatedAt)
	}
	if m.ReviewsResolved > 0 {
		m.AverageReviewTime = reviewSum.Seconds() / float64(m.ReviewsResolved)
	}
	if m.ApprovalsAnswered > 0 {
		m.AverageApprovalTime = approvalSum.Seconds() / float64(m.ApprovalsAnswered)
	}
	return m
}
