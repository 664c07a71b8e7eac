package judge

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/policies"
)

// benchSet is the default policy with generated rules up to n in total.
func benchSet(b *testing.B, n int) *PolicySet {
	set := defaultSet(b)
	tools := *set.Tools
	tools.Rules = append([]policies.Rule(nil), set.Tools.Rules...)
	for i := len(tools.Rules); i < n; i++ {
		r := policies.Rule{ID: fmt.Sprintf("bench-%03d", i), Effect: policies.EffectDeny, Reason: "bench"}
		switch i % 3 {
		case 0:
			r.Tool, r.Command = "Bash", fmt.Sprintf("bench-tool-%03d *", i)
		case 1:
			r.Path = fmt.Sprintf("*/bench-secret-%03d/*", i)
		case 2:
			r.Tool = fmt.Sprintf("mcp__bench%03d__*", i)
		}
		tools.Rules = append(tools.Rules, r)
	}
	return NewPolicySet(&tools, set.Sources[0], set.Judges)
}

var benchCalls = []struct {
	tool  string
	input any
}{
	{"Bash", map[string]any{"command": "go test ./... && git add -A && git commit -m 'wip'", "description": "test and commit"}},
	{"Bash", map[string]any{"command": "git push origin main"}},
	{"Bash", map[string]any{"command": "cat ~/.local/state/docket/keys/hmac.key"}},
	{"Read", map[string]any{"file_path": "/home/u/proj/internal/server/handler.go"}},
	{"Edit", map[string]any{"file_path": "/home/u/proj/main.go", "old_string": "a", "new_string": "b"}},
	{"Write", map[string]any{"file_path": "/etc/hosts", "content": "x"}},
	{"Grep", map[string]any{"pattern": "TODO", "path": "/home/u/proj"}},
	{"mcp__github__create_pull_request", map[string]any{"title": "x", "body": "y"}},
}

// BenchmarkPolicyJudge measures the deterministic judge alone, 100 rules,
// over a mix of calls (proposals assembled beforehand), and reports p50
// and p99 of single evaluations.
func BenchmarkPolicyJudge(b *testing.B) {
	set := benchSet(b, 100)
	e, _ := testEngine(b, set)
	pj := e.state.Load().policy
	var props []*ActionProposal
	for _, c := range benchCalls {
		p, err := Assemble(ev(c.tool, c.input), set.Tools)
		if err != nil {
			b.Fatal(err)
		}
		props = append(props, p)
	}
	jc := &JudgmentContext{}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := props[i%len(props)]
		t0 := time.Now()
		if _, err := pj.Evaluate(ctx, p, jc); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	if len(set.Tools.Rules) != 100 {
		b.Fatalf("%d rules", len(set.Tools.Rules))
	}
}

// BenchmarkDecide measures everything the hook does in process after
// loading policy: proposal assembly (canonical hashing, classification,
// git lookup), side-channel binding, the policy judge and answer mapping.
func BenchmarkDecide(b *testing.B) {
	set := benchSet(b, 100)
	e, _ := testEngine(b, set)
	e.SideChannel = false
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x := ev(benchCalls[i%len(benchCalls)].tool, benchCalls[i%len(benchCalls)].input)
		t0 := time.Now()
		e.Decide(ctx, x)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, lat)
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	at := func(q float64) float64 {
		i := int(q * float64(len(lat)-1))
		return float64(lat[i].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	if strings.HasPrefix(b.Name(), "BenchmarkPolicyJudge") && len(lat) > 1000 && at(0.99) > 300 {
		// the protections lstat the paths a call names (symlinks)
		b.Errorf("policy judge p99 %.1fµs exceeds 300µs", at(0.99))
	}
}
