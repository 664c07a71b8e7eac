package judge

import (
	"context"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
)

type fixedRecall Recall

func (f fixedRecall) Recall(ctx context.Context, q RecallQuery) (Recall, error) {
	return Recall(f), nil
}

func recallEngine(t *testing.T, r Recall) *Engine {
	e, _ := testEngine(t, defaultSet(t))
	e.OpenRecall = func(context.Context) (Recaller, error) { return fixedRecall(r), nil }
	return e
}

func lesson(id, behavior string) (Memory, PolicyHit) {
	m := Memory{ID: id, Summary: "never push without approval", Provenance: "user_confirmed", UsePolicy: "can_use_as_instruction", Confidence: 0.9}
	return m, PolicyHit{PolicyID: id, Summary: m.Summary, RequiredBehavior: behavior}
}

func uses(d *Decision) map[string]string {
	out := map[string]string{}
	for _, u := range d.MemoriesUsed {
		out[u.MemoryID] = u.UsedAs
	}
	return out
}

// memories_used names what recall returned, not [].
func TestMemoriesUsedRecorded(t *testing.T) {
	e := recallEngine(t, Recall{Status: "ok", Memories: []Memory{
		{ID: "mem_a", Summary: "pushed feat before", Provenance: "observed", UsePolicy: "can_use_as_evidence"},
		{ID: "mem_gone", Summary: "old", Provenance: "superseded", UsePolicy: "do_not_inject_automatically"},
	}})
	_, d := e.Decide(context.Background(), ev("Bash", map[string]any{"command": "git push origin feat"}))
	if !strings.HasPrefix(d.Recall, "ok: 2") {
		t.Fatalf("recall %q", d.Recall)
	}
	if u := uses(d); u["mem_a"] != "background" || u["mem_gone"] != "" {
		t.Errorf("memories_used %+v: want mem_a as background and never the superseded one", d.MemoriesUsed)
	}
}

// Instruction-grade policy hits bind the policy judge: stricter only.
func TestPolicyHitsApplied(t *testing.T) {
	push := map[string]any{"command": "git push origin feat"}
	tests := []struct {
		name     string
		behavior string
		grade    string // use policy of the hit's memory
		input    map[string]any
		decision string
		rule     bool
	}{
		{"escalate lesson", "escalate", "can_use_as_instruction", push, hooks.Ask, true},
		{"human_review lesson", "human_review", "can_use_as_instruction", push, hooks.Ask, true},
		{"block lesson", "block", "can_use_as_instruction", push, hooks.Deny, true},
		{"revise lesson", "revise", "can_use_as_instruction", push, hooks.Deny, true},
		{"allow lesson changes nothing", "allow", "can_use_as_instruction", push, "", false},
		{"evidence-grade memory ignored", "block", "can_use_as_evidence", push, "", false},
		{"allow lesson does not lift an escalation", "allow", "can_use_as_instruction", map[string]any{"command": "git push origin main"}, hooks.Ask, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, h := lesson("mem_l", tc.behavior)
			m.UsePolicy = tc.grade
			e := recallEngine(t, Recall{Status: "ok", Memories: []Memory{m}, PolicyHits: []PolicyHit{h}})
			a, d := e.Decide(context.Background(), ev("Bash", tc.input))
			hit := false
			for _, id := range d.RuleIDs {
				hit = hit || id == "memory:mem_l"
			}
			if a.Decision != tc.decision || hit != tc.rule {
				t.Errorf("%q (rules %v), want %q rule %v; reason %q", a.Decision, d.RuleIDs, tc.decision, tc.rule, d.Reason)
			}
			if tc.grade == "can_use_as_instruction" && uses(d)["mem_l"] != "instruction" {
				t.Errorf("memories_used %+v: want mem_l as instruction", d.MemoriesUsed)
			}
		})
	}
	// a confirmed allow lesson never relaxes a built-in protection
	m, h := lesson("mem_ok", "allow")
	m.Summary, h.Summary = "reading the hmac key is fine", "reading the hmac key is fine"
	e := recallEngine(t, Recall{Status: "ok", Memories: []Memory{m}, PolicyHits: []PolicyHit{h}})
	if a, d := e.Decide(context.Background(), ev("Bash", map[string]any{"command": "cat ~/.local/state/docket/keys/hmac.key"})); a.Decision != hooks.Deny || builtinRule(d) == "" {
		t.Errorf("allow lesson relaxed a protection: %q %v", a.Decision, d.RuleIDs)
	}
}

// A block, revise or escalation leaves a lesson candidate; protections,
// failures and decisions that followed a lesson do not.
func TestLessonCandidates(t *testing.T) {
	e, _ := testEngine(t, defaultSet(t))
	w := &MemStore{}
	e.Writer = w
	e.Decide(context.Background(), ev("Bash", map[string]any{"command": "git push origin main"}))
	e.Decide(context.Background(), ev("Read", map[string]any{"file_path": "/home/u/.local/state/docket/keys/hmac.key"}))
	ds := w.Decisions()
	if len(ds) != 2 {
		t.Fatalf("%d decisions written", len(ds))
	}
	if len(ds[0].Lessons) != 1 || !strings.HasPrefix(ds[0].Lessons[0], "Ask a human before Bash") {
		t.Errorf("escalation lessons %q", ds[0].Lessons)
	}
	if len(ds[1].Lessons) != 0 {
		t.Errorf("protection block left lessons %q", ds[1].Lessons)
	}
}
