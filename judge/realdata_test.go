package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/docket/docket/hooks"
)

// checkClaudeAnswer validates stdout bytes against the Claude Code
// PreToolUse output contract: nothing, or one JSON object whose only keys
// are hookSpecificOutput (with hookEventName PreToolUse, a known
// permissionDecision, a non-empty reason, an object updatedInput) and
// systemMessage.
func checkClaudeAnswer(out []byte) error {
	if len(out) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return err
	}
	if dec.More() {
		return errf("more than one JSON value on stdout")
	}
	for k := range top {
		if k != "hookSpecificOutput" && k != "systemMessage" {
			return errf("unexpected top-level key %q", k)
		}
	}
	var hso struct {
		HookEventName            string          `json:"hookEventName"`
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason *string         `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
	}
	raw, ok := top["hookSpecificOutput"]
	if !ok {
		return errf("no hookSpecificOutput")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&hso); err != nil {
		return err
	}
	if hso.HookEventName != hooks.PreToolUse {
		return errf("hookEventName %q", hso.HookEventName)
	}
	switch hso.PermissionDecision {
	case hooks.Allow, hooks.Deny, hooks.Ask:
		if hso.PermissionDecisionReason == nil || *hso.PermissionDecisionReason == "" || len(*hso.PermissionDecisionReason) > 10000 {
			return errf("decision %q without a usable reason", hso.PermissionDecision)
		}
	case "":
		if hso.UpdatedInput == nil {
			return errf("empty hookSpecificOutput")
		}
	default:
		return errf("permissionDecision %q", hso.PermissionDecision)
	}
	if hso.UpdatedInput != nil && (len(hso.UpdatedInput) == 0 || hso.UpdatedInput[0] != '{') {
		return errf("updatedInput is not an object")
	}
	return nil
}

func errf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func TestRealPayloads(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "realdata", "payloads", "PreToolUse__*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no payloads: %v", err)
	}
	set := defaultSet(t)
	for _, headless := range []bool{false, true} {
		e, _ := testEngine(t, set)
		e.Headless = headless
		led := &MemLedger{}
		e.Ledger = led
		counts := map[string]int{}
		for _, f := range files {
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := hooks.Decode(payload, "")
			if err != nil {
				t.Errorf("%s: decode: %v", filepath.Base(f), err)
				continue
			}
			a, d := e.Decide(context.Background(), ev)
			out, code, err := hooks.Encode(ev.Runtime, a)
			if err != nil || code != 0 {
				t.Errorf("%s: encode: %v (exit %d)", filepath.Base(f), err, code)
				continue
			}
			if err := checkClaudeAnswer(out); err != nil {
				t.Errorf("%s: answer %s: %v", filepath.Base(f), out, err)
			}
			if d.ArgumentsHash == "" || d.PolicyVersion == "" || d.EnforcementAction == "" {
				t.Errorf("%s: incomplete decision %+v", filepath.Base(f), d)
			}
			counts[string(d.Outcome)+"/"+d.EnforcementAction]++
			if d.Outcome != Allow && !headless {
				t.Logf("%s %s: %s", filepath.Base(f), d.Outcome, d.Reason)
			}
		}
		if n := len(led.Snapshot()); n != len(files) {
			t.Errorf("%d ledger entries for %d payloads", n, len(files))
		}
		var keys []string
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			t.Logf("headless=%v %-40s %d", headless, k, counts[k])
		}
	}
}

func sprintf(format string, args ...any) string { return fmtSprintf(format, args...) }

var fmtSprintf = fmt.Sprintf
