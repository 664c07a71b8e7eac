// Package storetest is the conformance suite every store.Store backend
// runs: go test in the backend's package calls TestStore with a function
// that returns a fresh, empty store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/store"
	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
)

// TestStore runs the conformance suite. newStore must return an empty
// store; the suite closes it. It installs gitleaks as the write-back
// firewall's secret detector, as the docket CLI does.
func TestStore(t *testing.T, newStore func(t *testing.T) store.Store) {
	firewall.UseDetector(gitleaks.Detect)
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"PutGet", testPutGet},
		{"Invariants", testInvariants},
		{"ConfirmedLessonRecalled", testConfirmedLessonRecalled},
		{"GeneratedNotInstructionUntilConfirmed", testGeneratedNotInstruction},
		{"ReviewDowngradesToEvidence", testEvidenceOnly},
		{"DisputedSupersededNotInjected", testDisputedSuperseded},
		{"FirewallRefuses", testFirewall},
		{"IdempotentConcurrentWrites", testIdempotent},
		{"Scope", testScope},
		{"RankingDecayReinforcement", testRanking},
		{"DuplicatesRecalledOnce", testDuplicates},
		{"Observe", testObserve},
		{"RecallRecorded", testRecallRecorded},
		{"ReviewActions", testReviewActions},
		{"StaleAndLimits", testStaleAndLimits},
		{"HumanCorrectionHighPriority", testHumanCorrection},
		{"Approvals", testApprovals},
		{"ApprovalWait", testApprovalWait},
		{"CreatorKept", testCreator},
		{"SessionOwners", testSessionOwners},
		{"SessionClaimRace", testSessionClaimRace},
		{"Inspect", testInspect},
		{"ReviewSetsBehavior", testReviewSetsBehavior},
		{"RepeatedLessonReinforces", testRepeatedLesson},
		{"RelevanceBucketsAndScore", testRelevance},
		{"RecallAnchor", testRecallAnchor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() { s.Close() })
			tt.fn(t, s)
		})
	}
}

const ws = "ws-test"

var ctx = context.Background()

func confirmed(id, summary string, ents ...string) store.Memory {
	return store.Memory{
		ID:          id,
		Summary:     summary,
		Content:     summary,
		Source:      store.Source{Kind: "manual_entry", URI: "manual:" + id},
		Provenance:  store.Provenance{Status: store.UserConfirmed, Confidence: 0.9, CreatedBy: "user"},
		UsePolicy:   store.Instruction,
		ConfirmedBy: "ana",
		Behavior:    "block",
		Scope:       store.Scope{Workspace: ws, Visibility: store.WorkspaceVisible},
		Entities:    ents,
	}
}

func evidence(id, summary string, ents ...string) store.Memory {
	return store.Memory{
		ID:         id,
		Summary:    summary,
		Content:    summary,
		Source:     store.Source{Kind: "system_event", URI: "ledger:s1#" + id},
		Provenance: store.Provenance{Status: store.Observed, Confidence: 0.9, CreatedBy: "system"},
		UsePolicy:  store.Evidence,
		Scope:      store.Scope{Workspace: ws, Visibility: store.WorkspaceVisible},
		Entities:   ents,
	}
}

func put(t *testing.T, s store.Store, m store.Memory) store.Memory {
	t.Helper()
	m, err := s.PutMemory(ctx, m)
	if err != nil {
		t.Fatalf("PutMemory(%s): %v", m.ID, err)
	}
	return m
}

func recall(t *testing.T, s store.Store, summary string, mod ...func(*store.RecallRequest)) store.RecallResponse {
	t.Helper()
	req := store.RecallRequest{
		RequestID: "req-" + summary,
		Workspace: ws,
		ActionID:  "act-1",
		Query:     store.Query{Summary: summary, ToolName: "Bash"},
		Scope:     store.RequestScope{Visibility: store.Personal},
	}
	for _, f := range mod {
		f(&req)
	}
	resp, err := s.Recall(ctx, req)
	if err != nil {
		t.Fatalf("Recall(%q): %v", summary, err)
	}
	if resp.SchemaVersion != store.RecallResponseSchema || resp.RecallID == "" || resp.RequestID != req.RequestID {
		t.Fatalf("Recall: schema %q recall id %q request id %q", resp.SchemaVersion, resp.RecallID, resp.RequestID)
	}
	return resp
}

func ids(resp store.RecallResponse) []string {
	var out []string
	for _, m := range resp.Memories {
		out = append(out, m.ID)
	}
	return out
}

func hitIDs(resp store.RecallResponse) []string {
	var out []string
	for _, h := range resp.PolicyHits {
		out = append(out, h.PolicyID)
	}
	return out
}

func warned(resp store.RecallResponse, code, id string) bool {
	for _, w := range resp.Warnings {
		if w.Code == code && (id == "" || w.MemoryID == id) {
			return true
		}
	}
	return false
}

func decision(key string, mod ...func(*store.Decision)) store.Decision {
	d := store.Decision{
		Workspace:        ws,
		ActionID:         "act-" + key,
		IdempotencyKey:   key,
		Decision:         store.Block,
		ReasoningSummary: "force push to main is not allowed without review",
		Confidence:       "medium",
		Judge:            store.Judge{Kind: "llm", Model: "m1"},
		Checks:           store.Checks{Policy: "fail"},
		ToolName:         "Bash",
		Entities:         []string{"repo:docket"},
	}
	for _, f := range mod {
		f(&d)
	}
	return d
}

func write(t *testing.T, s store.Store, d store.Decision) store.WriteResult {
	t.Helper()
	r, err := s.WriteDecision(ctx, d)
	if err != nil {
		t.Fatalf("WriteDecision(%s): %v", d.IdempotencyKey, err)
	}
	return r
}

func review(t *testing.T, s store.Store, a store.ReviewAction) (store.Memory, store.ReviewItem) {
	t.Helper()
	if a.Actor == "" {
		a.Actor = "ana"
	}
	m, it, err := s.Review(ctx, a)
	if err != nil {
		t.Fatalf("Review(%s %s): %v", a.Action, a.ID, err)
	}
	return m, it
}

func testPutGet(t *testing.T, s store.Store) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891_000_000, time.UTC)
	in := confirmed("mem_putget", "never force-push to main", "repo:Docket", "tool:bash", "repo:docket")
	in.Content = "Force pushes rewrite shared history.\nAsk first."
	in.Source = store.Source{Kind: "user_message", URI: "msg:1", Title: "chat", Timestamp: at}
	in.Provenance.Model, in.Provenance.Runtime = "m", "claude-code"
	in.Freshness = store.Freshness{CreatedAt: at, LastConfirmedAt: at.Add(time.Hour), StaleAfter: at.AddDate(1, 0, 0)}
	in.Scope.Project = "p1"
	in.Disputes = []string{"mem_x"}
	in.Lineage = store.Lineage{Session: "s1", Seq: 7, EntryHash: "sha256:ab"}
	got := put(t, s, in)
	read, err := s.GetMemory(ctx, "mem_putget")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%+v", got)
	if fmt.Sprintf("%+v", read) != want {
		t.Errorf("GetMemory =\n%+v\nwant\n%+v", read, got)
	}
	if !slices.Equal(read.Entities, []string{"repo:docket", "tool:bash"}) {
		t.Errorf("entities = %v, want normalized [repo:docket tool:bash]", read.Entities)
	}
	if read.Lifecycle != store.Active || read.Occurrences != 1 || !read.Freshness.LastSeenAt.Equal(at) {
		t.Errorf("defaults: lifecycle %q occurrences %d last seen %v", read.Lifecycle, read.Occurrences, read.Freshness.LastSeenAt)
	}
	if _, err := s.PutMemory(ctx, in); !errors.Is(err, store.ErrExists) {
		t.Errorf("second PutMemory: %v, want ErrExists", err)
	}
	if _, err := s.GetMemory(ctx, "mem_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetMemory(missing): %v, want ErrNotFound", err)
	}
	if _, err := s.GetDecision(ctx, "dec_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetDecision(missing): %v, want ErrNotFound", err)
	}
	if _, err := s.Trail(ctx, "mem_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Trail(missing): %v, want ErrNotFound", err)
	}
	if _, err := s.Recall(ctx, store.RecallRequest{}); !store.IsInvalid(err) {
		t.Errorf("Recall without workspace: %v, want a validation error", err)
	}
}

func testInvariants(t *testing.T, s store.Store) {
	tests := []struct {
		name string
		mod  func(*store.Memory)
		ok   bool
	}{
		{"confirmed instruction", func(m *store.Memory) {}, true},
		{"instruction without confirmer", func(m *store.Memory) { m.ConfirmedBy = "" }, false},
		{"observed instruction", func(m *store.Memory) { m.Provenance.Status = store.Observed }, false},
		{"generated instruction", func(m *store.Memory) { m.Provenance.Status = store.Generated }, false},
		{"inferred instruction", func(m *store.Memory) { m.Provenance.Status = store.Inferred }, false},
		{"imported instruction", func(m *store.Memory) { m.Provenance.Status = store.Imported }, false},
		{"generated needs confirmation", func(m *store.Memory) {
			m.Provenance.Status, m.UsePolicy, m.ConfirmedBy = store.Generated, store.NeedsConfirmation, ""
		}, true},
		{"generated evidence", func(m *store.Memory) { m.Provenance.Status, m.UsePolicy = store.Generated, store.Evidence }, true},
		{"disputed evidence", func(m *store.Memory) { m.Provenance.Status, m.UsePolicy = store.Disputed, store.Evidence }, false},
		{"disputed needs confirmation", func(m *store.Memory) { m.Provenance.Status, m.UsePolicy = store.Disputed, store.NeedsConfirmation }, false},
		{"disputed do not inject", func(m *store.Memory) { m.Provenance.Status, m.UsePolicy = store.Disputed, store.DoNotInject }, true},
		{"superseded evidence", func(m *store.Memory) { m.Provenance.Status, m.UsePolicy = store.Superseded, store.Evidence }, false},
		{"stale instruction", func(m *store.Memory) { m.Freshness.Stale = true }, false},
		{"stale do not inject", func(m *store.Memory) { m.Freshness.Stale, m.UsePolicy = true, store.DoNotInject }, true},
		{"low confidence instruction", func(m *store.Memory) { m.Provenance.Confidence = 0.3 }, false},
		{"low confidence evidence", func(m *store.Memory) { m.Provenance.Confidence, m.UsePolicy = 0.3, store.Evidence }, false},
		{"low confidence needs confirmation", func(m *store.Memory) {
			m.Provenance.Confidence, m.UsePolicy = 0.3, store.NeedsConfirmation
		}, true},
		{"unknown status", func(m *store.Memory) { m.Provenance.Status = "believed" }, false},
		{"unknown use policy", func(m *store.Memory) { m.UsePolicy = "can_use_as_gospel" }, false},
		{"confidence above 1", func(m *store.Memory) { m.Provenance.Confidence = 1.5 }, false},
		{"no workspace", func(m *store.Memory) { m.Scope.Workspace = "" }, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := confirmed(fmt.Sprintf("mem_inv%02d", i), "invariant case "+tt.name)
			tt.mod(&m)
			_, err := s.PutMemory(ctx, m)
			if tt.ok && err != nil {
				t.Fatalf("PutMemory: %v, want ok", err)
			}
			if !tt.ok {
				if !errors.Is(err, store.ErrInvariant) {
					t.Fatalf("PutMemory: %v, want ErrInvariant", err)
				}
				if _, err := s.GetMemory(ctx, m.ID); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("refused memory was stored (GetMemory: %v)", err)
				}
			}
		})
	}
}

// lessonDecision is a generated lesson from a blocked deploy.
func lessonDecision(key string) store.Decision {
	return decision(key, func(d *store.Decision) {
		d.ReasoningSummary = "deploy to production ran without a passing test run"
		d.MemoryToWrite.Lessons = []string{"Run the full test suite before deploying the billing service to production"}
		d.Entities = []string{"system:prod", "repo:billing"}
	})
}

func testConfirmedLessonRecalled(t *testing.T, s store.Store) {
	r := write(t, s, lessonDecision("k-lesson"))
	if len(r.Memories) != 1 || len(r.Review) != 1 {
		t.Fatalf("write result %+v: want one memory in review", r)
	}
	lesson := r.Memories[0]
	similar := func(q *store.RecallRequest) {
		q.Query.Entities.Systems = []string{"prod"}
		q.Query.Entities.Repos = []string{"billing"}
	}
	before := recall(t, s, "deploy billing service to production", similar)
	if slices.Contains(ids(before), lesson) || len(before.PolicyHits) != 0 {
		t.Fatalf("unconfirmed lesson injected: memories %v hits %v", ids(before), hitIDs(before))
	}
	if !warned(before, "excluded_unconfirmed", lesson) {
		t.Errorf("no excluded_unconfirmed warning for %s: %+v", lesson, before.Warnings)
	}
	m, it := review(t, s, store.ReviewAction{ID: r.Review[0], Action: store.ActConfirm})
	if m.UsePolicy != store.Instruction || m.Provenance.Status != store.UserConfirmed || m.ConfirmedBy != "ana" {
		t.Fatalf("after confirm: %s %s by %q", m.UsePolicy, m.Provenance.Status, m.ConfirmedBy)
	}
	if it.Status != store.ReviewResolved || it.Resolution != store.ActConfirm {
		t.Errorf("item after confirm: %+v", it)
	}
	put(t, s, evidence("mem_noise", "rotated the staging log files", "system:staging"))
	after := recall(t, s, "deploying the billing service to production again", similar)
	if len(after.Memories) == 0 || after.Memories[0].ID != lesson {
		t.Fatalf("confirmed lesson not recalled first: %v", ids(after))
	}
	if !slices.Equal(hitIDs(after), []string{lesson}) || after.PolicyHits[0].RequiredBehavior != "block" {
		t.Fatalf("policy hits %+v, want the lesson requiring block", after.PolicyHits)
	}
	other := recall(t, s, "list files in the docs folder", func(q *store.RecallRequest) { q.Query.ToolName = "Read" })
	if slices.Contains(ids(other), lesson) {
		t.Errorf("unrelated action recalled the lesson: %v", ids(other))
	}
}

func testGeneratedNotInstruction(t *testing.T, s store.Store) {
	r := write(t, s, lessonDecision("k-gen"))
	m, err := s.GetMemory(ctx, r.Memories[0])
	if err != nil {
		t.Fatal(err)
	}
	if m.Provenance.Status != store.Generated || m.UsePolicy != store.NeedsConfirmation {
		t.Fatalf("generated lesson stored as %s/%s, want generated/requires_confirmation", m.Provenance.Status, m.UsePolicy)
	}
	items, err := s.ListReview(ctx, store.ReviewFilter{})
	if err != nil || len(items) != 1 || items[0].MemoryID != m.ID || items[0].Suggested != store.Instruction {
		t.Fatalf("review queue %+v (%v): want the lesson suggested as instruction", items, err)
	}
	// Claiming user_confirmed from a model does not make it so.
	r2 := write(t, s, decision("k-gen2", func(d *store.Decision) {
		d.MemoryToWrite.Lessons = []string{"always ask before touching prod"}
		d.MemoryToWrite.Provenance.DefaultStatus = store.UserConfirmed
	}))
	m2, _ := s.GetMemory(ctx, r2.Memories[0])
	if m2.Provenance.Status == store.UserConfirmed || m2.UsePolicy == store.Instruction {
		t.Fatalf("model-claimed confirmation accepted: %s/%s", m2.Provenance.Status, m2.UsePolicy)
	}
	// Observed decisions from a rule judge are evidence right away.
	r3 := write(t, s, decision("k-obs", func(d *store.Decision) {
		d.Judge.Kind = "rule"
		d.MemoryToWrite.Decisions = []string{"blocked git push --force to main"}
		d.MemoryToWrite.Provenance.DefaultStatus = store.Observed
	}))
	m3, _ := s.GetMemory(ctx, r3.Memories[0])
	if len(r3.Review) != 0 || m3.UsePolicy != store.Evidence {
		t.Fatalf("observed decision: review %v policy %s, want evidence without review", r3.Review, m3.UsePolicy)
	}
	// An instruction-grade memory cannot be put without a human.
	g := confirmed("mem_gen_instr", "generated rule")
	g.Provenance.Status = store.Generated
	if _, err := s.PutMemory(ctx, g); !errors.Is(err, store.ErrInvariant) {
		t.Fatalf("generated instruction put: %v, want ErrInvariant", err)
	}
}

func testEvidenceOnly(t *testing.T, s store.Store) {
	r := write(t, s, lessonDecision("k-ev"))
	m, it := review(t, s, store.ReviewAction{ID: r.Memories[0], Action: store.ActEvidenceOnly})
	if m.UsePolicy != store.Evidence || it.Status != store.ReviewResolved || it.Resolution != store.ActEvidenceOnly {
		t.Fatalf("after evidence_only: %s, item %+v", m.UsePolicy, it)
	}
	resp := recall(t, s, "deploy billing service to production")
	if !slices.Contains(ids(resp), m.ID) || len(resp.PolicyHits) != 0 {
		t.Fatalf("evidence-only lesson: memories %v hits %v, want it as evidence only", ids(resp), hitIDs(resp))
	}
	// A confirmed instruction can be downgraded too.
	c := put(t, s, confirmed("mem_instr_down", "never deploy billing on fridays"))
	m, _ = review(t, s, store.ReviewAction{ID: c.ID, Action: store.ActEvidenceOnly})
	if m.UsePolicy != store.Evidence {
		t.Fatalf("downgraded instruction is %s", m.UsePolicy)
	}
	if resp := recall(t, s, "deploy billing on fridays"); slices.Contains(hitIDs(resp), c.ID) {
		t.Fatalf("downgraded memory still a policy hit")
	}
}

func testDisputedSuperseded(t *testing.T, s store.Store) {
	a := put(t, s, confirmed("mem_a", "merge requests to main need two approvals"))
	b := put(t, s, confirmed("mem_b", "merge requests to main need one approval"))
	c := put(t, s, confirmed("mem_c", "merge requests to main need a green pipeline"))
	before := recall(t, s, "merge request to main approvals")
	if !slices.Contains(hitIDs(before), a.ID) || !slices.Contains(hitIDs(before), b.ID) {
		t.Fatalf("setup: hits %v", hitIDs(before))
	}
	review(t, s, store.ReviewAction{ID: a.ID, Action: store.ActDispute, Other: c.ID})
	review(t, s, store.ReviewAction{ID: b.ID, Action: store.ActSupersede, Other: c.ID})
	for _, id := range []string{a.ID, b.ID} {
		m, _ := s.GetMemory(ctx, id)
		if m.UsePolicy != store.DoNotInject {
			t.Errorf("%s use policy %s, want do_not_inject_automatically", id, m.UsePolicy)
		}
	}
	after := recall(t, s, "merge request to main approvals")
	for _, id := range []string{a.ID, b.ID} {
		if slices.Contains(ids(after), id) || slices.Contains(hitIDs(after), id) {
			t.Errorf("%s injected after dispute/supersede: %v", id, ids(after))
		}
	}
	if !warned(after, "excluded_disputed", a.ID) || !warned(after, "excluded_superseded", b.ID) {
		t.Errorf("warnings %+v: want excluded_disputed and excluded_superseded", after.Warnings)
	}
	all := recall(t, s, "merge request to main approvals", func(q *store.RecallRequest) {
		q.Scope.IncludeDisputed, q.Scope.IncludeUnconfirmed = true, true
	})
	if !slices.Contains(ids(all), a.ID) || slices.Contains(hitIDs(all), a.ID) || slices.Contains(hitIDs(all), b.ID) {
		t.Errorf("include_disputed: memories %v hits %v; want them visible, never policy hits", ids(all), hitIDs(all))
	}
	cm, _ := s.GetMemory(ctx, c.ID)
	if cm.Supersedes != b.ID {
		t.Errorf("superseding memory's link = %q, want %s", cm.Supersedes, b.ID)
	}
}

func testFirewall(t *testing.T, s store.Store) {
	secret := "ghp_R4nd0mT0k3nV4lu3xYzAbCdEfGh1234567890ab"
	d := decision("k-fw", func(d *store.Decision) {
		d.ReasoningSummary = "User: push it\nAssistant: pushing now\nUser: thanks"
		d.MemoryToWrite.Lessons = []string{
			"the deploy token is " + secret,
			"<thinking>maybe the user wants prod</thinking>",
			"Human: do it\nAssistant: done",
			"Pushes to main need review",
		}
		d.FullArguments = []byte(`{"command":"git push --force"}`)
	})
	r := write(t, s, d)
	if len(r.Memories) != 1 {
		t.Fatalf("memories written %v: want only the clean lesson", r.Memories)
	}
	fields := map[string]string{}
	for _, rj := range r.Rejections {
		fields[rj.Field] = rj.Reason
		if strings.Contains(rj.Reason, secret) {
			t.Errorf("rejection reason leaks the secret: %q", rj.Reason)
		}
	}
	for f, want := range map[string]string{
		"memory_to_write.lessons[0]": "secret-like",
		"memory_to_write.lessons[1]": "reasoning trace",
		"memory_to_write.lessons[2]": "transcript",
		"reasoning_summary":          "transcript",
		"full_arguments":             "not stored",
	} {
		if !strings.Contains(fields[f], want) {
			t.Errorf("rejection for %s = %q, want it to mention %q", f, fields[f], want)
		}
	}
	got, err := s.GetDecision(ctx, r.DecisionID)
	if err != nil {
		t.Fatalf("decision not stored after rejections: %v", err)
	}
	if strings.Contains(got.ReasoningSummary, "Assistant:") || len(got.FullArguments) != 0 || got.Decision != store.Block {
		t.Errorf("stored decision kept refused content: %+v", got)
	}
	resp := recall(t, s, "deploy token", func(q *store.RecallRequest) { q.Scope.IncludeUnconfirmed = true })
	for _, m := range resp.Memories {
		if strings.Contains(m.Content, secret) {
			t.Fatalf("secret reached the store in %s", m.ID)
		}
	}
	if _, err := s.WriteDecision(ctx, decision("", func(d *store.Decision) {})); !store.IsInvalid(err) {
		t.Errorf("decision without idempotency key: %v, want validation error", err)
	}
	if _, err := s.WriteDecision(ctx, decision("k-bad", func(d *store.Decision) { d.Decision = "maybe" })); !store.IsInvalid(err) {
		t.Errorf("decision %q: %v, want validation error", "maybe", err)
	}
}

func testIdempotent(t *testing.T, s store.Store) {
	const n = 16
	var wg sync.WaitGroup
	results := make([]store.WriteResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.WriteDecision(ctx, lessonDecision("k-same"))
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("retry %d: %v", i, errs[i])
		}
		if results[i].DecisionID != results[0].DecisionID {
			t.Fatalf("retry %d got decision %s, retry 0 got %s", i, results[i].DecisionID, results[0].DecisionID)
		}
		if !results[i].Replayed {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d writes not marked replayed, want exactly 1", fresh)
	}
	items, _ := s.ListReview(ctx, store.ReviewFilter{})
	if len(items) != 1 {
		t.Fatalf("review queue has %d items after %d retries, want 1", len(items), n)
	}
	again := write(t, s, lessonDecision("k-same"))
	if !again.Replayed || again.DecisionID != results[0].DecisionID || len(again.Memories) != 0 {
		t.Fatalf("sequential replay %+v", again)
	}
}

func testScope(t *testing.T, s store.Store) {
	mk := func(id, ws, project string, vis store.Visibility) {
		m := evidence(id, "rotate the signing keys every quarter")
		m.Scope = store.Scope{Workspace: ws, Project: project, Visibility: vis}
		put(t, s, m)
	}
	mk("mem_same", ws, "", store.WorkspaceVisible)
	mk("mem_otherws", "ws-other", "", store.WorkspaceVisible)
	mk("mem_org", "ws-other", "", store.Org)
	mk("mem_proj", ws, "p1", store.ProjectVisible)
	mk("mem_otherproj", ws, "p2", store.ProjectVisible)
	mk("mem_personal", ws, "", store.Personal)
	tests := []struct {
		vis     store.Visibility
		project string
		want    []string
	}{
		{store.Personal, "p1", []string{"mem_org", "mem_personal", "mem_proj", "mem_same"}},
		{store.ProjectVisible, "p1", []string{"mem_org", "mem_proj", "mem_same"}},
		{store.WorkspaceVisible, "p1", []string{"mem_org", "mem_same"}},
		{store.Org, "", []string{"mem_org"}},
		{store.Personal, "", []string{"mem_org", "mem_personal", "mem_same"}},
	}
	for _, tt := range tests {
		resp := recall(t, s, "rotate signing keys", func(q *store.RecallRequest) {
			q.Scope.Visibility, q.Project = tt.vis, tt.project
			q.Limits.MaxItems = 20
		})
		got := ids(resp)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("visibility %s project %q: got %v, want %v", tt.vis, tt.project, got, tt.want)
		}
	}
	only := recall(t, s, "rotate signing keys", func(q *store.RecallRequest) {
		q.Policy.AllowedUsePolicies = []store.UsePolicy{store.Instruction}
	})
	if len(only.Memories) != 0 || !warned(only, "excluded_use_policy", "") {
		t.Errorf("allowed_use_policies=[instruction]: got %v warnings %+v", ids(only), only.Warnings)
	}
}

func testRanking(t *testing.T, s store.Store) {
	now := time.Now()
	old := evidence("mem_old", "docker build fails on the arm runners", "system:ci")
	old.Freshness.CreatedAt = now.AddDate(0, 0, -100)
	put(t, s, old)
	// (not the same text: recall returns one memory of each text)
	fresh := evidence("mem_fresh", "docker build fails on the arm runners.", "system:ci")
	fresh.Freshness.CreatedAt = now.AddDate(0, 0, -1)
	put(t, s, fresh)
	resp := recall(t, s, "docker build fails on arm runners")
	if got := ids(resp); len(got) != 2 || got[0] != "mem_fresh" {
		t.Fatalf("ranking %v: want mem_fresh first (old one decayed)", got)
	}
	if resp.Memories[1].Score >= resp.Memories[0].Score*0.2 {
		t.Errorf("100-day-old score %.4f not decayed against %.4f (0.98^99 ≈ 0.135)", resp.Memories[1].Score, resp.Memories[0].Score)
	}
	// Recurrence resets the decay of the old observation.
	obs := old
	obs.ID = ""
	obs.Summary, obs.Content = "docker build fails on the arm runners, again", "docker build fails on the arm runners, again"
	obs.PatternKey = "docker-arm"
	for i, seq := range []uint64{1, 2, 3} {
		obs.Lineage = store.Lineage{Session: "s-rank", Seq: seq, EntryHash: fmt.Sprintf("h%d", seq)}
		obs.Freshness = store.Freshness{CreatedAt: now.AddDate(0, 0, -100+i)}
		if i == 2 {
			obs.Freshness.CreatedAt = now
		}
		if _, _, err := s.Observe(ctx, obs); err != nil {
			t.Fatal(err)
		}
	}
	resp = recall(t, s, "docker build fails on arm runners")
	if len(resp.Memories) != 3 {
		t.Fatalf("after observations: %v", ids(resp))
	}
	top := resp.Memories[0]
	if top.PatternKey != "docker-arm" || top.Occurrences != 3 {
		t.Fatalf("recurring observation not first: %+v", ids(resp))
	}
	// Entity overlap lifts a memory above one that shares only words.
	put(t, s, evidence("mem_ent_yes", "flaky integration test", "repo:api", "file:api_test.go"))
	put(t, s, evidence("mem_ent_no", "flaky integration test", "repo:web"))
	resp = recall(t, s, "flaky integration test", func(q *store.RecallRequest) {
		q.Query.Entities.Repos = []string{"api"}
		q.Query.Entities.Files = []string{"api_test.go"}
	})
	if got := ids(resp); len(got) < 2 || got[0] != "mem_ent_yes" {
		t.Fatalf("entity overlap ranking %v, want mem_ent_yes first", got)
	}
}

// testDuplicates: two memories of the same text about the same entities
// in the same scope come back once, the instruction kept over a fresher
// piece of evidence; the same text about another entity is another memory.
func testDuplicates(t *testing.T, s store.Store) {
	rule := confirmed("mem_rule", "Ask a human before git push to main", "tool:bash")
	rule.Freshness.CreatedAt = time.Now().AddDate(0, 0, -30)
	put(t, s, rule)
	put(t, s, evidence("mem_copy", "ask a human before  git push to main", "tool:bash"))
	put(t, s, evidence("mem_other", "Ask a human before git push to main", "tool:bash", "repo:web"))
	resp := recall(t, s, "git push to main", func(q *store.RecallRequest) { q.Limits.MaxItems = 10 })
	got := ids(resp)
	slices.Sort(got)
	if !slices.Equal(got, []string{"mem_other", "mem_rule"}) || !warned(resp, "duplicate_left_out", "mem_copy") {
		t.Errorf("recalled %v, warnings %+v: want mem_rule and mem_other, mem_copy left out as a duplicate", got, resp.Warnings)
	}
	if len(resp.PolicyHits) != 1 || resp.PolicyHits[0].PolicyID != "mem_rule" {
		t.Errorf("policy hits %+v, want mem_rule", resp.PolicyHits)
	}
	// a confirmed copy that asks for less (allow) does not hide the rule
	// that blocks, however it ranks
	weak := confirmed("mem_weak", "ask a human before git push to main", "tool:bash")
	weak.Behavior = "allow"
	put(t, s, weak)
	resp = recall(t, s, "git push to main", func(q *store.RecallRequest) { q.Limits.MaxItems = 10 })
	var hits []string
	for _, h := range resp.PolicyHits {
		hits = append(hits, h.PolicyID+":"+h.RequiredBehavior)
	}
	slices.Sort(hits)
	if !slices.Equal(hits, []string{"mem_rule:block", "mem_weak:allow"}) {
		t.Errorf("policy hits %v: want both the blocking rule and its weaker copy", hits)
	}
}

func testObserve(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	m := evidence("", "judge blocked rm -rf in the repo root", "tool:bash")
	m.PatternKey = "block:bash:rm"
	m.Lineage = store.Lineage{Session: "s1", Seq: 4, EntryHash: "sha256:01"}
	m.Freshness.CreatedAt = now.Add(-48 * time.Hour)
	first, res, err := s.Observe(ctx, m)
	if err != nil || res != store.Created {
		t.Fatalf("first Observe: %v %v", res, err)
	}
	again, res, err := s.Observe(ctx, m)
	if err != nil || res != store.Duplicate || again.ID != first.ID || again.Occurrences != 1 {
		t.Fatalf("same lineage: %v %v occurrences %d", res, err, again.Occurrences)
	}
	m.Lineage = store.Lineage{Session: "s2", Seq: 9, EntryHash: "sha256:02"}
	m.Freshness.CreatedAt = now
	re, res, err := s.Observe(ctx, m)
	if err != nil || res != store.Reinforced || re.ID != first.ID || re.Occurrences != 2 || !re.Freshness.LastSeenAt.Equal(now) {
		t.Fatalf("recurrence: %v %v id %s occurrences %d last seen %v", res, err, re.ID, re.Occurrences, re.Freshness.LastSeenAt)
	}
	tr, err := s.Trail(ctx, first.ID)
	if err != nil || len(tr.Observations) != 2 {
		t.Fatalf("trail observations %+v (%v), want 2", tr.Observations, err)
	}
	if _, _, err := s.Observe(ctx, evidence("", "no lineage")); !store.IsInvalid(err) {
		t.Errorf("Observe without lineage: %v, want validation error", err)
	}
}

func testRecallRecorded(t *testing.T, s store.Store) {
	c := put(t, s, confirmed("mem_rr", "sign release tags with the release key"))
	e := put(t, s, evidence("mem_rr2", "release tag v1.2 was pushed unsigned"))
	resp := recall(t, s, "push release tag")
	if !slices.Contains(ids(resp), c.ID) || !slices.Contains(ids(resp), e.ID) {
		t.Fatalf("recall %v", ids(resp))
	}
	r := write(t, s, decision("k-rr", func(d *store.Decision) {
		d.RecallID = resp.RecallID
		d.MemoryUsed = []store.MemoryUse{{MemoryID: c.ID, UsedAs: "instruction"}}
	}))
	// a decision of another workspace naming the recall marks nothing
	write(t, s, decision("k-rr-other", func(d *store.Decision) {
		d.Workspace = "ws-other"
		d.RecallID = resp.RecallID
		d.MemoryUsed = []store.MemoryUse{{MemoryID: e.ID, UsedAs: "instruction"}}
	}))
	if tr, err := s.Trail(ctx, e.ID); err != nil || len(tr.Recalls) != 1 || tr.Recalls[0].UsedAs != "" {
		t.Fatalf("after another workspace's decision: %+v (%v), want the item unused", tr.Recalls, err)
	}
	if err := s.RecordUse(ctx, resp.RecallID, "dec_manual", []store.MemoryUse{{MemoryID: e.ID, UsedAs: "background"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordUse(ctx, "rcl_missing", "", nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RecordUse(unknown recall): %v, want ErrNotFound", err)
	}
	for _, tc := range []struct{ id, as, used, dec string }{
		{c.ID, "policy_hit", "instruction", r.DecisionID},
		{e.ID, "memory", "background", "dec_manual"},
	} {
		tr, err := s.Trail(ctx, tc.id)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Recalls) != 1 {
			t.Fatalf("%s recalls %+v, want 1", tc.id, tr.Recalls)
		}
		u := tr.Recalls[0]
		if u.RecallID != resp.RecallID || u.ReturnedAs != tc.as || u.UsedAs != tc.used || u.DecisionID != tc.dec || u.Query != "push release tag" || u.Rank < 1 {
			t.Errorf("%s recall use %+v, want returned as %s used as %s by %s", tc.id, u, tc.as, tc.used, tc.dec)
		}
	}
}

func testReviewActions(t *testing.T, s store.Store) {
	w := write(t, s, lessonDecision("k-ra"))
	id := w.Memories[0]
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: id, Action: "bless", Actor: "ana"}); !store.IsInvalid(err) {
		t.Errorf("unknown action: %v", err)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: id, Action: store.ActConfirm}); !store.IsInvalid(err) {
		t.Errorf("action without actor: %v", err)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: "mem_nope", Action: store.ActConfirm, Actor: "ana"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown memory: %v", err)
	}
	m, it := review(t, s, store.ReviewAction{ID: id, Action: store.ActEdit, Summary: "Run go test ./... before deploying billing"})
	if m.Summary != "Run go test ./... before deploying billing" || it.Status != store.ReviewPending {
		t.Fatalf("edit: %q item %s", m.Summary, it.Status)
	}
	m, _ = review(t, s, store.ReviewAction{ID: id, Action: store.ActRestrictScope, Visibility: store.ProjectVisible, Project: "billing"})
	if m.Scope.Visibility != store.ProjectVisible || m.Scope.Project != "billing" {
		t.Fatalf("restrict_scope: %+v", m.Scope)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: id, Action: store.ActRestrictScope, Actor: "ana", Visibility: store.Org}); !store.IsInvalid(err) {
		t.Errorf("widening scope: %v, want validation error", err)
	}
	_, it = review(t, s, store.ReviewAction{ID: id, Action: store.ActEscalate})
	if it.Status != store.ReviewEscalated || it.Priority != store.High {
		t.Fatalf("escalate: %+v", it)
	}
	m, it = review(t, s, store.ReviewAction{ID: it.ID, Action: store.ActReject})
	if m.Lifecycle != store.Rejected || m.UsePolicy != store.DoNotInject || it.Status != store.ReviewResolved {
		t.Fatalf("reject: %s %s item %s", m.Lifecycle, m.UsePolicy, it.Status)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: it.ID, Action: store.ActConfirm, Actor: "ana"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("confirm a resolved item: %v, want ErrConflict", err)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: id, Action: store.ActConfirm, Actor: "ana"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("confirm a rejected memory: %v, want ErrConflict", err)
	}
	resp := recall(t, s, "deploying billing", func(q *store.RecallRequest) {
		q.Scope.IncludeUnconfirmed, q.Scope.IncludeDisputed, q.Scope.IncludeStale = true, true, true
		q.Project = "billing"
	})
	if slices.Contains(ids(resp), id) {
		t.Errorf("rejected memory recalled")
	}
	// merge
	a := put(t, s, evidence("mem_m1", "ci cache is flaky", "system:ci"))
	b := put(t, s, evidence("mem_m2", "the ci cache fails sometimes", "topic:cache"))
	m, _ = review(t, s, store.ReviewAction{ID: b.ID, Action: store.ActMerge, Other: a.ID})
	if m.Lifecycle != store.Merged || m.SupersededBy != a.ID {
		t.Fatalf("merge source: %s -> %q", m.Lifecycle, m.SupersededBy)
	}
	into, _ := s.GetMemory(ctx, a.ID)
	if into.Occurrences != 2 || !slices.Contains(into.Entities, "topic:cache") {
		t.Fatalf("merge target: occurrences %d entities %v", into.Occurrences, into.Entities)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: a.ID, Action: store.ActSupersede, Actor: "ana", Other: "mem_nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("supersede by unknown memory: %v, want ErrNotFound", err)
	}
	// mark_stale
	st := put(t, s, evidence("mem_st", "the staging database lives on db3"))
	m, _ = review(t, s, store.ReviewAction{ID: st.ID, Action: store.ActMarkStale})
	if !m.Freshness.Stale || m.UsePolicy != store.DoNotInject {
		t.Fatalf("mark_stale: %+v %s", m.Freshness, m.UsePolicy)
	}
	resp = recall(t, s, "staging database")
	if slices.Contains(ids(resp), st.ID) || !warned(resp, "excluded_stale", st.ID) {
		t.Errorf("stale memory: recalled %v warnings %+v", ids(resp), resp.Warnings)
	}
}

func testStaleAndLimits(t *testing.T, s store.Store) {
	past := evidence("mem_past", "the release branch is frozen")
	past.Freshness.StaleAfter = time.Now().Add(-time.Hour)
	put(t, s, past)
	resp := recall(t, s, "release branch frozen")
	if slices.Contains(ids(resp), past.ID) || !warned(resp, "excluded_stale", past.ID) {
		t.Fatalf("past stale_after: %v %+v", ids(resp), resp.Warnings)
	}
	resp = recall(t, s, "release branch frozen", func(q *store.RecallRequest) { q.Scope.IncludeStale = true })
	if !slices.Contains(ids(resp), past.ID) || len(resp.PolicyHits) != 0 {
		t.Fatalf("include_stale: %v", ids(resp))
	}
	for i := range 5 {
		put(t, s, evidence(fmt.Sprintf("mem_lim%d", i), fmt.Sprintf("terraform apply changed %d resources in prod", i)))
	}
	resp = recall(t, s, "terraform apply prod", func(q *store.RecallRequest) { q.Limits.MaxItems = 2 })
	if len(resp.Memories) != 2 || !warned(resp, "truncated_max_items", "") {
		t.Fatalf("max_items 2: %v %+v", ids(resp), resp.Warnings)
	}
	resp = recall(t, s, "terraform apply prod", func(q *store.RecallRequest) { q.Limits.MaxTokens = 25 })
	if len(resp.Memories) != 1 || !warned(resp, "truncated_max_tokens", "") {
		t.Fatalf("max_tokens 25: %v %+v", ids(resp), resp.Warnings)
	}
	old := evidence("mem_recency", "terraform apply in prod needs a plan review")
	old.Freshness.CreatedAt = time.Now().AddDate(0, 0, -40)
	put(t, s, old)
	resp = recall(t, s, "terraform apply prod plan review", func(q *store.RecallRequest) { q.Limits.RecencyDays = 30; q.Limits.MaxItems = 20 })
	if slices.Contains(ids(resp), old.ID) {
		t.Fatalf("recency_days 30 returned a 40-day-old memory")
	}
}

func testHumanCorrection(t *testing.T, s store.Store) {
	write(t, s, lessonDecision("k-hc-model"))
	r := write(t, s, decision("k-hc-human", func(d *store.Decision) {
		d.Judge = store.Judge{Kind: "human"}
		d.Decision = store.Revise
		d.MemoryToWrite.Lessons = []string{"Use the staging bucket for test uploads, never prod"}
		d.MemoryToWrite.Provenance.DefaultStatus = store.UserConfirmed
	}))
	items, err := s.ListReview(ctx, store.ReviewFilter{})
	if err != nil || len(items) != 2 {
		t.Fatalf("queue %+v (%v)", items, err)
	}
	if items[0].ID != r.Review[0] || items[0].Priority != store.High {
		t.Fatalf("queue head %+v, want the human correction with high priority", items[0])
	}
	m, _ := s.GetMemory(ctx, r.Memories[0])
	if m.UsePolicy == store.Instruction {
		t.Fatalf("human correction injected before review")
	}
}

func testApprovals(t *testing.T, s store.Store) {
	a, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_1", Tool: "Bash", Summary: "git push --force origin main", Reason: "high risk", RiskClass: "high_risk", Session: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != store.ApprovalPending || a.TimeoutAt.Sub(a.CreatedAt) != store.DefaultApprovalTimeout {
		t.Fatalf("new approval %+v: want pending with a 30 minute timeout", a)
	}
	again, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_1", Tool: "Other"})
	if err != nil || again.Tool != "Bash" {
		t.Fatalf("resubmit: %+v %v, want the stored approval", again, err)
	}
	if _, err := s.ResolveApproval(ctx, "apr_1", store.Resolution{Status: store.ApprovalModified, By: "ana"}); !store.IsInvalid(err) {
		t.Errorf("modify without arguments: %v", err)
	}
	got, err := s.ResolveApproval(ctx, "apr_1", store.Resolution{Status: store.ApprovalEscalated, By: "ana", Owner: "sec-team"})
	if err != nil || got.Status != store.ApprovalEscalated || got.Owner != "sec-team" {
		t.Fatalf("escalate: %+v %v", got, err)
	}
	got, err = s.ResolveApproval(ctx, "apr_1", store.Resolution{Status: store.ApprovalModified, By: "bo", Arguments: []byte(`{"command":"git push origin main"}`)})
	if err != nil || got.Status != store.ApprovalModified || string(got.Arguments) != `{"command":"git push origin main"}` || !got.Allows() {
		t.Fatalf("modify: %+v %v", got, err)
	}
	if _, err := s.ResolveApproval(ctx, "apr_1", store.Resolution{Status: store.ApprovalRejected, By: "cy"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second resolution: %v, want ErrConflict", err)
	}
	if _, err := s.ResolveApproval(ctx, "apr_nope", store.Resolution{Status: store.ApprovalApproved, By: "cy"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown approval: %v, want ErrNotFound", err)
	}
	past := time.Now().Add(-2 * time.Hour)
	if _, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_old", Tool: "Bash", Summary: "rm -rf build", CreatedAt: past}); err != nil {
		t.Fatal(err)
	}
	exp, err := s.GetApproval(ctx, "apr_old")
	if err != nil || exp.Status != store.ApprovalExpired || exp.Allows() {
		t.Fatalf("overdue approval: %+v %v, want expired", exp, err)
	}
	if _, err := s.ResolveApproval(ctx, "apr_old", store.Resolution{Status: store.ApprovalApproved, By: "ana"}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("approve expired: %v, want ErrConflict", err)
	}
	s.SubmitApproval(ctx, store.Approval{ID: "apr_2", Tool: "Write", Summary: "edit prod config"})
	pend, err := s.ListApprovals(ctx, store.ApprovalPending)
	if err != nil || len(pend) != 1 || pend[0].ID != "apr_2" {
		t.Fatalf("pending list %+v %v", pend, err)
	}
	all, _ := s.ListApprovals(ctx, "")
	if len(all) != 3 {
		t.Fatalf("all approvals: %d, want 3", len(all))
	}
}

// testCreator: an approval's and a decision's creator (the API token
// that made it) is stored, read back by every read, kept by resolution,
// expiry and replays, and never taken from a second submitter.
func testCreator(t *testing.T, s store.Store) {
	a, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_c1", Tool: "Bash", Summary: "deploy", Creator: "tok_a"})
	if err != nil || a.Creator != "tok_a" {
		t.Fatalf("submit: %+v %v, want creator tok_a", a, err)
	}
	again, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_c1", Tool: "Bash", Summary: "deploy", Creator: "tok_b"})
	if err != nil || again.Creator != "tok_a" {
		t.Fatalf("resubmit by another token: %+v %v, want the stored creator tok_a", again, err)
	}
	if got, err := s.GetApproval(ctx, "apr_c1"); err != nil || got.Creator != "tok_a" {
		t.Fatalf("get: %+v %v, want creator tok_a", got, err)
	}
	res, err := s.ResolveApproval(ctx, "apr_c1", store.Resolution{Status: store.ApprovalApproved, By: "ana"})
	if err != nil || res.Creator != "tok_a" {
		t.Fatalf("resolve: %+v %v, want creator tok_a", res, err)
	}
	if got, _ := s.GetApproval(ctx, "apr_c1"); got.Creator != "tok_a" || got.Status != store.ApprovalApproved {
		t.Fatalf("after resolve: %+v", got)
	}
	if _, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_c2", Tool: "Bash", Summary: "rm", Creator: "tok_b", CreatedAt: time.Now().Add(-2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetApproval(ctx, "apr_c2"); got.Status != store.ApprovalExpired || got.Creator != "tok_b" {
		t.Fatalf("expired: %+v, want creator tok_b", got)
	}
	if _, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_c3", Tool: "Bash", Summary: "hook"}); err != nil {
		t.Fatal(err)
	}
	all, err := s.ListApprovals(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"apr_c1": "tok_a", "apr_c2": "tok_b", "apr_c3": ""}
	if len(all) != len(want) {
		t.Fatalf("list: %d approvals, want %d", len(all), len(want))
	}
	for _, a := range all {
		if c, ok := want[a.ID]; !ok || a.Creator != c {
			t.Errorf("list: %s creator %q, want %q", a.ID, a.Creator, c)
		}
	}

	r := write(t, s, decision("k-creator", func(d *store.Decision) { d.Creator = "tok_a" }))
	if d, err := s.GetDecision(ctx, r.DecisionID); err != nil || d.Creator != "tok_a" {
		t.Fatalf("get decision: creator %q %v, want tok_a", d.Creator, err)
	}
	rep := write(t, s, decision("k-creator", func(d *store.Decision) { d.Creator = "tok_b" }))
	if !rep.Replayed || rep.DecisionID != r.DecisionID {
		t.Fatalf("replay by another token: %+v", rep)
	}
	if d, _ := s.GetDecision(ctx, r.DecisionID); d.Creator != "tok_a" {
		t.Fatalf("after a replay by tok_b the creator is %q, want tok_a", d.Creator)
	}
	r2 := write(t, s, decision("k-nocreator"))
	if d, err := s.GetDecision(ctx, r2.DecisionID); err != nil || d.Creator != "" {
		t.Fatalf("decision without a creator: %q %v", d.Creator, err)
	}
}

func testApprovalWait(t *testing.T, s store.Store) {
	s.SubmitApproval(ctx, store.Approval{ID: "apr_w", Tool: "Bash", Summary: "deploy"})
	go func() {
		time.Sleep(30 * time.Millisecond)
		s.ResolveApproval(ctx, "apr_w", store.Resolution{Status: store.ApprovalApproved, By: "ana"})
	}()
	a, err := store.Wait(ctx, s, "apr_w", 5*time.Second)
	if err != nil || !a.Allows() {
		t.Fatalf("Wait: %+v %v, want approved", a, err)
	}
	s.SubmitApproval(ctx, store.Approval{ID: "apr_w2", Tool: "Bash", Summary: "deploy"})
	a, err = store.Wait(ctx, s, "apr_w2", 60*time.Millisecond)
	if !errors.Is(err, store.ErrWaitTimeout) || a.Allows() {
		t.Fatalf("Wait on nobody: %+v %v, want ErrWaitTimeout and no permission", a, err)
	}
	s.SubmitApproval(ctx, store.Approval{ID: "apr_w3", Tool: "Bash", Summary: "deploy", CreatedAt: time.Now().Add(-time.Hour)})
	a, err = store.Wait(ctx, s, "apr_w3", time.Second)
	if !errors.Is(err, store.ErrWaitTimeout) || a.Status != store.ApprovalExpired {
		t.Fatalf("Wait on expired: %+v %v", a, err)
	}
	s.SubmitApproval(ctx, store.Approval{ID: "apr_w4", Tool: "Bash", Summary: "deploy"})
	s.ResolveApproval(ctx, "apr_w4", store.Resolution{Status: store.ApprovalRejected, By: "ana"})
	a, err = store.Wait(ctx, s, "apr_w4", time.Second)
	if err != nil || a.Allows() || a.Status != store.ApprovalRejected {
		t.Fatalf("Wait on rejected: %+v %v", a, err)
	}
}

func testInspect(t *testing.T, s store.Store) {
	r := write(t, s, lessonDecision("k-insp"))
	id := r.Memories[0]
	review(t, s, store.ReviewAction{ID: id, Action: store.ActConfirm, Actor: "ana", Note: "seen it twice"})
	resp := recall(t, s, "deploy billing service to production")
	write(t, s, decision("k-insp-use", func(d *store.Decision) {
		d.RecallID = resp.RecallID
		d.MemoryUsed = []store.MemoryUse{{MemoryID: id, UsedAs: "instruction"}}
	}))
	newer := put(t, s, confirmed("mem_newer", "run go test and the smoke suite before deploying billing"))
	review(t, s, store.ReviewAction{ID: id, Action: store.ActSupersede, Actor: "bo", Other: newer.ID})
	in, err := store.Inspect(ctx, s, id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if in.Decision == nil || in.Decision.DecisionID != r.DecisionID || !strings.Contains(in.Why, r.DecisionID) {
		t.Errorf("why %q decision %v", in.Why, in.Decision)
	}
	var actions []string
	for _, e := range in.History {
		actions = append(actions, e.Actor+":"+e.Action)
	}
	if !slices.Equal(actions, []string{"ana:confirm", "bo:supersede"}) {
		t.Errorf("history %v", actions)
	}
	if len(in.Recalls) != 1 || in.Recalls[0].UsedAs != "instruction" {
		t.Errorf("recalls %+v", in.Recalls)
	}
	if in.Injectable || len(in.Conflicts) != 1 || in.Conflicts[0].MemoryID != newer.ID || in.Conflicts[0].Relation != "superseded_by" {
		t.Errorf("injectable %v conflicts %+v", in.Injectable, in.Conflicts)
	}
	nin, err := store.Inspect(ctx, s, newer.ID, time.Now())
	if err != nil || len(nin.Conflicts) != 1 || nin.Conflicts[0].Relation != "supersedes" || !nin.Injectable {
		t.Errorf("newer: %+v %v", nin.Conflicts, err)
	}
}

// A lesson starts with its source decision's outcome (block); the
// reviewer changes what it requires, and recall follows the review, not
// the source decision.
func testReviewSetsBehavior(t *testing.T, s store.Store) {
	r := write(t, s, lessonDecision("k-behavior"))
	if len(r.Review) != 1 {
		t.Fatalf("write result %+v: want one review item", r)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: r.Review[0], Action: store.ActEdit, Actor: "ana", Behavior: "maybe"}); !store.IsInvalid(err) {
		t.Errorf("unknown behavior: %v", err)
	}
	if _, _, err := s.Review(ctx, store.ReviewAction{ID: r.Review[0], Action: store.ActReject, Actor: "ana", Behavior: "allow"}); !store.IsInvalid(err) {
		t.Errorf("behavior on reject: %v", err)
	}
	m, it := review(t, s, store.ReviewAction{ID: r.Review[0], Action: store.ActEdit, Behavior: "escalate"})
	if m.Behavior != "escalate" || it.Status == store.ReviewResolved {
		t.Fatalf("after edit: behavior %q item %s", m.Behavior, it.Status)
	}
	got, err := s.GetMemory(ctx, m.ID)
	if err != nil || got.Behavior != "escalate" {
		t.Fatalf("stored behavior %q (%v)", got.Behavior, err)
	}
	review(t, s, store.ReviewAction{ID: r.Review[0], Action: store.ActConfirm, As: store.Instruction})
	similar := func(q *store.RecallRequest) {
		q.Query.Entities.Systems = []string{"prod"}
		q.Query.Entities.Repos = []string{"billing"}
	}
	after := recall(t, s, "deploying the billing service to production again", similar)
	if len(after.PolicyHits) != 1 || after.PolicyHits[0].RequiredBehavior != "escalate" {
		t.Fatalf("policy hits %+v, want the lesson requiring escalate", after.PolicyHits)
	}
	// confirm can set it too
	r2 := write(t, s, decision("k-behavior-2", func(d *store.Decision) {
		d.MemoryToWrite.Lessons = []string{"Never push to main without approval"}
	}))
	m2, _ := review(t, s, store.ReviewAction{ID: r2.Review[0], Action: store.ActConfirm, As: store.Instruction, Behavior: "human_review"})
	if m2.Behavior != "human_review" {
		t.Errorf("confirm --behavior: %q", m2.Behavior)
	}
}

// The same lesson from the next identical decision reinforces the
// pending one instead of queueing a second review item.
func testRepeatedLesson(t *testing.T, s store.Store) {
	r1 := write(t, s, lessonDecision("k-rep-1"))
	r2 := write(t, s, lessonDecision("k-rep-2"))
	if len(r1.Memories) != 1 || len(r2.Memories) != 1 || r1.Memories[0] != r2.Memories[0] || len(r2.Review) != 0 {
		t.Fatalf("repeat: %+v then %+v, want the same memory and no second review item", r1, r2)
	}
	m, err := s.GetMemory(ctx, r1.Memories[0])
	if err != nil || m.Occurrences != 2 {
		t.Errorf("occurrences %d (%v), want 2", m.Occurrences, err)
	}
	items, err := s.ListReview(ctx, store.ReviewFilter{})
	if err != nil || len(items) != 1 {
		t.Errorf("review queue %d items (%v), want 1", len(items), err)
	}
	// a different lesson is its own item
	r3 := write(t, s, decision("k-rep-3", func(d *store.Decision) {
		d.MemoryToWrite.Lessons = []string{"Ask before rotating the billing keys"}
	}))
	if len(r3.Review) != 1 || r3.Memories[0] == r1.Memories[0] {
		t.Errorf("different lesson: %+v", r3)
	}
}

// testRelevance: recall ranks by the relevance score — severity from the
// bucket, frequency from recurrences, repeatable patterns — and reports
// each memory's bucket and factors.
func testRelevance(t *testing.T, s store.Store) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	docs := evidence("mem_rel_docs", "cache invalidation bug noted in the readme")
	docs.Freshness.CreatedAt = now.Add(-48 * time.Hour)
	put(t, s, docs)
	sec := evidence("mem_rel_sec", "cache invalidation bug leaked a password")
	sec.Freshness.CreatedAt = now.Add(-48 * time.Hour)
	put(t, s, sec)
	resp := recall(t, s, "cache invalidation bug")
	if got := ids(resp); len(got) != 2 || got[0] != "mem_rel_sec" {
		t.Fatalf("severity ranking %v, want mem_rel_sec (secrets) before mem_rel_docs (docs)", got)
	}
	top, low := resp.Memories[0], resp.Memories[1]
	if top.Bucket != "secrets" || low.Bucket != "docs" || top.Relevance == nil || top.Relevance.Severity != 5 || low.Relevance.Severity != 1 {
		t.Fatalf("buckets %q %q factors %+v %+v", top.Bucket, low.Bucket, top.Relevance, low.Relevance)
	}
	// a docs pattern seen three times outranks both: frequency 3 and a
	// structural pattern (1.5) against severity 5 of a one-off (0.5)
	obs := evidence("", "cache invalidation bug in the docs build")
	obs.PatternKey = "cache-docs"
	for i := uint64(1); i <= 3; i++ {
		obs.Lineage = store.Lineage{Session: "s-rel", Seq: i, EntryHash: fmt.Sprintf("rel%d", i)}
		obs.Freshness = store.Freshness{CreatedAt: now.Add(-time.Duration(3-i) * time.Hour)}
		if _, _, err := s.Observe(ctx, obs); err != nil {
			t.Fatal(err)
		}
	}
	resp = recall(t, s, "cache invalidation bug")
	if len(resp.Memories) != 3 || resp.Memories[0].PatternKey != "cache-docs" || resp.Memories[1].ID != "mem_rel_sec" {
		t.Fatalf("after recurrences: %v", ids(resp))
	}
	if f := resp.Memories[0].Relevance; f.Frequency != 3 || f.Repeatable != 1.5 || f.Decay < 0.99 {
		t.Fatalf("reinforced factors %+v", f)
	}
}

// testRecallAnchor: a shell call recalls memories about its command, not
// every memory of the shell; a one-purpose tool's tag is enough, the words
// of its name are not.
func testRecallAnchor(t *testing.T, s store.Store) {
	put(t, s, evidence("mem_anc_push", "git push to main needs a human", "tool:bash"))
	put(t, s, evidence("mem_anc_kubectl", "run the tests before kubectl apply", "tool:bash", "system:prod"))
	put(t, s, evidence("mem_anc_merge", "merging needs a human approval", "tool:mcp__github__merge_pull_request"))
	put(t, s, evidence("mem_anc_comment", "ask before commenting on github issues", "tool:mcp__github__add_issue_comment"))
	tests := []struct {
		summary, tool string
		want          []string
	}{
		{"Bash git push origin main", "Bash", []string{"mem_anc_push"}},
		{"Bash kubectl apply -f k8s/prod.yaml", "Bash", []string{"mem_anc_kubectl"}},
		{"mcp__github__merge_pull_request pull request 7", "mcp__github__merge_pull_request", []string{"mem_anc_merge"}},
		{"mcp__github__add_issue_comment issue 401", "mcp__github__add_issue_comment", []string{"mem_anc_comment"}},
	}
	for _, tt := range tests {
		resp := recall(t, s, tt.summary, func(q *store.RecallRequest) { q.Query.ToolName = tt.tool })
		if got := ids(resp); !slices.Equal(got, tt.want) {
			t.Errorf("recall %q: got %v, want %v", tt.summary, got, tt.want)
		}
	}
}

// testSessionOwners: the first claim of a session names its owner; a
// later claim, by the same token or another, returns that owner and
// changes nothing; scopes (ledgers) are apart; malformed claims record
// nothing.
func testSessionOwners(t *testing.T, s store.Store) {
	if _, err := s.SessionOwner(ctx, "ledger-1", "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("owner of an unclaimed session: %v, want ErrNotFound", err)
	}
	if got, err := s.ClaimSession(ctx, "ledger-1", "s1", "tok_a"); err != nil || got != "tok_a" {
		t.Fatalf("first claim: %q %v, want tok_a", got, err)
	}
	for _, again := range []string{"tok_b", "tok_a", "tok_A", "tok_a "} {
		if got, err := s.ClaimSession(ctx, "ledger-1", "s1", again); err != nil || got != "tok_a" {
			t.Fatalf("claim by %q of a claimed session: %q %v, want tok_a", again, got, err)
		}
	}
	if got, err := s.SessionOwner(ctx, "ledger-1", "s1"); err != nil || got != "tok_a" {
		t.Fatalf("owner: %q %v, want tok_a", got, err)
	}
	// another ledger's session of the same id, another session of the same ledger
	if got, err := s.ClaimSession(ctx, "ledger-2", "s1", "tok_b"); err != nil || got != "tok_b" {
		t.Fatalf("claim in another scope: %q %v, want tok_b", got, err)
	}
	if got, err := s.ClaimSession(ctx, "ledger-1", "S1", "tok_b"); err != nil || got != "tok_b" {
		t.Fatalf("claim of another session id: %q %v, want tok_b", got, err)
	}
	if got, _ := s.SessionOwner(ctx, "ledger-1", "s1"); got != "tok_a" {
		t.Fatalf("owner after other claims: %q, want tok_a", got)
	}
	if got, err := s.ClaimSession(ctx, "", "s9", "tok_c"); err != nil || got != "tok_c" {
		t.Fatalf("claim with an empty scope: %q %v", got, err)
	}
	for _, c := range []struct{ scope, session, owner, field string }{
		{"ledger-1", "", "tok_a", "session"},
		{"ledger-1", "s2", "", "owner"},
		{"ledger-1", strings.Repeat("s", store.MaxSessionKey+1), "tok_a", "session"},
		{strings.Repeat("l", store.MaxSessionKey+1), "s2", "tok_a", "scope"},
	} {
		_, err := s.ClaimSession(ctx, c.scope, c.session, c.owner)
		var ve *store.ValidationError
		if !errors.As(err, &ve) || ve.Field != c.field {
			t.Errorf("claim %q/%q by %q: %v, want a validation error on %s", c.scope, c.session, c.owner, err, c.field)
		}
	}
	if _, err := s.SessionOwner(ctx, "ledger-1", "s2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused claim recorded an owner: %v", err)
	}
}

// testSessionClaimRace: many tokens claiming one new session at once
// agree on exactly one owner, one of them.
func testSessionClaimRace(t *testing.T, s store.Store) {
	const n = 16
	for round := 0; round < 3; round++ {
		session := fmt.Sprintf("race-%d", round)
		got := make([]string, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				got[i], errs[i] = s.ClaimSession(ctx, "ledger-race", session, fmt.Sprintf("tok_%02d", i))
			}(i)
		}
		close(start)
		wg.Wait()
		winners := 0
		for i := 0; i < n; i++ {
			if errs[i] != nil {
				t.Fatalf("claim %d: %v", i, errs[i])
			}
			if got[i] != got[0] {
				t.Fatalf("claims disagree: %q and %q", got[0], got[i])
			}
			if got[i] == fmt.Sprintf("tok_%02d", i) {
				winners++
			}
		}
		if winners != 1 {
			t.Fatalf("%d claimants won, want exactly 1 (owner %q)", winners, got[0])
		}
		if o, err := s.SessionOwner(ctx, "ledger-race", session); err != nil || o != got[0] {
			t.Fatalf("owner %q %v, want %q", o, err, got[0])
		}
	}
}
