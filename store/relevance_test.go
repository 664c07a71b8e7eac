package store_test

import (
	"math"
	"testing"
	"time"

	"github.com/docket/docket/store"
)

var clock = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func mem(id, summary string, daysAgo int, mod ...func(*store.Memory)) store.Candidate {
	m := store.Memory{
		ID: id, Summary: summary, Content: summary,
		Source:     store.Source{Kind: "system_event", URI: "ledger:s1#" + id},
		Provenance: store.Provenance{Status: store.Observed, Confidence: 0.9, CreatedBy: "system"},
		UsePolicy:  store.Evidence, Lifecycle: store.Active, Occurrences: 1,
		Scope:     store.Scope{Workspace: "ws", Visibility: store.WorkspaceVisible},
		Freshness: store.Freshness{CreatedAt: clock.AddDate(0, 0, -daysAgo), LastSeenAt: clock.AddDate(0, 0, -daysAgo)},
	}
	for _, f := range mod {
		f(&m)
	}
	m.Entities = store.NormalizeEntities(m.Entities)
	return store.Candidate{Memory: m}
}

func selectAt(t *testing.T, summary string, now time.Time, cands ...store.Candidate) store.RecallResponse {
	t.Helper()
	req, err := store.ValidateRecall(store.RecallRequest{Workspace: "ws", Query: store.Query{Summary: summary}})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := store.Select(req, cands, now)
	return resp
}

func TestBucket(t *testing.T) {
	r := store.DefaultRelevance()
	tests := []struct {
		summary string
		ents    []string
		want    string
	}{
		{"the deploy key leaked into the build log", nil, "secrets"},
		{"edited .env.production", nil, "secrets"},
		{"kubectl rollout to production failed", nil, "deploy"},
		{"changed Dockerfile base image", nil, "deploy"},
		{"dropped the users table in sqlite", nil, "data"},
		{"the arm runners are flaky", nil, "ci"},
		{"touched .github/workflows/release.yml", nil, "ci"},
		{"bumped golang.org/x/mod in go.mod", nil, "dependencies"},
		{"posted a summary", []string{"tool:mcp__slack__slack_post_message"}, "comms"},
		{"pytest fails on windows", nil, "tests"},
		{"edited store_test.go", []string{"file:store/store_test.go"}, "tests"},
		{"fixed a typo in the README", nil, "docs"},
		{"force push to a shared branch", nil, "repo"},
		{"something else entirely", nil, "repo"}, // fallback
	}
	for _, tt := range tests {
		c := mem("m", tt.summary, 0, func(m *store.Memory) { m.Entities = tt.ents })
		if got, _ := r.Bucket(&c.Memory); got != tt.want {
			t.Errorf("Bucket(%q) = %s, want %s", tt.summary, got, tt.want)
		}
	}
}

func TestRelevanceScore(t *testing.T) {
	// one confirmed block lesson about secrets, seen 10 days ago
	c := mem("m1", "never print the deploy token", 10, func(m *store.Memory) {
		m.UsePolicy, m.Behavior, m.ConfirmedBy = store.Instruction, "block", "ana"
		m.Provenance.Status = store.UserConfirmed
	})
	resp := selectAt(t, "print the deploy token", clock, c)
	if len(resp.Memories) != 1 {
		t.Fatalf("recalled %d", len(resp.Memories))
	}
	r := resp.Memories[0]
	f := r.Relevance
	if r.Bucket != "secrets" || f.Severity != 5 || f.Frequency != 1 || f.Repeatable != 1.5 || f.FamilyBoost != 1 {
		t.Fatalf("factors: bucket %s %+v", r.Bucket, *f)
	}
	if want := math.Pow(0.98, 10); math.Abs(f.Decay-want) > 1e-6 {
		t.Errorf("decay %.6f, want 0.98^10 = %.6f", f.Decay, want)
	}
	want := f.Match * 5 * 1 * math.Pow(0.98, 10) * 1.5 * 1
	if math.Abs(r.Score-want) > 1e-5 {
		t.Errorf("score %.6f, want %.6f", r.Score, want)
	}
}

func TestDecaySchedule(t *testing.T) {
	// the seed's figures: ~0.545 after 30 days, ~0.163 after 90, ~0.027 after 180
	for _, tt := range []struct {
		days int
		want float64
	}{{0, 1}, {1, 0.98}, {30, 0.545}, {90, 0.163}, {180, 0.027}} {
		c := mem("m", "x", tt.days)
		if got := store.Decay(&c.Memory, clock); math.Abs(got-tt.want) > 0.001 {
			t.Errorf("decay after %d days = %.4f, want %.3f", tt.days, got, tt.want)
		}
	}
}

func TestRelevanceRanking(t *testing.T) {
	tests := []struct {
		name  string
		query string
		cands []store.Candidate
		first string
	}{
		{"severity: a secrets memory outranks a docs one of the same match and age", "fix the readme",
			[]store.Candidate{mem("docs", "fix the readme wording", 3), mem("sec", "fix the readme that leaked a password", 3)}, "sec"},
		{"frequency: a pattern seen four times outranks one seen twice", "docker build fails on arm",
			[]store.Candidate{
				mem("twice", "docker build fails on arm", 2, func(m *store.Memory) { m.PatternKey = "a"; m.Occurrences = 2 }),
				mem("z_often", "docker build fails on arm", 2, func(m *store.Memory) { m.PatternKey = "b"; m.Occurrences = 4 }),
			}, "z_often"},
		{"decay: reinforcement resets it, a fresh observation outranks a stale one", "migration locks the table",
			[]store.Candidate{mem("stale", "migration locks the table", 60), mem("z_fresh", "migration locks the table", 1)}, "z_fresh"},
		{"decay loses to frequency when the pattern keeps recurring", "flaky runner",
			[]store.Candidate{mem("new", "flaky runner", 0), mem("recurring", "flaky runner", 20, func(m *store.Memory) { m.PatternKey = "r"; m.Occurrences = 5 })}, "recurring"},
		{"repeatable: a one-off ranks below a pattern", "lint fails",
			[]store.Candidate{mem("oneoff", "lint fails", 0), mem("pattern", "lint fails", 0, func(m *store.Memory) { m.PatternKey = "p" })}, "pattern"},
		{"family boost: three memories on one repo lift each other", "test timeout",
			[]store.Candidate{
				mem("a_lone", "test timeout", 0, func(m *store.Memory) { m.Entities = []string{"repo:web"} }),
				mem("fam1", "test timeout", 0, func(m *store.Memory) { m.Entities = []string{"repo:api"} }),
				mem("fam2", "test timeout", 0, func(m *store.Memory) { m.Entities = []string{"repo:api"} }),
				mem("fam3", "test timeout", 0, func(m *store.Memory) { m.Entities = []string{"repo:api"} }),
			}, "fam1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := selectAt(t, tt.query, clock, tt.cands...)
			if len(resp.Memories) == 0 || resp.Memories[0].ID != tt.first {
				var got []string
				for _, m := range resp.Memories {
					got = append(got, m.ID+"("+m.Bucket+")")
				}
				t.Fatalf("ranking %v, want %s first", got, tt.first)
			}
		})
	}
}

func TestFamilyBoostCapped(t *testing.T) {
	var cands []store.Candidate
	for i := 0; i < 8; i++ {
		cands = append(cands, mem(string(rune('a'+i)), "cache miss", 0, func(m *store.Memory) { m.Entities = []string{"repo:api"} }))
	}
	for _, m := range selectAt(t, "cache miss", clock, cands...).Memories {
		if m.Relevance.FamilyBoost != 2 {
			t.Fatalf("family boost %v, want the cap 2", m.Relevance.FamilyBoost)
		}
	}
}

func TestUseRelevance(t *testing.T) {
	r, err := store.ParseRelevance([]byte(`{"fallback":"general","fallback_severity":1,
		"buckets":[{"bucket":"payments","severity":5,"words":["refund","invoice"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	store.UseRelevance(r)
	t.Cleanup(func() { store.UseRelevance(nil) })
	resp := selectAt(t, "refund", clock, mem("a", "refund issued twice", 0), mem("b", "refund docs", 0, func(m *store.Memory) { m.Summary = "unrelated"; m.Content = "refund" }))
	for _, m := range resp.Memories {
		if m.Bucket != "payments" {
			t.Errorf("%s in bucket %s, want payments", m.ID, m.Bucket)
		}
	}
	for _, bad := range []string{`{"fallback":"x","fallback_severity":9}`, `{"fallback_severity":1}`, `{"fallback":"x","fallback_severity":1,"buckets":[{"bucket":"","severity":1}]}`, `{"fallback":"x","fallback_severity":1,"extra":1}`} {
		if _, err := store.ParseRelevance([]byte(bad)); err == nil {
			t.Errorf("ParseRelevance(%s) accepted", bad)
		}
	}
}
