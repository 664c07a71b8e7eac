package openclaw_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/docket/docket/e2e/modelserver"
)

// TestTaskFlowWorkLog: one step of a multi-step flow. docket recalls the
// flow's task context, prior decisions, blockers, confirmed constraints
// and open questions into the prompt; the agent's handoff claims work
// the record does not show, and the claim gate sends it back for
// revision (the loop cap still applies); the revised handoff passes.
func TestTaskFlowWorkLog(t *testing.T) {
	w := newWorld(t)
	const ws = "acme-flows"
	items, _ := w.remember(ws, "seed-billing-flow", "allow", "work record of flow billing-migration", map[string][]string{
		"decisions":      {"billing-migration decision: keep the v1 billing API until the invoice export is verified"},
		"failures":       {"billing-migration blocker: the invoice export fails on invoices over 10 MB"},
		"constraints":    {"billing-migration constraint: never drop the invoices table"},
		"open_questions": {"billing-migration open question: who signs off the invoice export cut-over?"},
		"lessons":        {"billing-migration task context: step 3 of 5 moves the invoice export to the new billing queue"},
	})
	w.confirm(items, "can_use_as_evidence")

	notes := "billing-migration work log\n- step 3: invoice export moved behind a flag; not run against production data\n"
	r := w.runOpenClaw("flow", ws, "Continue the billing-migration flow: do step 3 (invoice export) and write the handoff for the next step.", []modelserver.Turn{
		{Tool: modelserver.Read, Path: "NOTES.md"},
		{Text: "Handoff: all done — tests pass, the invoice export is ready for the next step."},
		{Text: "Handoff: step 3 is in progress. The invoice export sits behind a flag; the 10 MB case is unresolved. Next owner: fix the export, then validate it."},
	}, map[string]string{"NOTES.md": notes})

	// the work record was recalled into the prompt
	firstMain := r.model.MainRequests()[0].Text()
	for _, want := range []string{"keep the v1 billing API", "fails on invoices over 10 MB", "never drop the invoices table", "who signs off", "step 3 of 5"} {
		if !strings.Contains(firstMain, want) {
			t.Errorf("recall: %q did not reach the model", want)
		}
	}
	if h := r.hook("before_prompt_build", ""); len(h) == 0 || len(h[0]["recalled"].([]any)) < 5 {
		t.Errorf("before_prompt_build: %v", h)
	}
	// the unsupported handoff was sent back with the gate's reason
	fin := r.hook("before_agent_finalize", "")
	if len(fin) < 2 || fin[0]["decision"] != "revise" || !strings.Contains(fmt.Sprint(fin[0]["reason"]), "docket validate") {
		t.Fatalf("before_agent_finalize: %v", fin)
	}
	if last := fin[len(fin)-1]; last["decision"] != "allow" || len(last["claims"].([]any)) != 0 {
		t.Fatalf("the revised handoff was not accepted: %v", fin[len(fin)-1])
	}
	revised := r.model.LastAsking(2)
	if revised == nil || !strings.Contains(revised.Text(), "docket claim gate") {
		t.Fatalf("the model never got the gate's revision request")
	}
	if !strings.Contains(r.out, "the 10 MB case is unresolved") {
		t.Errorf("the final answer is not the revised handoff:\n%s", tail(r.out, 2000))
	}
	// the ledger holds the blocked handoff (a message without claims
	// needs no evidence and leaves no gate entry)
	session := fmt.Sprint(fin[0]["session"])
	entries := w.api("GET", "/v1/sessions/"+session, w.reviewer, nil, 200)["entries"].([]any)
	var gates []string
	for _, e := range entries {
		m := e.(map[string]any)
		if m["kind"] == "gate_decision" {
			b := m["body"].(map[string]any)
			gates = append(gates, fmt.Sprint(b["decision"]))
		}
	}
	if len(gates) != 1 || gates[0] != "block" {
		t.Fatalf("gate decisions in the ledger: %v", gates)
	}
	w.docket("verify", "--all")
}
