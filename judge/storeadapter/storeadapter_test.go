package storeadapter_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/judgetest"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
	"github.com/docket/docket/store/memstore"
)

const defaultJudges = `---
schema: docket.judges.v1
---
`

func push(cwd, id string) *hooks.Event {
	in, _ := json.Marshal(map[string]string{"command": "git push origin main"})
	return &hooks.Event{Runtime: hooks.Claude, Name: hooks.PreToolUse, SessionID: "s1", Cwd: cwd, ToolName: "Bash", ToolInput: in, ToolUseID: id}
}

// storeEngine is a judge engine whose recall, write-back and approvals
// go through the adapter to a fresh in-memory store.
func storeEngine(t *testing.T) (*memstore.Store, *judge.Engine) {
	ms := &memstore.Store{}
	ad := storeadapter.New(ms)
	h, _ := home.At(t.TempDir())
	e := judge.NewEngine(h, judgetest.BaseSet(t, defaultJudges))
	e.OpenRecall = func(context.Context) (judge.Recaller, error) { return ad, nil }
	e.Writer, e.Approvals = ad, ad
	return ms, e
}

// The adapter carries a decision into the store and the next similar call
// recalls it as precedent; a headless escalation waits on the store's
// approval queue.
func TestPrecedentAndApproval(t *testing.T) {
	ms, e := storeEngine(t)
	ctx := context.Background()
	cwd := t.TempDir()

	a, d := e.Decide(ctx, push(cwd, "toolu_1"))
	if a.Decision != hooks.Ask || !strings.HasPrefix(d.Recall, "ok") {
		t.Fatalf("first push: %q recall %q", a.Decision, d.Recall)
	}
	st, err := ms.GetDecision(ctx, "dec_"+strings.TrimPrefix(d.IdempotencyKey, "sha256:")[:24])
	if err != nil || st.Decision != store.Escalate || st.ArgumentsDigest != d.ArgumentsHash || st.Judge.Kind != "rule" {
		t.Fatalf("decision not written back: %+v %v", st, err)
	}
	// the decision's memory enters review; a human keeps it as evidence
	items, err := ms.ListReview(ctx, store.ReviewFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if _, _, err := ms.Review(ctx, store.ReviewAction{ID: it.ID, Action: store.ActEvidenceOnly, Actor: "test"}); err != nil {
			t.Fatalf("review %s: %v", it.ID, err)
		}
	}
	_, d2 := e.Decide(ctx, push(cwd, "toolu_2"))
	if !strings.Contains(d2.Reason, "precedent") || len(d2.MemoriesUsed) == 0 {
		t.Errorf("second push did not recall the first: recall %q reason %q", d2.Recall, d2.Reason)
	}

	e.Headless = true
	done := make(chan hooks.Answer, 1)
	go func() { a, _ := e.Decide(ctx, push(cwd, "toolu_3")); done <- a }()
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if as, _ := ms.ListApprovals(ctx, store.ApprovalPending); len(as) > 0 {
			id = as[0].ID
		}
	}
	if id == "" {
		t.Fatal("no approval submitted")
	}
	if _, err := ms.ResolveApproval(ctx, id, store.Resolution{Status: store.ApprovalApproved, By: "ana"}); err != nil {
		t.Fatal(err)
	}
	if a := <-done; a.Decision != hooks.Allow || !strings.Contains(a.Reason, "ana") {
		t.Errorf("approved escalation answered %q %q", a.Decision, a.Reason)
	}
}

func TestApprovalOutcomes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		res  store.Resolution
		want string
		args bool
	}{
		{store.Resolution{Status: store.ApprovalRejected, By: "ana", Note: "no"}, judge.ApprovalDenied, false},
		{store.Resolution{Status: store.ApprovalModified, By: "ana", Arguments: json.RawMessage(`{"command":"ls"}`)}, judge.ApprovalApproved, true},
	} {
		ms := &memstore.Store{}
		ad := storeadapter.New(ms)
		id, err := ad.Submit(ctx, judge.ApprovalItem{SessionID: "s", ActionID: "a", ToolName: "Bash", Reason: "r", ExpiresAt: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		id2, _ := ad.Submit(ctx, judge.ApprovalItem{SessionID: "s", ActionID: "a", ToolName: "Bash", Reason: "r"})
		if id2 != id {
			t.Errorf("resubmission queued twice: %s %s", id, id2)
		}
		if _, err := ms.ResolveApproval(ctx, id, tc.res); err != nil {
			t.Fatal(err)
		}
		r, err := ad.Wait(ctx, id, time.Second)
		if err != nil || r.Status != tc.want || (r.Arguments != nil) != tc.args {
			t.Errorf("%s: %+v %v", tc.res.Status, r, err)
		}
	}
	ms := &memstore.Store{}
	ad := storeadapter.New(ms)
	id, _ := ad.Submit(ctx, judge.ApprovalItem{SessionID: "s", ActionID: "b", ToolName: "Bash", Reason: "r", ExpiresAt: time.Now().Add(time.Minute)})
	if r, err := ad.Wait(ctx, id, 30*time.Millisecond); err != nil || r.Status != judge.ApprovalExpired {
		t.Errorf("unanswered approval: %+v %v", r, err)
	}
}

// A judge write-back that produces a lesson candidate enters the review
// queue (once, however often the call repeats); a reviewer sets what it
// requires and confirms it; the next similar call is escalated by it and
// records it in memories_used.
func TestLessonReviewLoop(t *testing.T) {
	ms := &memstore.Store{}
	ad := storeadapter.New(ms)
	h, _ := home.At(t.TempDir())
	e := judge.NewEngine(h, judgetest.BaseSet(t, defaultJudges))
	e.OpenRecall = func(context.Context) (judge.Recaller, error) { return ad, nil }
	e.Writer = ad
	ctx := context.Background()
	cwd := t.TempDir()
	e.Decide(ctx, push(cwd, "toolu_1"))
	e.Decide(ctx, push(cwd, "toolu_2"))
	items, err := ms.ListReview(ctx, store.ReviewFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var lessonItem store.ReviewItem
	n := 0
	for _, it := range items {
		m, _ := ms.GetMemory(ctx, it.MemoryID)
		if strings.HasPrefix(m.Content, "Ask a human before Bash") {
			lessonItem = it
			n++
		}
	}
	if n != 1 || lessonItem.Suggested != store.Instruction {
		t.Fatalf("review queue %+v: want one lesson candidate suggested as instruction", items)
	}
	// the lesson came from an escalation; the reviewer makes it a block
	m, _, err := ms.Review(ctx, store.ReviewAction{ID: lessonItem.ID, Action: store.ActConfirm, Actor: "ana", As: store.Instruction, Behavior: "block"})
	if err != nil || m.Behavior != "block" {
		t.Fatalf("confirm: %v %q", err, m.Behavior)
	}
	a, d := e.Decide(ctx, push(cwd, "toolu_3"))
	instruction := false
	for _, u := range d.MemoriesUsed {
		instruction = instruction || u.MemoryID == m.ID && u.UsedAs == "instruction"
	}
	if a.Decision != hooks.Deny || !instruction {
		t.Errorf("after the confirmed lesson: %q used %+v reason %q", a.Decision, d.MemoriesUsed, d.Reason)
	}
	// the lesson, learnt from Claude Code's Bash, holds for the same push
	// by another runtime's shell
	for _, ev := range []*hooks.Event{
		{Runtime: hooks.Gemini, Name: hooks.PreToolUse, SessionID: "s2", Cwd: cwd, ToolName: "run_shell_command", ToolInput: json.RawMessage(`{"command":"git push origin main","description":"publish"}`), ToolUseID: "gemini_1"},
		{Runtime: hooks.Codex, Name: hooks.PreToolUse, SessionID: "s3", Cwd: cwd, ToolName: "exec_command", ToolInput: json.RawMessage(`{"cmd":["git","push","origin","main"]}`), ToolUseID: "call_1"},
	} {
		a, d := e.Decide(ctx, ev)
		instruction := false
		for _, u := range d.MemoriesUsed {
			instruction = instruction || u.MemoryID == m.ID && u.UsedAs == "instruction"
		}
		if a.Decision != hooks.Deny || !instruction {
			t.Errorf("%s: the confirmed lesson did not decide: %q used %+v reason %q", ev.ToolName, a.Decision, d.MemoriesUsed, d.Reason)
		}
	}
}

// A runtime's own name for its shell is a broad tool, as Bash is: what
// another shell call left behind comes back for the words it shares with
// the call, not for the tool name alone.
func TestRecallOtherRuntimeShellIsBroad(t *testing.T) {
	// the write-back firewall withholds text it cannot scan
	firewall.UseDetector(gitleaks.Detect)
	t.Cleanup(func() { firewall.UseDetector(nil) })
	ms, e := storeEngine(t)
	ctx := context.Background()
	cwd := t.TempDir()
	gemini := func(id, cmd, desc string) *hooks.Event {
		in, _ := json.Marshal(map[string]string{"command": cmd, "description": desc})
		return &hooks.Event{Runtime: hooks.Gemini, Name: hooks.PreToolUse, SessionID: "s1", Cwd: cwd, ToolName: "run_shell_command", ToolInput: in, ToolUseID: id}
	}
	e.Decide(ctx, gemini("g1", "npm publish --access public", "Publish the package"))
	// its memory enters review; a human keeps it as evidence
	items, err := ms.ListReview(ctx, store.ReviewFilter{})
	if err != nil || len(items) == 0 {
		t.Fatalf("review queue: %v %v", items, err)
	}
	for _, it := range items {
		if _, _, err := ms.Review(ctx, store.ReviewAction{ID: it.ID, Action: store.ActEvidenceOnly, Actor: "test"}); err != nil {
			t.Fatalf("review %s: %v", it.ID, err)
		}
	}
	_, d := e.Decide(ctx, gemini("g2", "git push origin main", "Push the branch"))
	if d.Recall != "ok: 0 memories" {
		t.Errorf("recall for a push after a publish: %q, want nothing (they share only the tool): %s", d.Recall, d.Reason)
	}
	_, d = e.Decide(ctx, gemini("g3", "npm publish --access public --tag next", "Publish the next release"))
	if d.Recall == "ok: 0 memories" || !strings.HasPrefix(d.Recall, "ok:") {
		t.Errorf("recall for a second publish: %q, want the first one's precedent", d.Recall)
	}
}
