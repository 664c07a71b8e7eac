package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/docket/docket/store"
)

func TestInspectCommand(t *testing.T) {
	s := storeEnv(t)
	ctx := context.Background()
	r := seedLesson(t, s, "k1")
	mem := r.Memories[0]
	if _, _, code := docket(t, "review", "confirm", mem, "--as", "instruction", "--by", "ana", "--note", "seen twice"); code != 0 {
		t.Fatal("confirm failed")
	}
	resp, err := s.Recall(ctx, store.RecallRequest{Workspace: "ws", Query: store.Query{Summary: "deploy after go test", ToolName: "Bash"}})
	if err != nil || len(resp.PolicyHits) != 1 {
		t.Fatalf("recall: %+v %v", resp.PolicyHits, err)
	}
	if err := s.RecordUse(ctx, resp.RecallID, "dec_later", []store.MemoryUse{{MemoryID: mem, UsedAs: "instruction"}}); err != nil {
		t.Fatal(err)
	}
	out, _, code := docket(t, "inspect", mem)
	for _, want := range []string{
		"written back by decision " + r.DecisionID,
		"user_confirmed", "confirmed by ana",
		"recalls that returned it (1)", "as policy_hit, instruction by dec_later",
		"ana confirm use_policy=can_use_as_instruction; seen twice",
		"injected automatically", "conflicts (0)", "no stale date",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("inspect lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	out, _, code = docket(t, "inspect", "--json", mem)
	var in store.Inspection
	if code != 0 || json.Unmarshal([]byte(out), &in) != nil || in.Memory.ID != mem || len(in.Recalls) != 1 || !in.Injectable {
		t.Fatalf("inspect --json (exit %d): %s", code, out)
	}
	if _, errs, code := docket(t, "inspect"); code != 2 || !strings.Contains(errs, "exactly one memory id") {
		t.Errorf("inspect without id: exit %d %q", code, errs)
	}
	if _, errs, code := docket(t, "inspect", "mem_nope"); code != 1 || !strings.Contains(errs, "not found") {
		t.Errorf("inspect unknown: exit %d %q", code, errs)
	}
}
