package judge

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

func evalEngine(t *testing.T) (*Engine, *MemStore, *MemLedger) {
	t.Helper()
	h, _ := home.At(t.TempDir())
	set, err := LoadPolicySet(h)
	if err != nil {
		t.Fatal(err)
	}
	e := NewEngine(h, set)
	ms, ml := &MemStore{}, &MemLedger{}
	e.OpenRecall = func(context.Context) (Recaller, error) { return ms, nil }
	e.Writer, e.Approvals, e.Ledger, e.WriteBackAll = ms, ms, ml, true
	return e, ms, ml
}

func runtimeProposal(tool string, class RiskClass, input string) (*ActionProposal, json.RawMessage) {
	p := &ActionProposal{SchemaVersion: ProposalSchema, WorkspaceID: "acme", ActionID: "act-1", IdempotencyKey: "key-1",
		Runtime: RuntimeRef{Name: "openclaw"}, Actor: Actor{AgentID: "coder"}, Tool: ToolRef{Name: tool, Kind: "api"},
		Action: Action{RiskClass: class, Description: "do " + tool}}
	var in json.RawMessage
	if input != "" {
		in = json.RawMessage(input)
		c, _ := canonjson.Canonical(in)
		p.Action.ArgumentsDigest = canonjson.SHA256(c)
	} else {
		p.Action.ArgumentsDigest = "sha256:" + strings.Repeat("0", 64)
	}
	return p, in
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name      string
		tool      string
		class     RiskClass
		input     string
		want      Outcome
		wantClass RiskClass
		enforce   string
	}{
		{"read only", "Read", policies.ReadOnly, `{"file_path":"/tmp/a"}`, Allow, policies.ReadOnly, EnforceAllow},
		{"a claimed read-only shell command is classified", "Bash", policies.ReadOnly, `{"command":"rm -rf /"}`, Block, policies.HighRisk, EnforceDeny},
		{"a stricter claim stands", "Read", policies.HighRisk, `{"file_path":"/tmp/a"}`, Escalate, policies.HighRisk, EnforceApprovalPending},
		{"high risk without input escalates at once", "payments.wire", policies.HighRisk, "", Escalate, policies.HighRisk, EnforceApprovalPending},
		{"the state root is protected", "Read", policies.ReadOnly, `{"file_path":"STATE/keys/hmac.key"}`, Block, "", EnforceDeny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, ms, ml := evalEngine(t)
			input := strings.ReplaceAll(tt.input, "STATE", e.Home.Root)
			p, in := runtimeProposal(tt.tool, tt.class, input)
			ev := e.Evaluate(context.Background(), p, in, "flow-1")
			if ev.Outcome != tt.want || ev.EnforcementAction != tt.enforce {
				t.Fatalf("outcome %s (%s), want %s (%s): %s", ev.Outcome, ev.EnforcementAction, tt.want, tt.enforce, ev.Reason)
			}
			if tt.wantClass != "" && ev.RiskClass != tt.wantClass {
				t.Fatalf("class %s, want %s", ev.RiskClass, tt.wantClass)
			}
			if tt.want == Escalate && (ev.EscalationID == "" || len(ms.Pending()) != 1) {
				t.Fatalf("escalation queued nothing: %q %v", ev.EscalationID, ms.Pending())
			}
			entries := ml.Snapshot()
			if len(entries) != 1 || entries[0].Session != "flow-1" {
				t.Fatalf("ledger entries %+v", entries)
			}
			ds := ms.Decisions()
			if len(ds) != 1 || ds[0].DecisionID != ev.DecisionID || ds[0].IdempotencyKey != EvaluationKey("acme", "key-1") {
				t.Fatalf("write-back %+v, want decision %s", ds, ev.DecisionID)
			}
			if p.Action.RiskClass != tt.class {
				t.Fatal("Evaluate changed the caller's proposal")
			}
		})
	}
}

func TestEvaluateFailsClosed(t *testing.T) {
	e, _, _ := evalEngine(t)
	e.Approvals = nil
	p, _ := runtimeProposal("payments.wire", policies.HighRisk, "")
	if ev := e.Evaluate(context.Background(), p, nil, "flow-1"); ev.Outcome != Escalate || ev.EnforcementAction != EnforceApprovalExpired {
		t.Fatalf("no approval queue: %s %s", ev.Outcome, ev.EnforcementAction)
	}
	e, _, _ = evalEngine(t)
	e.SetPolicyError(&policies.Error{})
	p, _ = runtimeProposal("Read", policies.ReadOnly, `{"file_path":"/tmp/a"}`)
	if ev := e.Evaluate(context.Background(), p, json.RawMessage(`{"file_path":"/tmp/a"}`), "flow-1"); ev.Outcome != Block || ev.FailureKind != KindPolicyInvalid {
		t.Fatalf("invalid policy: %s %s", ev.Outcome, ev.FailureKind)
	}
}

// An escalation or a block shows the first injectable precedent, once;
// an allow shows none.
func TestAddPrecedent(t *testing.T) {
	mems := []Memory{
		{ID: "m0", Summary: "disputed", Provenance: "disputed"},
		{ID: "m1", Summary: "force pushes were refused", Provenance: "observed"},
		{ID: "m2", Summary: "second", Provenance: "observed"},
	}
	for _, tc := range []struct {
		outcome Outcome
		want    string
	}{
		{Escalate, "x — precedent [m1]: force pushes were refused"},
		{Block, "x — precedent [m1]: force pushes were refused"},
		{Allow, "x"},
	} {
		d := &Decision{Outcome: tc.outcome, Reason: "x", recalled: mems, MemoriesUsed: []MemoryUse{{MemoryID: "m1", UsedAs: "evidence"}}}
		d.addPrecedent()
		if d.Reason != tc.want || len(d.MemoriesUsed) != 1 {
			t.Errorf("%s: reason %q uses %v, want %q and m1 once", tc.outcome, d.Reason, d.MemoriesUsed, tc.want)
		}
	}
}
