package gate

import (
	"encoding/json"
	"testing"
)

// Every gate_decision of a judged stop records how long the gate took
// (`docket report metrics` reads it as the Stop hook's added latency).
func TestGateDecisionRecordsDuration(t *testing.T) {
	m := &memLedger{}
	g := testGate(t, m)
	g.Stop(stopEvent("Shipped it."))
	es := m.entries["s1"]
	if len(es) == 0 {
		t.Fatal("no gate_decision appended")
	}
	var b struct {
		Duration *int64 `json:"duration_us"`
	}
	if err := json.Unmarshal(es[len(es)-1].Body, &b); err != nil || b.Duration == nil || *b.Duration < 0 {
		t.Errorf("gate_decision body %s has no duration_us", es[len(es)-1].Body)
	}
}
