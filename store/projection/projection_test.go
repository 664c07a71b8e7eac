package projection_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
	"github.com/docket/docket/store/memstore"
	"github.com/docket/docket/store/projection"
)

func entry(seq uint64, kind ledger.Kind, tool string, body any) *ledger.Entry {
	b, _ := json.Marshal(body)
	return &ledger.Entry{V: 1, Seq: seq, Session: "sess-1", Time: time.Date(2026, 11, 1, 10, 0, int(seq), 0, time.UTC).Format(time.RFC3339Nano),
		Kind: kind, Tool: tool, Runtime: "claude-code", Body: b, Hash: fmt.Sprintf("sha256:%064x", seq)}
}

var sc = projection.Scope{Workspace: "ws", Project: "docket"}

func TestMain(m *testing.M) {
	firewall.UseDetector(gitleaks.Detect)
	os.Exit(m.Run())
}

func TestMemory(t *testing.T) {
	tests := []struct {
		name    string
		e       *ledger.Entry
		want    bool
		summary string
	}{
		{"judge block", entry(1, ledger.KindJudgeDecision, "Bash", map[string]any{"outcome": "block", "reason": "force push to main", "risk_class": "high_risk"}), true, "judge blocked a Bash call"},
		{"judge escalate", entry(2, ledger.KindJudgeDecision, "Bash", map[string]any{"outcome": "escalate", "reason": "prod deploy"}), true, "judge escalated a Bash call for human approval"},
		{"judge allow", entry(3, ledger.KindJudgeDecision, "Read", map[string]any{"outcome": "allow"}), false, ""},
		{"gate block", entry(4, ledger.KindGateDecision, "", map[string]any{"decision": "block", "claims": []map[string]any{{"type": "tests_pass", "status": "unsupported"}}}), true, "stop gate blocked unsupported claims: tests_pass"},
		{"gate allow", entry(5, ledger.KindGateDecision, "", map[string]any{"decision": "allow"}), false, ""},
		{"validator fail", entry(6, ledger.KindValidatorFail, "", map[string]any{"claim": "tests_pass", "validator": "go_test_pass", "reason": "exit status 1"}), true, "validator go_test_pass failed for claim tests_pass"},
		{"validator pass", entry(7, ledger.KindValidatorPass, "", map[string]any{"claim": "tests_pass"}), false, ""},
		{"tool call", entry(8, ledger.KindToolCall, "Bash", nil), false, ""},
		{"malformed body", &ledger.Entry{Seq: 9, Session: "s", Hash: "h", Kind: ledger.KindJudgeDecision, Body: json.RawMessage(`[`)}, false, ""},
		{"nil", nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := projection.Memory(tt.e, sc)
			if ok != tt.want {
				t.Fatalf("projects = %v, want %v", ok, tt.want)
			}
			if !ok {
				return
			}
			if m.Summary != tt.summary {
				t.Errorf("summary %q, want %q", m.Summary, tt.summary)
			}
			if m.Provenance.Status != store.Observed || m.UsePolicy != store.Evidence {
				t.Errorf("projected as %s/%s, want observed evidence", m.Provenance.Status, m.UsePolicy)
			}
			if m.Lineage != (store.Lineage{Session: tt.e.Session, Seq: tt.e.Seq, EntryHash: tt.e.Hash}) {
				t.Errorf("lineage %+v", m.Lineage)
			}
			if _, err := store.Prepare(m, time.Now()); err != nil {
				t.Errorf("projected memory breaks an invariant: %v", err)
			}
		})
	}
}

func TestReasonWithSecretWithheld(t *testing.T) {
	e := entry(1, ledger.KindJudgeDecision, "Bash", map[string]any{"outcome": "block", "reason": "command sends ghp_R4nd0mT0k3nV4lu3xYzAbCdEfGh1234567890ab upstream"})
	m, ok := projection.Memory(e, sc)
	if !ok || strings.Contains(m.Content, "ghp_") || !strings.Contains(m.Content, "withheld") {
		t.Fatalf("content %q: want the secret withheld", m.Content)
	}
}

func TestApplyIdempotentAndIncremental(t *testing.T) {
	ctx := context.Background()
	var s memstore.Store
	entries := []*ledger.Entry{
		entry(1, ledger.KindToolCall, "Bash", nil),
		entry(2, ledger.KindJudgeDecision, "Bash", map[string]any{"outcome": "block", "reason": "rm -rf / is destructive (rule 12)"}),
		entry(3, ledger.KindValidatorFail, "", map[string]any{"claim": "tests_pass", "validator": "go_test_pass", "reason": "exit status 1"}),
	}
	r, err := projection.Apply(ctx, &s, sc, entries)
	if err != nil || r != (projection.Result{Created: 2, Skipped: 1}) {
		t.Fatalf("first apply: %+v %v", r, err)
	}
	// A later batch: the same entries again plus a recurrence of the block.
	entries = append(entries, entry(4, ledger.KindJudgeDecision, "Bash", map[string]any{"outcome": "block", "reason": "rm -rf / is destructive (rule 13)"}))
	var wg sync.WaitGroup
	results := make([]projection.Result, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = projection.Apply(ctx, &s, sc, entries)
		}()
	}
	wg.Wait()
	reinforced := 0
	for _, r := range results {
		reinforced += r.Reinforced
		if r.Created != 0 {
			t.Fatalf("re-projection created memories: %+v", r)
		}
	}
	if reinforced != 1 {
		t.Fatalf("recurrence reinforced %d times across concurrent runs, want 1", reinforced)
	}
	resp, err := s.Recall(ctx, store.RecallRequest{Workspace: "ws", Project: "docket", Query: store.Query{Summary: "rm -rf destructive", ToolName: "Bash"}})
	if err != nil || len(resp.Memories) == 0 {
		t.Fatalf("recall: %v %v", resp.Memories, err)
	}
	top := resp.Memories[0]
	if top.Occurrences != 2 || top.Lineage.Seq != 2 || !strings.Contains(top.Content, "destructive") || len(resp.PolicyHits) != 0 {
		t.Fatalf("top memory %+v: want the block seen twice, lineage seq 2, evidence only", top)
	}
}
