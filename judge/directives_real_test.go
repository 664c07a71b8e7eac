package judge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
)

// TestDirectivesRealPayloads runs the real PreToolUse payloads through
// the decision filter: every outbound call among them is ordinary work
// (pull requests, commits, pushes, fetches) with no personal data or
// secret in it, so a directive that fires is a false alarm. The labels
// were checked by reading each outbound payload.
func TestDirectivesRealPayloads(t *testing.T) {
	withDetector(t)
	files, err := filepath.Glob(filepath.Join("..", "testdata", "realdata", "payloads", "PreToolUse__*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no payloads: %v", err)
	}
	set := defaultSet(t)
	e, _ := testEngine(t, set)
	outboundCalls, fired := 0, 0
	for _, f := range files {
		payload, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := hooks.Decode(payload, "")
		if err != nil {
			continue
		}
		p, err := Assemble(ev, set.Tools)
		if err != nil {
			continue
		}
		texts, unknown := outboundTexts(p, set, nil)
		if len(texts) == 0 && len(unknown) == 0 {
			continue
		}
		outboundCalls++
		_, d := e.Decide(context.Background(), ev)
		for _, r := range d.RuleIDs {
			if strings.HasPrefix(r, DirectiveRulePrefix) {
				fired++
				t.Errorf("%s: %s fired on ordinary work: %s", filepath.Base(f), r, d.Reason)
				break
			}
		}
	}
	t.Logf("%d payloads, %d outbound calls, %d fired", len(files), outboundCalls, fired)
	if outboundCalls == 0 {
		t.Fatal("no outbound call among the real payloads: the filter saw nothing")
	}
}
