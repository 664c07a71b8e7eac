package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/sqlstore"
)

// Benchmarks: each call through HTTP on loopback (the real handler chain:
// auth, validation, JSON both ways, metrics) beside the same call in
// process, interleaved, against a store holding 100,000 memories. Run:
//
//	go test -run '^$' -bench . -benchtime 1000x ./server/
//
// with DOCKET_TEST_PG_DSN set for the PostgreSQL figures. Each reports
// p50/p99 in ms for both paths, the p50 the HTTP layer adds, and the
// ratio (HTTP p50 / in-process p50); write benchmarks report decisions/s.
// The corpus is generated once per backend per run; with
// DOCKET_BENCH_REUSE=1 the PostgreSQL one is kept between runs, and
// DOCKET_BENCH_SQLITE=PATH names a SQLite one to seed once and reuse.

const benchCorpus = 100_000

var benchWords = func() []string {
	r := rand.New(rand.NewPCG(1, 2))
	syll := []string{"ka", "to", "ri", "mu", "sel", "dor", "an", "vi", "po", "lex", "ter", "ion", "gra", "bu", "nep", "cha", "fo", "zin"}
	seen := map[string]bool{}
	var out []string
	for len(out) < 3000 {
		var b strings.Builder
		for range 2 + r.IntN(3) {
			b.WriteString(syll[r.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}()

func benchSentence(r *rand.Rand, z *rand.Zipf, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = benchWords[z.Uint64()]
	}
	return strings.Join(parts, " ")
}

func seedCorpus(b *testing.B, s *sqlstore.Store) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 11))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
	now := time.Now()
	batch := make([]store.Memory, 0, 5000)
	for i := range benchCorpus {
		m := store.Memory{
			ID: fmt.Sprintf("mem_b%07d", i), Summary: benchSentence(r, z, 8+r.IntN(8)), Content: benchSentence(r, z, 20+r.IntN(30)),
			Source:     store.Source{Kind: "judge_event", URI: fmt.Sprintf("decision:dec_%d", i)},
			Provenance: store.Provenance{Status: store.Observed, Confidence: 0.9, CreatedBy: "system"},
			UsePolicy:  store.Evidence, Scope: store.Scope{Workspace: "ws-bench", Visibility: store.WorkspaceVisible},
			Entities: []string{fmt.Sprintf("repo:r%d", r.IntN(50)), fmt.Sprintf("tool:t%d", r.IntN(10)),
				fmt.Sprintf("file:f%d.go", r.IntN(5000)), fmt.Sprintf("system:s%d", r.IntN(20))},
			Freshness: store.Freshness{CreatedAt: now.Add(-time.Duration(r.IntN(365*24)) * time.Hour)},
		}
		if i%10 == 0 {
			m.Provenance.Status, m.UsePolicy, m.ConfirmedBy = store.UserConfirmed, store.Instruction, "ana"
		}
		batch = append(batch, m)
		if len(batch) == cap(batch) {
			if err := s.Import(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// benchServer is one server over a seeded store, kept for the whole run.
type benchServer struct {
	env    *env
	client *http.Client
}

var (
	benchMu      sync.Mutex
	benchServers = map[string]*benchServer{}
)

func benchFor(b *testing.B, backend string) *benchServer {
	benchMu.Lock()
	defer benchMu.Unlock()
	if bs := benchServers[backend]; bs != nil {
		return bs
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "docket-serve-bench")
	if err != nil {
		b.Fatal(err)
	}
	h, _ := home.At(dir)
	if _, err := ledger.Init(h); err != nil {
		b.Fatal(err)
	}
	var st *sqlstore.Store
	reuse := false
	postgres := backend == "postgres"
	if postgres {
		dsn := os.Getenv(EnvPGDSN)
		if dsn == "" {
			b.Skipf("set %s for the PostgreSQL figures", EnvPGDSN)
		}
		admin, err := sqlstore.OpenPostgresRaw(ctx, dsn)
		if err != nil {
			b.Fatal(err)
		}
		// DOCKET_BENCH_REUSE=1 keeps a corpus an earlier run seeded
		var have int
		if os.Getenv("DOCKET_BENCH_REUSE") == "" || admin.QueryRow("SELECT count(*) FROM docket_serve_bench.memories").Scan(&have) != nil || have < benchCorpus {
			for _, q := range []string{"DROP SCHEMA IF EXISTS docket_serve_bench CASCADE", "CREATE SCHEMA docket_serve_bench"} {
				if _, err := admin.Exec(q); err != nil {
					b.Fatal(err)
				}
			}
			have = 0
		}
		reuse = have >= benchCorpus
		admin.Close()
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		st, err = sqlstore.OpenPostgres(ctx, dsn+sep+"search_path=docket_serve_bench")
		if err != nil {
			b.Fatal(err)
		}
	} else {
		// DOCKET_BENCH_SQLITE=PATH keeps a SQLite corpus between runs
		path := os.Getenv("DOCKET_BENCH_SQLITE")
		if path == "" {
			path = filepath.Join(dir, "store.db")
		}
		if st, err = sqlstore.OpenSQLite(ctx, path); err != nil {
			b.Fatal(err)
		}
		var have int
		st.DB().QueryRow("SELECT count(*) FROM memories").Scan(&have)
		reuse = have >= benchCorpus
	}
	if !reuse {
		t0 := time.Now()
		seedCorpus(b, st)
		if postgres {
			st.DB().Exec("VACUUM ANALYZE memories")
		}
		b.Logf("%s: seeded %d memories in %s", backend, benchCorpus, time.Since(t0).Round(time.Millisecond))
	}
	events, err := OpenEventLog(ctx, st.DB(), postgres)
	if err != nil {
		b.Fatal(err)
	}
	set, err := judge.LoadPolicySet(h)
	if err != nil {
		b.Fatal(err)
	}
	l, _ := ledger.Open(h)
	toks := OpenTokens(h)
	e := &env{t: b, h: h, st: st, tokens: map[Role]string{}}
	if _, e.tokens[RoleRuntime], err = toks.Create("bench", RoleRuntime, time.Now()); err != nil {
		b.Fatal(err)
	}
	if e.srv, err = New(Config{Home: h, Store: st, Events: events, Tokens: toks, Policy: set, Ledger: l}); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(e.srv.Handler()) // loopback; kept for the run
	e.url = ts.URL
	bs := &benchServer{env: e, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	benchServers[backend] = bs
	return bs
}

func (bs *benchServer) post(b *testing.B, path string, body []byte, want int) {
	req, _ := http.NewRequest("POST", bs.env.url+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+bs.env.tokens[RoleRuntime])
	resp, err := bs.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		b.Fatalf("%s: %d %s", path, resp.StatusCode, out)
	}
}

type durations []time.Duration

func (d durations) pct(p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e6
}

// report prints both paths' p50/p99, what HTTP adds at p50 and the ratio.
func report(b *testing.B, inproc, overHTTP durations) {
	b.ReportMetric(inproc.pct(0.5), "inproc-p50-ms")
	b.ReportMetric(inproc.pct(0.99), "inproc-p99-ms")
	b.ReportMetric(overHTTP.pct(0.5), "http-p50-ms")
	b.ReportMetric(overHTTP.pct(0.99), "http-p99-ms")
	b.ReportMetric(overHTTP.pct(0.5)-inproc.pct(0.5), "added-p50-ms")
	b.ReportMetric(overHTTP.pct(0.5)/inproc.pct(0.5), "ratio-p50")
	b.ReportMetric(0, "ns/op")
}

func benchRecallReqs() []store.RecallRequest {
	r := rand.New(rand.NewPCG(3, 5))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(benchWords)-1))
	reqs := make([]store.RecallRequest, 512)
	for i := range reqs {
		reqs[i] = store.RecallRequest{SchemaVersion: store.RecallSchema, RequestID: fmt.Sprintf("rq-%d", i), Workspace: "ws-bench", ActionID: "act",
			Query: store.Query{Summary: benchSentence(r, z, 6+r.IntN(4)), ToolName: fmt.Sprintf("t%d", r.IntN(10)),
				Entities: store.Entities{Repos: []string{fmt.Sprintf("r%d", r.IntN(50))}, Files: []string{fmt.Sprintf("f%d.go", r.IntN(5000))}}},
			Limits: store.Limits{MaxItems: 10}}
	}
	return reqs
}

func benchRecall(b *testing.B, backend string) {
	bs := benchFor(b, backend)
	reqs := benchRecallReqs()
	bodies := make([][]byte, len(reqs))
	for i, r := range reqs {
		bodies[i], _ = json.Marshal(r)
	}
	ctx := context.Background()
	var in, hp durations
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, err := bs.env.st.Recall(ctx, reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
		in = append(in, time.Since(t0))
		t0 = time.Now()
		bs.post(b, "/v1/judge/recall", bodies[i%len(bodies)], 200)
		hp = append(hp, time.Since(t0))
	}
	b.StopTimer()
	report(b, in, hp)
}

func BenchmarkRecallSQLite100k(b *testing.B)   { benchRecall(b, "sqlite") }
func BenchmarkRecallPostgres100k(b *testing.B) { benchRecall(b, "postgres") }

func benchDecisions(b *testing.B, backend string) {
	bs := benchFor(b, backend)
	ctx := context.Background()
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	mk := func(i int, via string) store.Decision {
		return store.Decision{SchemaVersion: store.DecisionSchema, Workspace: "ws-bench", Project: "p", ActionID: fmt.Sprintf("act-%d", i),
			IdempotencyKey: fmt.Sprintf("bench-%s-%s-%d", run, via, i), Decision: store.Block, ReasoningSummary: "force push to main blocked by policy",
			Confidence: "high", Judge: store.Judge{Kind: "rule"},
			MemoryToWrite: store.MemoryToWrite{Decisions: []string{"force push to main was blocked"}, Provenance: store.CandidateProvenance{DefaultStatus: store.Observed}}}
	}
	var in, hp durations
	b.ResetTimer()
	for i := range b.N {
		d := mk(i, "in")
		t0 := time.Now()
		if _, err := bs.env.st.WriteDecision(ctx, d); err != nil {
			b.Fatal(err)
		}
		in = append(in, time.Since(t0))
		body, _ := json.Marshal(mk(i, "http"))
		t0 = time.Now()
		bs.post(b, "/v1/judge/decisions", body, 201)
		hp = append(hp, time.Since(t0))
	}
	b.StopTimer()
	report(b, in, hp)
	sum := func(d durations) time.Duration {
		var s time.Duration
		for _, x := range d {
			s += x
		}
		return s
	}
	b.ReportMetric(float64(len(in))/sum(in).Seconds(), "inproc-decisions/s")
	b.ReportMetric(float64(len(hp))/sum(hp).Seconds(), "http-decisions/s")
}

func BenchmarkDecisionsSQLite100k(b *testing.B)   { benchDecisions(b, "sqlite") }
func BenchmarkDecisionsPostgres100k(b *testing.B) { benchDecisions(b, "postgres") }

func benchEvaluate(b *testing.B, backend string) {
	bs := benchFor(b, backend)
	ctx := context.Background()
	run := fmt.Sprintf("%d", time.Now().UnixNano())
	// external_side_effect: the class whose policy asks for recall
	body := func(i int, via string) []byte {
		s := proposalBody(fmt.Sprintf("%s-%s-%d", run, via, i), "crm.update", "external_side_effect", "flow-bench-"+via, nil)
		return []byte(strings.Replace(s, `"workspace_id":"acme"`, `"workspace_id":"ws-bench"`, 1))
	}
	var in, hp durations
	b.ResetTimer()
	for i := range b.N {
		p, input, session, err := parseProposal(body(i, "in"))
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		ev := bs.env.srv.engine(Principal{}).Evaluate(ctx, p, input, session)
		in = append(in, time.Since(t0))
		if len(ev.Warnings) > 0 || ev.Recall == "not_needed" {
			b.Fatalf("evaluation: recall %q, warnings %v", ev.Recall, ev.Warnings)
		}
		t0 = time.Now()
		bs.post(b, "/v1/judge/evaluate", body(i, "http"), 201)
		hp = append(hp, time.Since(t0))
	}
	b.StopTimer()
	report(b, in, hp)
}

func BenchmarkEvaluateSQLite100k(b *testing.B)   { benchEvaluate(b, "sqlite") }
func BenchmarkEvaluatePostgres100k(b *testing.B) { benchEvaluate(b, "postgres") }
