package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/memstore"
	"github.com/docket/docket/store/sqlstore"
	"github.com/docket/docket/store/storetest"
)

// EnvPGDSN names the PostgreSQL server the tests use. Each test gets its
// own schema on it.
const EnvPGDSN = "DOCKET_TEST_PG_DSN"

func newSQLite(t *testing.T) store.Store {
	s, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var schemaSeq atomic.Int64

// pgDSN returns the test server's DSN. Without one the test skips, except
// under CI=true, where a missing server is a failure: CI never silently
// skips the PostgreSQL suite.
func pgDSN(t testing.TB) string {
	dsn := os.Getenv(EnvPGDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset under CI=true: .ci/run must start PostgreSQL for the store's team backend", EnvPGDSN)
		}
		t.Skipf("PostgreSQL tests skipped: set %s=postgres://… (the .ci/run PostgreSQL block shows how to start one)", EnvPGDSN)
	}
	return dsn
}

// newPostgres opens a store in a fresh schema so tests never see each
// other's rows; the schema is dropped afterwards.
func newPostgres(t testing.TB) *sqlstore.Store {
	dsn := pgDSN(t)
	return openSchema(t, dsn, freshSchema(t, dsn))
}

// freshSchema creates a schema of its own for a test and drops it
// afterwards.
func freshSchema(t testing.TB, dsn string) string {
	ctx := context.Background()
	admin, err := sqlstore.OpenPostgresRaw(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("docket_test_%d_%d", os.Getpid(), schemaSeq.Add(1))
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	})
	return schema
}

// schemaDSN is dsn with its search path set to schema.
func schemaDSN(dsn, schema string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// openSchema opens a store whose tables live in schema.
func openSchema(t testing.TB, dsn, schema string) *sqlstore.Store {
	s, err := sqlstore.OpenPostgres(context.Background(), schemaDSN(dsn, schema))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSQLite(t *testing.T) {
	storetest.TestStore(t, newSQLite)
}

func TestPostgres(t *testing.T) {
	pgDSN(t)
	storetest.TestStore(t, func(t *testing.T) store.Store { return newPostgres(t) })
}

// TestSchemaEnforcesInvariants writes rows past the Go checks, straight
// into the table, and expects the schema to refuse each.
func TestSchemaEnforcesInvariants(t *testing.T) {
	backends := map[string]func(t *testing.T) *sqlstore.Store{
		"sqlite":   func(t *testing.T) *sqlstore.Store { return newSQLite(t).(*sqlstore.Store) },
		"postgres": func(t *testing.T) *sqlstore.Store { return newPostgres(t) },
	}
	bad := []struct {
		name, set string
	}{
		{"instruction without confirmation", "use_policy = 'can_use_as_instruction', status = 'observed', confirmed_by = ''"},
		{"instruction unconfirmed status", "use_policy = 'can_use_as_instruction', status = 'generated', confirmed_by = 'ana'"},
		{"generated instruction", "use_policy = 'can_use_as_instruction', status = 'inferred', confirmed_by = 'ana'"},
		{"disputed evidence", "status = 'disputed'"},
		{"superseded evidence", "status = 'superseded'"},
		{"stale evidence", "stale = 1"},
		{"rejected evidence", "lifecycle = 'rejected'"},
		{"low confidence evidence", "confidence = 0.2"},
		{"unknown status", "status = 'believed'"},
		{"unknown policy", "use_policy = 'gospel'"},
		{"rewritten lineage", "lineage_hash = 'sha256:forged'"},
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			if name == "postgres" {
				pgDSN(t)
			}
			s := open(t)
			defer s.Close()
			ctx := context.Background()
			m, err := s.PutMemory(ctx, store.Memory{
				ID: "mem_schema", Summary: "evidence row", Content: "x",
				Provenance: store.Provenance{Status: store.Observed, Confidence: 0.9},
				UsePolicy:  store.Evidence,
				Scope:      store.Scope{Workspace: "w", Visibility: store.WorkspaceVisible},
				Lineage:    store.Lineage{Session: "s", Seq: 1, EntryHash: "sha256:aa"},
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range bad {
				if _, err := s.DB().ExecContext(ctx, "UPDATE memories SET "+tt.set+" WHERE id = '"+m.ID+"'"); err == nil {
					t.Errorf("%s: schema accepted UPDATE SET %s", tt.name, tt.set)
				}
			}
			if _, err := s.DB().ExecContext(ctx, "DELETE FROM memories WHERE id = '"+m.ID+"'"); err == nil {
				t.Errorf("schema allowed deleting a memory")
			}
			// The same row made do_not_inject may be disputed.
			if _, err := s.DB().ExecContext(ctx, "UPDATE memories SET status = 'disputed', use_policy = 'do_not_inject_automatically' WHERE id = '"+m.ID+"'"); err != nil {
				t.Errorf("schema refused a legal update: %v", err)
			}
			// injectable_memories applies stale_after against the clock.
			fresh, _ := s.PutMemory(ctx, store.Memory{ID: "mem_view1", Summary: "fresh", Provenance: store.Provenance{Status: store.Observed, Confidence: 0.9},
				UsePolicy: store.Evidence, Scope: store.Scope{Workspace: "w"}})
			s.PutMemory(ctx, store.Memory{ID: "mem_view2", Summary: "past stale_after", Provenance: store.Provenance{Status: store.Observed, Confidence: 0.9},
				UsePolicy: store.Evidence, Scope: store.Scope{Workspace: "w"}, Freshness: store.Freshness{StaleAfter: time.Now().Add(-time.Minute)}})
			var ids []string
			rows, err := s.DB().QueryContext(ctx, "SELECT id FROM injectable_memories ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var id string
				rows.Scan(&id)
				ids = append(ids, id)
			}
			rows.Close()
			if strings.Join(ids, ",") != fresh.ID {
				t.Errorf("injectable_memories = %v, want only %s", ids, fresh.ID)
			}
			// A check failure surfaces as an invariant error through the API.
			_, err = s.PutMemory(ctx, store.Memory{Summary: "x", Provenance: store.Provenance{Status: store.Generated, Confidence: 0.9},
				UsePolicy: store.Instruction, ConfirmedBy: "ana", Scope: store.Scope{Workspace: "w"}})
			if !errors.Is(err, store.ErrInvariant) {
				t.Errorf("PutMemory(generated instruction) = %v, want ErrInvariant", err)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	h, _ := home.At(dir)
	s, err := sqlstore.Open(ctx, h, "")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	fi, err := os.Stat(h.StorePath())
	if err != nil {
		t.Fatalf("default store not at %s: %v", h.StorePath(), err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("store mode %v, want 0600", fi.Mode().Perm())
	}
	// Reopening finds the schema current and keeps the data.
	for i := range 2 {
		s, err := sqlstore.Open(ctx, h, "sqlite:"+h.StorePath())
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := s.PutMemory(ctx, store.Memory{ID: "mem_keep", Summary: "kept", Provenance: store.Provenance{Status: store.Observed, Confidence: 1},
				UsePolicy: store.Evidence, Scope: store.Scope{Workspace: "w"}}); err != nil {
				t.Fatal(err)
			}
		} else if _, err := s.GetMemory(ctx, "mem_keep"); err != nil {
			t.Fatalf("reopen lost data: %v", err)
		}
		var v int
		s.DB().QueryRow("SELECT MAX(version) FROM schema_migrations").Scan(&v)
		if v != sqlstore.SchemaVersion() {
			t.Errorf("schema version %d, want %d", v, sqlstore.SchemaVersion())
		}
		s.Close()
	}
	for _, dsn := range []string{"mysql://x", "redis://y"} {
		if _, err := sqlstore.Open(ctx, h, dsn); err == nil {
			t.Errorf("Open(%q) succeeded", dsn)
		}
	}
	if _, err := sqlstore.Open(ctx, h, "postgres://u:hunter2@127.0.0.1:1/none?connect_timeout=1"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open(unreachable postgres) = %v: want an error without the password", err)
	}
}

// TestSQLiteAcrossHandles writes one decision from several independent
// store handles on one file — as concurrent hook processes do — and answers
// an approval from one handle while another waits on it.
func TestSQLiteAcrossHandles(t *testing.T) {
	ctx := context.Background()
	p := filepath.Join(t.TempDir(), "store.db")
	const n = 6
	handles := make([]*sqlstore.Store, n)
	for i := range handles {
		s, err := sqlstore.OpenSQLite(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		handles[i] = s
	}
	results := make(chan store.WriteResult, n)
	errs := make(chan error, n)
	for _, s := range handles {
		go func() {
			r, err := s.WriteDecision(ctx, store.Decision{Workspace: "w", ActionID: "a", IdempotencyKey: "same", Decision: store.Escalate,
				ReasoningSummary: "needs a human", Judge: store.Judge{Kind: "rule"}, MemoryToWrite: store.MemoryToWrite{Lessons: []string{"ask for prod"}}})
			results <- r
			errs <- err
		}()
	}
	fresh, id := 0, ""
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		r := <-results
		if id == "" {
			id = r.DecisionID
		}
		if r.DecisionID != id {
			t.Fatalf("handles disagree on the decision id: %s vs %s", r.DecisionID, id)
		}
		if !r.Replayed {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d handles wrote the decision, want 1", fresh)
	}
	if _, err := handles[0].SubmitApproval(ctx, store.Approval{ID: "apr_x", Tool: "Bash", Summary: "deploy", DecisionID: id}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		handles[1].ResolveApproval(ctx, "apr_x", store.Resolution{Status: store.ApprovalRejected, By: "ana"})
	}()
	a, err := store.Wait(ctx, handles[2], "apr_x", 5*time.Second)
	if err != nil || a.Status != store.ApprovalRejected || a.Allows() {
		t.Fatalf("Wait across handles: %+v %v", a, err)
	}
}

// TestRankingMatchesMemstore: the SQL backends and the in-memory store
// rank the same memories the same way, score for score, under one clock.
func TestRankingMatchesMemstore(t *testing.T) {
	clock := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	backends := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			s := newSQLite(t).(*sqlstore.Store)
			s.Now = now
			return s
		},
		"postgres": func(t *testing.T) store.Store {
			s := newPostgres(t)
			s.Now = now
			return s
		},
	}
	fixture := func(t *testing.T, s store.Store) []string {
		ctx := context.Background()
		mk := func(id, summary string, days int, ents ...string) store.Memory {
			return store.Memory{ID: id, Summary: summary, Content: summary,
				Source:     store.Source{Kind: "system_event", URI: "ledger:s#" + id},
				Provenance: store.Provenance{Status: store.Observed, Confidence: 0.9, CreatedBy: "system"},
				UsePolicy:  store.Evidence, Scope: store.Scope{Workspace: "ws", Visibility: store.WorkspaceVisible},
				Entities: ents, Freshness: store.Freshness{CreatedAt: clock.AddDate(0, 0, -days)}}
		}
		for _, m := range []store.Memory{
			mk("m1", "deploy to prod failed on the migration", 1, "repo:api"),
			mk("m2", "deploy to prod failed, rolled back", 9, "repo:api"),
			mk("m3", "deploy docs updated in the readme", 0),
			mk("m4", "deploy token leaked in a comment", 30, "repo:web"),
			mk("m5", "deploy flaky on the ci runners", 3, "repo:api"),
		} {
			if _, err := s.PutMemory(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
		obs := mk("", "deploy failed again on the migration lock", 5, "repo:api")
		obs.PatternKey = "deploy-lock"
		for i := uint64(1); i <= 2; i++ {
			obs.Lineage = store.Lineage{Session: "s", Seq: i, EntryHash: fmt.Sprintf("h%d", i)}
			obs.Freshness.CreatedAt = clock.AddDate(0, 0, -int(6-i))
			if _, _, err := s.Observe(ctx, obs); err != nil {
				t.Fatal(err)
			}
		}
		resp, err := s.Recall(ctx, store.RecallRequest{Workspace: "ws", Query: store.Query{Summary: "deploy failed", Entities: store.Entities{Repos: []string{"api"}}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range resp.Memories {
			out = append(out, fmt.Sprintf("%s %s %.6f %+v", m.Summary, m.Bucket, m.Score, *m.Relevance))
		}
		return out
	}
	want := fixture(t, &memstore.Store{Now: now})
	if len(want) != 6 {
		t.Fatalf("memstore recalled %d: %v", len(want), want)
	}
	for name, open := range backends {
		t.Run(name, func(t *testing.T) {
			got := fixture(t, open(t))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("ranking differs from memstore:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
			}
		})
	}
}

// TestRelevancePolicy: the embedded relevance.json is the default set; a
// replacement under policies/ re-buckets recall; an unusable one is an
// error when the store opens, never the default.
func TestRelevancePolicy(t *testing.T) {
	def, err := policies.Default(store.RelevanceFile)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := store.ParseRelevance(def)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(parsed, store.DefaultRelevance()) {
		t.Fatalf("policies/defaults/relevance.json differs from store.DefaultRelevance()")
	}
	ctx := context.Background()
	h, _ := home.At(t.TempDir())
	if err := os.MkdirAll(h.PoliciesDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	custom := `{"schema":"docket.relevance.v1","fallback":"general","fallback_severity":1,
		"buckets":[{"bucket":"payments","severity":5,"words":["refund"]}]}`
	os.WriteFile(filepath.Join(h.PoliciesDir(), store.RelevanceFile), []byte(custom), 0o600)
	s, err := sqlstore.Open(ctx, h, "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := store.Memory{ID: "m1", Summary: "refund issued twice", Content: "refund issued twice",
		Source:     store.Source{Kind: "system_event", URI: "ledger:s#1"},
		Provenance: store.Provenance{Status: store.Observed, Confidence: 0.9, CreatedBy: "system"},
		UsePolicy:  store.Evidence, Scope: store.Scope{Workspace: "ws", Visibility: store.WorkspaceVisible}}
	if _, err := s.PutMemory(ctx, m); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Recall(ctx, store.RecallRequest{Workspace: "ws", Query: store.Query{Summary: "refund"}})
	if err != nil || len(resp.Memories) != 1 || resp.Memories[0].Bucket != "payments" {
		t.Fatalf("custom buckets: %v %+v", err, resp.Memories)
	}
	os.WriteFile(filepath.Join(h.PoliciesDir(), store.RelevanceFile), []byte(`{"fallback":"x","fallback_severity":7}`), 0o600)
	if _, err := sqlstore.Open(ctx, h, ""); err == nil || !strings.Contains(err.Error(), "relevance.json") {
		t.Fatalf("invalid relevance.json: %v", err)
	}
}

// TestCreatorMigration opens a database written by the schema before
// creators (version 2) with the current code: migration 3 adds the
// creator columns, the old approval and decision read back with an empty
// creator (which no runtime token matches), and a creator, once written,
// cannot be rewritten in the table.
func TestCreatorMigration(t *testing.T) {
	ctx := context.Background()
	backends := migrationBackends(ctx)
	for name, mk := range backends {
		t.Run(name, func(t *testing.T) {
			raw, open := mk(t)
			pg := name == "postgres"
			if err := sqlstore.MigrateTo(ctx, raw, pg, 2); err != nil {
				t.Fatal(err)
			}
			ph := func(q string) string { // ? to $n for PostgreSQL
				if !pg {
					return q
				}
				for i := 1; strings.Contains(q, "?"); i++ {
					q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
				}
				return q
			}
			now := time.Now().UnixMilli()
			if _, err := raw.ExecContext(ctx, ph(`INSERT INTO approvals (id, session, tool_use_id, tool, summary, reason, status, created_at, timeout_at)
				VALUES ('apr_old', 's1', 'toolu_1', 'Bash', 'deploy', 'high risk', 'pending', ?, ?)`), now, now+int64(time.Hour/time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			body := `{"schema_version":"openbrain.judge.decision.v1","workspace_id":"w","action_id":"a1","decision_id":"dec_old","idempotency_key":"k-old","decision":"allow","reasoning_summary":"ok","confidence":"high","judge":{"kind":"rule"},"checks":{},"required_revision":{},"escalation":{},"memory_to_write":{"provenance":{}}}`
			if _, err := raw.ExecContext(ctx, ph(`INSERT INTO decisions (id, idempotency_key, workspace, action_id, outcome, body, created_at)
				VALUES ('dec_old', 'k-old', 'w', 'a1', 'allow', ?, ?)`), body, now); err != nil {
				t.Fatal(err)
			}
			raw.Close()

			s := openMigrated(t, open, 3)
			defer s.Close()
			a, err := s.GetApproval(ctx, "apr_old")
			if err != nil || a.Creator != "" || a.Status != store.ApprovalPending {
				t.Fatalf("old approval: %+v %v, want pending with no creator", a, err)
			}
			d, err := s.GetDecision(ctx, "dec_old")
			if err != nil || d.Creator != "" || d.Decision != store.Allow {
				t.Fatalf("old decision: %+v %v, want allow with no creator", d, err)
			}
			if a, err := s.ResolveApproval(ctx, "apr_old", store.Resolution{Status: store.ApprovalApproved, By: "ana"}); err != nil || a.Creator != "" {
				t.Fatalf("resolve old approval: %+v %v", a, err)
			}
			// a creator is fixed once written, even past the Go code
			if _, err := s.SubmitApproval(ctx, store.Approval{ID: "apr_new", Tool: "Bash", Summary: "x", Creator: "tok_a"}); err != nil {
				t.Fatal(err)
			}
			for _, id := range []string{"apr_new", "apr_old"} {
				if _, err := s.DB().ExecContext(ctx, ph("UPDATE approvals SET creator = 'tok_evil' WHERE id = ?"), id); err == nil {
					t.Errorf("the table let %s's creator be rewritten", id)
				}
			}
			if _, err := s.DB().ExecContext(ctx, "UPDATE decisions SET creator = 'tok_evil' WHERE id = 'dec_old'"); err == nil {
				t.Error("the table let a decision's creator be rewritten")
			}
		})
	}
}

// openMigrated opens a database with the current code and checks that
// it migrated it to the current schema, at least version min.
func openMigrated(t *testing.T, open func() *sqlstore.Store, min int) *sqlstore.Store {
	t.Helper()
	s := open()
	var v int
	s.DB().QueryRow("SELECT MAX(version) FROM schema_migrations").Scan(&v)
	if v != sqlstore.SchemaVersion() || v < min {
		s.Close()
		t.Fatalf("schema version %d after opening, want %d", v, sqlstore.SchemaVersion())
	}
	return s
}

// migrationBackends returns, per SQL engine, a raw connection to a fresh
// database (to build an old schema on) and a function that opens it with
// the current code.
func migrationBackends(ctx context.Context) map[string]func(t *testing.T) (raw *sql.DB, open func() *sqlstore.Store) {
	return map[string]func(t *testing.T) (raw *sql.DB, open func() *sqlstore.Store){
		"sqlite": func(t *testing.T) (*sql.DB, func() *sqlstore.Store) {
			path := filepath.Join(t.TempDir(), "store.db")
			raw, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			return raw, func() *sqlstore.Store {
				s, err := sqlstore.OpenSQLite(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
		},
		"postgres": func(t *testing.T) (*sql.DB, func() *sqlstore.Store) {
			dsn := pgDSN(t)
			schema := freshSchema(t, dsn)
			raw, err := sqlstore.OpenPostgresRaw(ctx, schemaDSN(dsn, schema))
			if err != nil {
				t.Fatal(err)
			}
			return raw, func() *sqlstore.Store { return openSchema(t, dsn, schema) }
		},
	}
}

// TestSessionOwnersMigration opens a database of the schema before
// session owners (version 3) with the current code: migration 4 adds the
// table, claims work, and an owner, once recorded, can be neither
// rewritten nor removed in the table.
func TestSessionOwnersMigration(t *testing.T) {
	ctx := context.Background()
	for name, mk := range migrationBackends(ctx) {
		t.Run(name, func(t *testing.T) {
			raw, open := mk(t)
			if err := sqlstore.MigrateTo(ctx, raw, name == "postgres", 3); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			s := openMigrated(t, open, 4)
			defer s.Close()
			if got, err := s.ClaimSession(ctx, "ledger-1", "s1", "tok_a"); err != nil || got != "tok_a" {
				t.Fatalf("claim: %q %v", got, err)
			}
			if got, err := s.ClaimSession(ctx, "ledger-1", "s1", "tok_b"); err != nil || got != "tok_a" {
				t.Fatalf("second claim: %q %v, want tok_a", got, err)
			}
			for _, q := range []string{
				"UPDATE session_owners SET owner = 'tok_evil' WHERE session = 's1'",
				"UPDATE session_owners SET session = 's2' WHERE session = 's1'",
				"DELETE FROM session_owners WHERE session = 's1'",
				"INSERT INTO session_owners (scope, session, owner, claimed_at) VALUES ('ledger-1', 's1', 'tok_evil', 0)",
				"INSERT INTO session_owners (scope, session, owner, claimed_at) VALUES ('ledger-1', 's3', '', 0)",
			} {
				if _, err := s.DB().ExecContext(ctx, q); err == nil {
					t.Errorf("the table took %s", q)
				}
			}
			if got, err := s.SessionOwner(ctx, "ledger-1", "s1"); err != nil || got != "tok_a" {
				t.Fatalf("owner after the attempts: %q %v, want tok_a", got, err)
			}
		})
	}
}
