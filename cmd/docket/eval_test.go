package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEvalUsage(t *testing.T) {
	if _, stderr, code := docket(t, "eval", "extra"); code != 2 || !strings.Contains(stderr, "hint:") {
		t.Errorf("eval extra: exit %d, stderr %q", code, stderr)
	}
	if _, _, code := docket(t, "eval", "--bogus"); code != 2 {
		t.Errorf("eval --bogus: exit %d", code)
	}
	used := t.TempDir()
	if err := os.WriteFile(filepath.Join(used, "store.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := docket(t, "eval", "--dir", used); code != 2 || !strings.Contains(stderr, "not empty") {
		t.Errorf("eval into a used dir: exit %d %q", code, stderr)
	}
}

// docket eval --json names the seed's metrics in snake_case and judges
// the whole labelled set; the text output prints each metric with its
// definition.
func TestEvalRuns(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	out, stderr, code := docket(t, "eval", "--json", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Fixtures struct{ Total int }                `json:"fixtures"`
		Judge    map[string]any                     `json:"judge"`
		Recall   map[string]any                     `json:"recall"`
		Gov      map[string]any                     `json:"governance"`
		Exp      map[string]any                     `json:"experiment"`
		Defs     []struct{ Key, Definition string } `json:"definitions"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.Fixtures.Total < 200 {
		t.Errorf("%d fixtures", rep.Fixtures.Total)
	}
	for _, k := range []string{"false_allows", "false_blocks", "escalation_rate", "revision_rate"} {
		if _, ok := rep.Judge[k]; !ok {
			t.Errorf("judge has no %s", k)
		}
	}
	for _, k := range []string{"recall_precision", "stale_retrieval_rate", "disputed_retrieval_rate", "policy_hit_accuracy", "duplicate_memory_rate", "decisions_with_sufficient_evidence"} {
		if _, ok := rep.Recall[k]; !ok {
			t.Errorf("recall has no %s", k)
		}
	}
	for _, k := range []string{"confirmed", "rejected", "downgraded_to_evidence", "inferred_prevented_from_instruction"} {
		if _, ok := rep.Gov[k]; !ok {
			t.Errorf("governance has no %s", k)
		}
	}
	if rep.Exp["memory_off"] == nil || rep.Exp["memory_on"] == nil || rep.Exp["difference"] == nil {
		t.Errorf("experiment %v", rep.Exp)
	}
	text, _, code := docket(t, "eval")
	if code != 0 {
		t.Fatalf("text: exit %d", code)
	}
	for _, d := range rep.Defs {
		if !strings.Contains(text, d.Key) || !strings.Contains(text, d.Definition) {
			t.Errorf("text output lacks %s with its definition", d.Key)
		}
	}
	for _, s := range []string{"memory off -> on", "disagreements with the labels"} {
		if !strings.Contains(text, s) {
			t.Errorf("text output lacks %q", s)
		}
	}
}
