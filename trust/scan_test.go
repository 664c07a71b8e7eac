package trust

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/ledger"
)

// entries builds a session's entries, one minute apart from t0.
type entries []*ledger.Entry

func (es *entries) add(kind ledger.Kind, tool, toolUseID, agentID string, body any) {
	b, _ := json.Marshal(body)
	*es = append(*es, &ledger.Entry{Seq: uint64(len(*es)), Session: "s1", Kind: kind, Runtime: "claude",
		Time: t0.Add(time.Duration(len(*es)) * time.Minute).Format(time.RFC3339Nano), Tool: tool, ToolUseID: toolUseID, AgentID: agentID, Body: b})
}

func decision(outcome, enforcement, class string, rules ...string) map[string]any {
	return map[string]any{"outcome": outcome, "enforcement_action": enforcement, "risk_class": class, "rule_ids": rules}
}

func TestScan(t *testing.T) {
	p := DefaultPolicy()
	tests := []struct {
		name  string
		build func(es *entries)
		want  []string // each signal as "why rating misaligned high critical"
	}{
		{"approval is positive", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", decision("escalate", "approval_granted", "reversible_write"))
		}, []string{"approved by a human 1 false false false"}},
		{"rejection is negative, high-priority for a high-risk class", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", decision("escalate", "approval_denied", "high_risk"))
			es.add(ledger.KindJudgeDecision, "Bash", "t2", "", decision("escalate", "approval_denied", "reversible_write"))
		}, []string{"rejected by a human 0 true true false", "rejected by a human 0 true false false"}},
		{"modify and expiry are neutral", func(es *entries) {
			d := decision("escalate", "approval_granted", "reversible_write")
			d["amended_arguments_hash"] = "sha256:ab"
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", d)
			es.add(ledger.KindJudgeDecision, "Bash", "t2", "", decision("escalate", "approval_expired", "reversible_write"))
		}, []string{"approved with modified arguments neutral", "approval expired or pending neutral"}},
		{"interactive ask then the call ran: approved", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", decision("escalate", "ask", "reversible_write"))
			es.add(ledger.KindToolCall, "Bash", "t1", "", map[string]any{"failed": false})
		}, []string{"approved by a human (interactive) 1 false false false"}},
		{"interactive ask, the turn ended without the call: rejected", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", decision("escalate", "ask", "reversible_write"))
			es.add(ledger.KindToolCall, "Bash", "t9", "", map[string]any{"failed": false})
			es.add(ledger.KindGateDecision, "", "", "", map[string]any{"decision": "allow"})
		}, []string{"rejected by a human (interactive) 0 true false false"}},
		{"an unresolved ask is not rated yet", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", decision("escalate", "ask", "reversible_write"))
		}, nil},
		{"gate block then validated pass is positive", func(es *entries) {
			es.add(ledger.KindGateDecision, "", "", "", map[string]any{"decision": "block", "claims": []any{map[string]any{"type": "tests_pass", "status": "missing"}}})
			es.add(ledger.KindValidatorPass, "go_test_pass", "", "", map[string]any{"claim": "tests_pass"})
			es.add(ledger.KindValidatorPass, "go_test_pass", "", "", map[string]any{"claim": "tests_pass"})
		}, []string{"evidence after a gate block (tests_pass) 1 false false false"}},
		{"a pass without a block is not rated", func(es *entries) {
			es.add(ledger.KindValidatorPass, "go_test_pass", "", "", map[string]any{"claim": "tests_pass"})
		}, nil},
		{"gate release with unsupported claims is negative", func(es *entries) {
			es.add(ledger.KindGateDecision, "", "", "", map[string]any{"decision": "release", "claims": []any{map[string]any{"type": "done", "status": "missing"}}})
		}, []string{"gate released unsupported claims 0 true true false"}},
		{"validator FAIL after a claim is negative, before any claim it is not", func(es *entries) {
			es.add(ledger.KindValidatorFail, "go_test_pass", "", "", map[string]any{"claim": "tests_pass"})
			es.add(ledger.KindGateDecision, "", "", "", map[string]any{"decision": "block", "claims": []any{map[string]any{"type": "tests_pass", "status": "missing"}}})
			es.add(ledger.KindValidatorFail, "go_test_pass", "", "", map[string]any{"claim": "tests_pass"})
		}, []string{"validator failed after a tests_pass claim 0 true false false"}},
		{"key access is critical", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Read", "t1", "", decision("block", "deny", "read_only", "builtin:keys_read"))
		}, []string{"critical: builtin:keys_read 0 true true true"}},
		{"a PII directive block is critical", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", decision("block", "deny", "external_side_effect", "directive:PRIVACY_NO_PII"))
		}, []string{"critical: directive:PRIVACY_NO_PII 0 true true true"}},
		{"a safety directive's escalation is critical, another escalation neutral", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", decision("escalate", "approval_expired", "high_risk", "directive:SAFETY_FIRST"))
			es.add(ledger.KindJudgeDecision, "Bash", "t2", "", decision("escalate", "approval_expired", "high_risk", "rule:deploy"))
		}, []string{"critical: directive:SAFETY_FIRST 0 true true true", "approval expired or pending neutral"}},
		{"a policy block is a misalignment, a judge failure nothing", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Bash", "t1", "", decision("block", "deny", "reversible_write", "rule:no-force-push"))
			d := decision("block", "deny", "reversible_write")
			d["failure_kind"] = "unavailable"
			es.add(ledger.KindJudgeDecision, "Bash", "t2", "", d)
		}, []string{"blocked by policy 0 true false false"}},
		{"plain allow is aligned", func(es *entries) {
			es.add(ledger.KindJudgeDecision, "Read", "t1", "", decision("allow", "none", "read_only"))
		}, []string{"allowed by policy 1 false false false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var es entries
			tt.build(&es)
			sc := &SessionScan{}
			got := Scan(&p, "s1", sc, es)
			var gs []string
			for _, s := range got {
				if s.Neutral {
					gs = append(gs, s.Why+" neutral")
					continue
				}
				gs = append(gs, strings.Join([]string{s.Why, ftoa0(s.Rating), bstr(s.Misaligned), bstr(s.High), bstr(s.Critical)}, " "))
			}
			if strings.Join(gs, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("signals:\n%s\nwant:\n%s", strings.Join(gs, "\n"), strings.Join(tt.want, "\n"))
			}
			if sc.Seq != uint64(len(es)) {
				t.Errorf("scan stopped at %d of %d", sc.Seq, len(es))
			}
			// a second scan of the same entries rates nothing again
			if again := Scan(&p, "s1", sc, es); len(again) != 0 {
				t.Errorf("rescan rated %d signals", len(again))
			}
		})
	}
}

func TestScanAgents(t *testing.T) {
	p := DefaultPolicy()
	var es entries
	d := decision("allow", "none", "read_only")
	d["trust"] = map[string]any{"agent": "claude/Explore"}
	es.add(ledger.KindJudgeDecision, "Read", "t1", "a1", d)
	es.add(ledger.KindGateDecision, "", "", "a1", map[string]any{"decision": "release", "claims": []any{map[string]any{"type": "done", "status": "missing"}}})
	es.add(ledger.KindGateDecision, "", "", "", map[string]any{"decision": "release", "claims": []any{map[string]any{"type": "done", "status": "missing"}}})
	got := Scan(&p, "s1", &SessionScan{}, es)
	if len(got) != 3 || got[0].Agent != "claude/Explore" || got[1].Agent != "claude/Explore" || got[2].Agent != "claude/main" {
		t.Errorf("agents: %+v", got)
	}
}

func ftoa0(f float64) string {
	if f == 1 {
		return "1"
	}
	return "0"
}

func bstr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
