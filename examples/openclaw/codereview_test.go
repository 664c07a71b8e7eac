package openclaw_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/docket/docket/e2e/modelserver"
)

// TestCodeReviewMemory: an OpenClaw agent reviews a change with docket
// as its judge and memory. The team lets the agent comment on pull
// requests (its tools.yaml drops the default rule messages-need-approval).
// Repo rules are recalled; approving is denied (a human's act, rule
// no-review-approval) and the merge is escalated; a maintainer's
// correction becomes a lesson in review, is confirmed with `docket
// review confirm`, and a second, similar review recalls it: the judge
// escalates the public comment it allowed the first time.
func TestCodeReviewMemory(t *testing.T) {
	w := newWorld(t, withoutRule("messages-need-approval"))
	const ws = "acme-review"
	// repo rules and a maintainer preference, reviewed and confirmed
	ruleItems, rules := w.remember(ws, "seed-repo-rules", "escalate", "repo rules for pull requests", map[string][]string{
		"constraints": {"Repo rule: merging into main needs a maintainer's approval; reviewers never approve and merge themselves"},
	})
	w.confirm(ruleItems, "can_use_as_instruction")
	prefItems, _ := w.remember(ws, "seed-prefs", "allow", "maintainer preferences", map[string][]string{
		"lessons":  {"Maintainer preference: review comments are short and name the file and line"},
		"failures": {"Known failure pattern: auth session refresh changes broke login twice; review auth changes twice"},
	})
	w.confirm(prefItems, "can_use_as_evidence")

	files := map[string]string{"CHANGE.diff": "--- a/auth/session.go\n+++ b/auth/session.go\n@@\n-\treturn refresh(tok)\n+\treturn refreshOnce(tok)\n"}
	comment := `gh pr comment 42 --body "auth/session.go:12: LGTM"`
	first := w.runOpenClaw("review-1", ws, "Review pull request 42 (CHANGE.diff), comment on it and approve and merge it if it is good.", []modelserver.Turn{
		{Tool: modelserver.Read, Path: "CHANGE.diff"},
		{Tool: modelserver.Shell, Command: comment},
		{Tool: modelserver.Shell, Command: "gh pr review 42 --approve"},
		{Tool: modelserver.Shell, Command: "gh pr merge 42 --squash"},
		{Text: "Review of pull request 42: one comment left; the merge waits for a maintainer."},
	}, files)

	// the recalled rules reached the model, and the read ran
	if !strings.Contains(first.allMainText(), "needs a maintainer's approval") {
		t.Errorf("the repo rule was not recalled into the prompt")
	}
	if h := first.hook("before_tool_call", "read"); len(h) == 0 || h[0]["decision"] != "allow" {
		t.Fatalf("read: %v", h)
	}
	// the public comment went through the first time
	c1 := first.commandHook("gh pr comment")
	if c1 == nil || c1["decision"] != "allow" {
		t.Fatalf("first comment: %v", c1)
	}
	// the approval: denied by the default rule
	a := first.commandHook("gh pr review")
	if a == nil || a["decision"] != "block" || !strings.Contains(fmt.Sprint(a["reason"]), "no-review-approval") {
		t.Fatalf("the approval was not blocked by no-review-approval: %v", a)
	}
	// the merge: escalated, with the repo rule used
	m := first.commandHook("gh pr merge")
	if m == nil || m["decision"] != "escalate" || m["approvalId"] == "" {
		t.Fatalf("the merge was not escalated: %v", m)
	}
	if !contains(memoryIDs(m), rules[0]) {
		t.Errorf("the escalation did not use the repo rule %s: %v", rules[0], m["memoryUsed"])
	}
	if !strings.Contains(first.allMainText(), "escalated for human approval "+m["approvalId"].(string)) {
		t.Errorf("the model never saw the escalation naming the approval")
	}
	approvals := w.api("GET", "/v1/approvals?status=pending", w.reviewer, nil, 200)["approvals"].([]any)
	if len(approvals) != 1 {
		t.Fatalf("pending approvals: %v", approvals)
	}
	if len(first.hook("after_tool_call", "")) < 3 {
		t.Errorf("after_tool_call entries: %v", first.hook("after_tool_call", ""))
	}

	// the maintainer's correction: public comments on auth changes need approval
	items, lesson := w.remember(ws, "correction-pr-42", "escalate", "maintainer correction of review 42", map[string][]string{
		"lessons": {"gh pr comment on auth changes: post public review comments only after a maintainer approves them"},
	})
	// in review, not yet instruction-grade
	q := w.api("GET", "/v1/review-queue?status=pending", w.reviewer, nil, 200)["items"].([]any)
	if len(q) == 0 {
		t.Fatal("the correction is not in the review queue")
	}
	w.docket("review", "confirm", items[0], "--as", "instruction", "--behavior", "escalate")

	second := w.runOpenClaw("review-2", ws, "Review pull request 43 (CHANGE.diff) and comment on it.", []modelserver.Turn{
		{Tool: modelserver.Shell, Command: `gh pr comment 43 --body "auth/session.go:12: LGTM"`},
		{Text: "Review of pull request 43: the comment waits for a maintainer."},
	}, files)
	c2 := second.commandHook("gh pr comment")
	if c2 == nil || c2["decision"] != "escalate" {
		t.Fatalf("the second, similar comment was not escalated: %v", c2)
	}
	if !contains(memoryIDs(c2), lesson[0]) {
		t.Errorf("the escalation did not use the confirmed lesson %s: %v", lesson[0], c2["memoryUsed"])
	}
	if !strings.Contains(second.allMainText(), lesson[0]) {
		t.Errorf("the model never saw the lesson %s", lesson[0])
	}
	w.docket("verify", "--all")
}
