package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store/sqlstore"
)

// EnvPGDSN names the PostgreSQL server the replica tests use (.ci/run
// starts one). Without it they skip, except under CI=true.
const EnvPGDSN = "DOCKET_TEST_PG_DSN"

var schemaSeq atomic.Int64

// pgSchema creates a fresh schema and returns a DSN whose tables live in it.
func pgSchema(t testing.TB) string {
	dsn := os.Getenv(EnvPGDSN)
	if dsn == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is unset under CI=true: .ci/run must start PostgreSQL", EnvPGDSN)
		}
		t.Skipf("replica tests skipped: set %s=postgres://… (see .ci/run)", EnvPGDSN)
	}
	ctx := context.Background()
	admin, err := sqlstore.OpenPostgresRaw(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("docket_serve_%d_%d", os.Getpid(), schemaSeq.Add(1))
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE")
		admin.Close()
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// replica is one server over its own state root and its own connection
// pool to the shared database.
func replica(t *testing.T, dsn string) *env {
	h, _ := home.At(t.TempDir())
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	st, err := sqlstore.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return newEnvOver(t, h, st, true)
}

// replicas are n servers on one database that serve the same tokens (a
// copy of the first one's tokens.json): a runtime's records are bound to
// its token's id, so a runtime reaches its own through any replica.
func replicas(t *testing.T, dsn string, n int) []*env {
	rs := []*env{replica(t, dsn)}
	b, err := os.ReadFile(TokensFile(rs[0].h))
	if err != nil {
		t.Fatal(err)
	}
	for len(rs) < n {
		r := replica(t, dsn)
		if err := os.WriteFile(TokensFile(r.h), b, 0o600); err != nil {
			t.Fatal(err)
		}
		r.tokens = rs[0].tokens
		rs = append(rs, r)
	}
	return rs
}

func TestReplicasShareDecisions(t *testing.T) {
	dsn := pgSchema(t)
	rs := replicas(t, dsn, 2)
	a, b := rs[0], rs[1]
	w := a.must(201, "POST", "/v1/judge/decisions", RoleRuntime, decisionBody("k-ab", "block", `"memory_to_write":{"lessons":["no deploys on friday"]}`))
	id := w.Get("decision_id").Str
	if got := b.must(200, "GET", "/v1/judge/decisions/"+id, RoleRuntime, ""); got.Get("decision").Str != "block" {
		t.Fatalf("read through B: %s", got.Raw)
	}
	// the replay through B is a replay
	if r := b.must(200, "POST", "/v1/judge/decisions", RoleRuntime, decisionBody("k-ab", "block", `"memory_to_write":{"lessons":["no deploys on friday"]}`)); r.Get("decision_id").Str != id {
		t.Fatalf("replay through B: %s", r.Raw)
	}
	b.must(409, "POST", "/v1/judge/decisions", RoleRuntime, decisionBody("k-ab", "allow", ""))
	// the review queue and the event stream are shared too
	item := w.Get("review_items.0").Str
	b.must(200, "POST", "/v1/review-queue/"+item+"/actions", RoleReviewer, `{"action":"evidence_only"}`)
	evs := readEvents(t, b, "", 2)
	if evs[0].typ != EventDecisionWritten || evs[1].typ != EventReviewAction {
		t.Fatalf("events through B: %+v", evs)
	}
}

func TestReplicasConcurrentIdempotency(t *testing.T) {
	dsn := pgSchema(t)
	concurrentSameKey(t, replicas(t, dsn, 2), 32)
}

// TestReplicaKillLosesNoAcknowledgedWrite runs two real `docket serve`
// processes on one PostgreSQL, kills one with SIGKILL in the middle of a
// burst of writes, and reads every write it acknowledged through the
// other.
func TestReplicaKillLosesNoAcknowledgedWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds docket")
	}
	dsn := pgSchema(t)
	bin := filepath.Join(t.TempDir(), "docket")
	build := exec.Command("go", "build", "-o", bin, "../cmd/docket")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build docket: %v\n%s", err, out)
	}
	// the replicas serve the same tokens (the first one's tokens.json)
	var tokens []byte
	var token string
	start := func() (*exec.Cmd, string, string) {
		dir := t.TempDir()
		envv := append(os.Environ(), "DOCKET_HOME="+dir, "DOCKET_STORE_DSN="+dsn)
		run := func(args ...string) string {
			c := exec.Command(bin, args...)
			c.Env = envv
			out, err := c.Output()
			if err != nil {
				t.Fatalf("docket %v: %v", args, err)
			}
			return strings.TrimSpace(string(out))
		}
		run("init")
		tok := run("token", "create", "--role", "runtime", "--name", "burst")
		h, _ := home.At(dir)
		if tokens == nil {
			b, err := os.ReadFile(TokensFile(h))
			if err != nil {
				t.Fatal(err)
			}
			tokens, token = b, tok
		} else if err := os.WriteFile(TokensFile(h), tokens, 0o600); err != nil {
			t.Fatal(err)
		}
		tok = token
		c := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
		c.Env = envv
		stderr, _ := c.StderrPipe()
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "docket: serving "); ok {
				go func() {
					for sc.Scan() {
					}
				}()
				return c, u, tok
			}
		}
		t.Fatal("docket serve did not start")
		return nil, "", ""
	}
	t0 := time.Now()
	procA, urlA, tokA := start()
	_, urlB, tokB := start()
	t.Logf("replicas up after %s", time.Since(t0))
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(url, tok, key string) (int, string) {
		req, _ := http.NewRequest("POST", url+"/v1/judge/decisions", strings.NewReader(decisionBody(key, "allow", `"memory_to_write":{"decisions":["burst write `+key+`"],"provenance":{"default_status":"observed"}}`)))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := client.Do(req)
		if err != nil {
			return 0, ""
		}
		defer resp.Body.Close()
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b)
		return resp.StatusCode, gjson.Get(b.String(), "decision_id").Str
	}
	var mu sync.Mutex
	acked := map[string]string{} // key -> decision id
	var n atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("burst-%d-%d", w, i)
				if code, id := post(urlA, tokA, key); code == 201 {
					mu.Lock()
					acked[key] = id
					mu.Unlock()
					n.Add(1)
				} else if code == 0 {
					return // A is gone
				}
			}
		}(w)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n.Load() < 200 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("%d writes acknowledged after %s; killing A", n.Load(), time.Since(t0))
	procA.Process.Signal(syscall.SIGKILL)
	procA.Wait()
	close(stop)
	wg.Wait()
	if len(acked) < 50 {
		t.Fatalf("only %d writes acknowledged before the kill", len(acked))
	}
	t.Logf("burst ended after %s", time.Since(t0))
	for key, id := range acked {
		req, _ := http.NewRequest("GET", urlB+"/v1/judge/decisions/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+tokB)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("acknowledged write %s (%s) is lost: B answers %d", key, id, resp.StatusCode)
		}
	}
	t.Logf("%d acknowledged writes, all read back through the surviving replica", len(acked))
}
