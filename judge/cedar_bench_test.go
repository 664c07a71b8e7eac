package judge

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/cedar-policy/cedar-go"
)

// BenchmarkCedarRules is the evaluation behind the rule-layer choice: the
// same 100 deny rules as BenchmarkPolicyJudge expressed in Cedar (`like`
// patterns over context.command / context.path / the tool), authorized
// per call. It measures only the authorizer; building the request from a
// proposal, and loading the policy text per hook process, come on top.
func BenchmarkCedarRules(b *testing.B) {
	ps := cedar.NewPolicySet()
	ps.Add("permit-all", mustCedar(b, `permit (principal, action, resource);`))
	for i := 0; i < 100; i++ {
		var src string
		switch i % 3 {
		case 0:
			src = fmt.Sprintf(`forbid (principal, action == Action::"call", resource == Tool::"Bash") when { context.commands.contains("bench-tool-%03d") || context.command like "bench-tool-%03d *" };`, i, i)
		case 1:
			src = fmt.Sprintf(`forbid (principal, action == Action::"call", resource) when { context.path like "*/bench-secret-%03d/*" };`, i)
		case 2:
			src = fmt.Sprintf(`forbid (principal, action == Action::"call", resource) when { context.tool like "mcp__bench%03d__*" };`, i)
		}
		ps.Add(cedar.PolicyID(fmt.Sprintf("bench-%03d", i)), mustCedar(b, src))
	}
	reqs := []cedar.Request{}
	for _, c := range []struct{ tool, cmd, path string }{
		{"Bash", "go test ./...", ""}, {"Bash", "git push origin main", ""}, {"Read", "", "/home/u/proj/main.go"},
		{"Edit", "", "/home/u/proj/main.go"}, {"mcp__github__create_pull_request", "", ""},
	} {
		reqs = append(reqs, cedar.Request{
			Principal: cedar.NewEntityUID("Agent", "main"), Action: cedar.NewEntityUID("Action", "call"),
			Resource: cedar.NewEntityUID("Tool", cedar.String(c.tool)),
			Context: cedar.NewRecord(cedar.RecordMap{"tool": cedar.String(c.tool), "command": cedar.String(c.cmd), "path": cedar.String(c.path),
				"commands": cedar.NewSet(cedar.String(c.cmd))}),
		})
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		cedar.Authorize(ps, cedar.EntityMap{}, reqs[i%len(reqs)])
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkCedarLoad is what each hook process would pay to parse the
// 100 Cedar rules before its first decision.
func BenchmarkCedarLoad(b *testing.B) {
	var srcs []string
	for i := 0; i < 100; i++ {
		srcs = append(srcs, fmt.Sprintf(`forbid (principal, action == Action::"call", resource) when { context.path like "*/bench-secret-%03d/*" };`, i))
	}
	for i := 0; i < b.N; i++ {
		ps := cedar.NewPolicySet()
		for j, s := range srcs {
			ps.Add(cedar.PolicyID(fmt.Sprint(j)), mustCedar(b, s))
		}
	}
}

func mustCedar(b *testing.B, src string) *cedar.Policy {
	var p cedar.Policy
	if err := p.UnmarshalCedar([]byte(src)); err != nil {
		b.Fatal(err)
	}
	return &p
}
