package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/store"
	"github.com/docket/docket/store/memstore"
)

func base() store.Decision {
	return store.Decision{
		Workspace: "ws", ActionID: "a1", IdempotencyKey: "k1", Decision: store.Block,
		ReasoningSummary: "blocked", Judge: store.Judge{Kind: "llm"}, Confidence: "medium",
	}
}

func TestPlanWrite(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		mod      func(*store.Decision)
		memories int
		review   int
		rejected []string // fields
		policy   store.UsePolicy
		priority store.Priority
		invalid  bool
	}{
		{"no candidates", func(d *store.Decision) {}, 0, 0, nil, "", "", false},
		{"generated lesson reviewed", func(d *store.Decision) { d.MemoryToWrite.Lessons = []string{"ask first"} }, 1, 1, nil, store.NeedsConfirmation, store.Normal, false},
		{"observed failure evidence", func(d *store.Decision) {
			d.MemoryToWrite.Failures = []string{"push failed"}
			d.MemoryToWrite.Provenance.DefaultStatus = store.Observed
		}, 1, 0, nil, store.Evidence, "", false},
		{"observed but requires review", func(d *store.Decision) {
			d.MemoryToWrite.Failures = []string{"push failed"}
			d.MemoryToWrite.Provenance = store.CandidateProvenance{DefaultStatus: store.Observed, RequiresReview: true}
		}, 1, 1, nil, store.NeedsConfirmation, store.Normal, false},
		{"low confidence observed stays unconfirmed", func(d *store.Decision) {
			d.Confidence = "low"
			d.MemoryToWrite.Decisions = []string{"blocked push"}
			d.MemoryToWrite.Provenance.DefaultStatus = store.Observed
		}, 1, 1, nil, store.NeedsConfirmation, store.Normal, false},
		{"human correction high priority", func(d *store.Decision) {
			d.Judge.Kind = "human"
			d.MemoryToWrite.Constraints = []string{"never on fridays"}
		}, 1, 1, nil, store.NeedsConfirmation, store.High, false},
		{"arguments ref without retention", func(d *store.Decision) { d.FullArgumentsRef = "s3://x" }, 0, 0, []string{"full_arguments_ref"}, "", "", false},
		{"arguments ref with retention", func(d *store.Decision) { d.FullArgumentsRef, d.RetentionPolicy = "s3://x", "audit-90d" }, 0, 0, nil, "", "", false},
		{"trace in revision", func(d *store.Decision) { d.RequiredRevision.Constraints = []string{"<thinking>hmm</thinking>"} }, 0, 0,
			[]string{"required_revision.revised_action_constraints[0]"}, "", "", false},
		{"empty candidate", func(d *store.Decision) { d.MemoryToWrite.Lessons = []string{"  "} }, 0, 0, []string{"memory_to_write.lessons[0]"}, "", "", false},
		{"unknown outcome", func(d *store.Decision) { d.Decision = "maybe" }, 0, 0, nil, "", "", true},
		{"unknown judge", func(d *store.Decision) { d.Judge.Kind = "oracle" }, 0, 0, nil, "", "", true},
		{"unknown check", func(d *store.Decision) { d.Checks.Policy = "meh" }, 0, 0, nil, "", "", true},
		{"bad memory use", func(d *store.Decision) { d.MemoryUsed = []store.MemoryUse{{MemoryID: "m", UsedAs: "gospel"}} }, 0, 0, nil, "", "", true},
		{"no workspace", func(d *store.Decision) { d.Workspace = "" }, 0, 0, nil, "", "", true},
		{"wrong schema", func(d *store.Decision) { d.SchemaVersion = "openbrain.judge.decision.v2" }, 0, 0, nil, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := base()
			tt.mod(&d)
			p, err := store.PlanWrite(d, now)
			if tt.invalid {
				if !store.IsInvalid(err) {
					t.Fatalf("PlanWrite: %v, want a validation error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Memories) != tt.memories || len(p.Review) != tt.review {
				t.Fatalf("memories %d review %d, want %d %d", len(p.Memories), len(p.Review), tt.memories, tt.review)
			}
			var fields []string
			for _, r := range p.Rejections {
				fields = append(fields, r.Field)
			}
			if fmt.Sprint(fields) != fmt.Sprint(tt.rejected) && !(len(fields) == 0 && tt.rejected == nil) {
				t.Errorf("rejections %v, want %v", fields, tt.rejected)
			}
			if tt.memories > 0 && p.Memories[0].UsePolicy != tt.policy {
				t.Errorf("use policy %s, want %s", p.Memories[0].UsePolicy, tt.policy)
			}
			if tt.review > 0 && p.Review[0].Priority != tt.priority {
				t.Errorf("priority %s, want %s", p.Review[0].Priority, tt.priority)
			}
			if p.Decision.DecisionID == "" || !p.Decision.CreatedAt.Equal(now) {
				t.Errorf("decision id %q created %v", p.Decision.DecisionID, p.Decision.CreatedAt)
			}
			for _, m := range p.Memories {
				if m.UsePolicy == store.Instruction {
					t.Errorf("write-back produced an instruction-grade memory")
				}
			}
		})
	}
}

func TestDecay(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		days float64
		want float64
	}{{0, 1}, {1, 0.98}, {30, 0.5455}, {90, 0.1623}} {
		m := store.Memory{Freshness: store.Freshness{LastSeenAt: now.Add(-time.Duration(tt.days * 24 * float64(time.Hour)))}}
		if got := store.Decay(&m, now); got < tt.want-0.001 || got > tt.want+0.001 {
			t.Errorf("Decay after %v days = %.4f, want %.4f", tt.days, got, tt.want)
		}
	}
	// A confirmation resets the clock like a sighting does.
	m := store.Memory{Freshness: store.Freshness{LastSeenAt: now.AddDate(0, 0, -90), LastConfirmedAt: now}}
	if got := store.Decay(&m, now); got != 1 {
		t.Errorf("Decay right after confirmation = %v, want 1", got)
	}
}

func TestWaitFailsClosedOnCancel(t *testing.T) {
	var s memstore.Store
	ctx, cancel := context.WithCancel(context.Background())
	s.SubmitApproval(ctx, store.Approval{ID: "apr_c", Tool: "Bash", Summary: "x"})
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	a, err := store.Wait(ctx, &s, "apr_c", time.Minute)
	if !errors.Is(err, store.ErrWaitTimeout) || !errors.Is(err, context.Canceled) || a.Allows() {
		t.Fatalf("Wait after cancel: %+v %v", a, err)
	}
	if _, err := store.Wait(context.Background(), &s, "apr_missing", time.Second); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Wait(unknown): %v", err)
	}
}

func TestApplyResolution(t *testing.T) {
	now := time.Now()
	open := store.Approval{ID: "a", Tool: "Bash", Status: store.ApprovalPending, CreatedAt: now, TimeoutAt: now.Add(time.Minute)}
	tests := []struct {
		name string
		a    store.Approval
		r    store.Resolution
		want store.ApprovalStatus
		err  error
	}{
		{"approve", open, store.Resolution{Status: store.ApprovalApproved, By: "ana"}, store.ApprovalApproved, nil},
		{"no name", open, store.Resolution{Status: store.ApprovalApproved}, store.ApprovalPending, errors.New("invalid")},
		{"expire is not an answer", open, store.Resolution{Status: store.ApprovalExpired, By: "ana"}, store.ApprovalPending, errors.New("invalid")},
		{"args on approve", open, store.Resolution{Status: store.ApprovalApproved, By: "ana", Arguments: []byte(`{}`)}, store.ApprovalPending, errors.New("invalid")},
		{"overdue", store.Approval{ID: "a", Status: store.ApprovalPending, TimeoutAt: now.Add(-time.Second)}, store.Resolution{Status: store.ApprovalApproved, By: "ana"}, store.ApprovalExpired, store.ErrConflict},
		{"decided", store.Approval{ID: "a", Status: store.ApprovalRejected, TimeoutAt: now.Add(time.Hour)}, store.Resolution{Status: store.ApprovalApproved, By: "ana"}, store.ApprovalRejected, store.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := store.ApplyResolution(tt.a, tt.r, now)
			switch {
			case tt.err == nil && err != nil, tt.err != nil && err == nil:
				t.Fatalf("err %v, want %v", err, tt.err)
			case tt.err == store.ErrConflict && !errors.Is(err, store.ErrConflict):
				t.Fatalf("err %v, want ErrConflict", err)
			case tt.err != nil && tt.err.Error() == "invalid" && !store.IsInvalid(err):
				t.Fatalf("err %v, want a validation error", err)
			}
			if got.Status != tt.want {
				t.Errorf("status %s, want %s", got.Status, tt.want)
			}
		})
	}
}

// A judge's loop: recall, decide, write back with what it used.
func Example() {
	ctx := context.Background()
	var s memstore.Store // or sqlstore.Open(ctx, home, os.Getenv(sqlstore.EnvDSN))
	s.PutMemory(ctx, store.Memory{
		Summary:     "never force-push to main",
		Provenance:  store.Provenance{Status: store.UserConfirmed, Confidence: 1, CreatedBy: "user"},
		UsePolicy:   store.Instruction,
		ConfirmedBy: "ana",
		Behavior:    "block",
		Scope:       store.Scope{Workspace: "ws", Visibility: store.WorkspaceVisible},
	})
	resp, _ := s.Recall(ctx, store.RecallRequest{Workspace: "ws", Query: store.Query{Summary: "git push --force origin main", ToolName: "Bash"}})
	for _, h := range resp.PolicyHits {
		fmt.Println(h.RequiredBehavior, h.Summary)
	}
	res, _ := s.WriteDecision(ctx, store.Decision{
		Workspace: "ws", ActionID: "a1", IdempotencyKey: "sha256:ab", Decision: store.Block,
		ReasoningSummary: "policy forbids force-pushing main", Judge: store.Judge{Kind: "rule"},
		RecallID: resp.RecallID, MemoryUsed: []store.MemoryUse{{MemoryID: resp.PolicyHits[0].PolicyID, UsedAs: "instruction"}},
		MemoryToWrite: store.MemoryToWrite{Lessons: []string{"ask before rewriting shared history"}},
	})
	again, _ := s.WriteDecision(ctx, store.Decision{Workspace: "ws", ActionID: "a1", IdempotencyKey: "sha256:ab", Decision: store.Block, Judge: store.Judge{Kind: "rule"}})
	fmt.Println(len(res.Review), "lesson waits for review;", "replayed:", again.Replayed, again.DecisionID == res.DecisionID)
	fmt.Println(strings.HasPrefix(res.DecisionID, "dec_"))
	// Output:
	// block never force-push to main
	// 1 lesson waits for review; replayed: true true
	// true
}
