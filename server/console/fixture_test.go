package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/server"
	"github.com/docket/docket/store/firewall"
	"github.com/docket/docket/store/firewall/gitleaks"
	"github.com/docket/docket/store/sqlstore"
	"github.com/docket/docket/trust"
)

func TestMain(m *testing.M) {
	firewall.UseDetector(gitleaks.Detect)
	os.Exit(m.Run())
}

// fixture is a running docket server with the console mounted, over a
// fresh state root.
type fixture struct {
	t   testing.TB
	h   home.Home
	st  *sqlstore.Store
	srv *server.Server
	con *Console
	l   *ledger.Ledger
	url string
}

var runtimeP = server.Principal{ID: "tok_runtimetest", Name: "runtime-test", Role: server.RoleRuntime}

var reviewerP = server.Principal{ID: "tok_reviewertest", Name: "reviewer-test", Role: server.RoleReviewer}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	h, _ := home.At(t.TempDir())
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st, err := sqlstore.OpenSQLite(ctx, h.StorePath())
	if err != nil {
		t.Fatal(err)
	}
	events, err := server.OpenEventLog(ctx, st.DB(), false)
	if err != nil {
		t.Fatal(err)
	}
	set, err := judge.LoadPolicySet(h)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Home: h, Store: st, Events: events, Tokens: server.OpenTokens(h), Policy: set, Ledger: l})
	if err != nil {
		t.Fatal(err)
	}
	con, err := New(srv)
	if err != nil {
		t.Fatal(err)
	}
	srv.Mount(con.Handler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln, "", ""); close(done) }()
	t.Cleanup(func() { cancel(); <-done; st.Close() })
	return &fixture{t: t, h: h, st: st, srv: srv, con: con, l: l, url: "http://" + ln.Addr().String()}
}

// call runs an API route as the runtime and decodes the answer.
func (f *fixture) call(method, target, body string) map[string]any {
	f.t.Helper()
	return f.callAs(runtimeP, method, target, body)
}

func (f *fixture) callAs(who server.Principal, method, target, body string) map[string]any {
	f.t.Helper()
	b, err := f.srv.Call(context.Background(), who, method, target, []byte(body))
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, target, err)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

func (f *fixture) appendEntry(session string, r ledger.Record) *ledger.Entry {
	f.t.Helper()
	e, err := f.l.Append(session, r)
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

// loginURL issues a one-time login link.
func (f *fixture) loginURL(role server.Role) string {
	f.t.Helper()
	secret, err := IssueLogin(f.h, "ana", role, time.Minute, time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	return f.url + LoginPath + "?t=" + url.QueryEscape(secret)
}

// client is a logged-in HTTP client (no redirects followed for POSTs'
// status checks unless asked).
func (f *fixture) client(role server.Role) *http.Client {
	f.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	resp, err := c.Get(f.loginURL(role))
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		f.t.Fatalf("login: %d", resp.StatusCode)
	}
	return c
}

// Seeds: what the tests and screenshots show.
const (
	blockedSession = "sess-blocked"
	doneSession    = "sess-done"
	xss            = `<script>alert("x")</script><img src=x onerror=alert(1)>`
)

func (f *fixture) seedBlocked() {
	f.appendEntry(blockedSession, ledger.Record{Kind: ledger.KindToolCall, Runtime: "claude-code", Event: "PostToolUse", Tool: "Bash",
		Args: json.RawMessage(`{"command":"go build ./..."}`), Body: map[string]any{"failed": false, "tool_kind": "shell", "exit_code": 0},
		Artifacts: []ledger.Artifact{{Name: "input.json", Data: strings.NewReader(`{"command":"go build ./..."}`)}, {Name: "stdout", Data: strings.NewReader("ok " + xss + "\n")}}})
	f.appendEntry(blockedSession, ledger.Record{Kind: ledger.KindGateDecision, Runtime: "claude-code", Event: "Stop",
		Body: map[string]any{"decision": "block", "claims": []map[string]any{{"type": "tests_pass", "status": "missing", "sentences": []string{"All tests pass " + xss}}}}})
}

func (f *fixture) seedDone() {
	f.appendEntry(doneSession, ledger.Record{Kind: ledger.KindToolCall, Runtime: "codex", Event: "PostToolUse", Tool: "shell", Body: map[string]any{"failed": false, "exit_code": 0}})
	p := f.appendEntry(doneSession, ledger.Record{Kind: ledger.KindValidatorPass, Runtime: "codex", Body: map[string]any{"claim": "tests_pass", "result": "pass", "validator": "go-test"}})
	f.appendEntry(doneSession, ledger.Record{Kind: ledger.KindGateDecision, Runtime: "codex", Event: "Stop",
		Body: map[string]any{"decision": "allow", "claims": []map[string]any{{"type": "tests_pass", "status": "supported", "pass_seq": p.Seq, "validator": "go-test", "sentences": []string{"Tests pass."}}}}})
}

// seedReview writes a decision whose lesson lands in the review queue
// and returns the item id.
func (f *fixture) seedReview(lesson string) string { return f.seedReviewKey("k-rev", lesson) }

func (f *fixture) seedReviewKey(key, lesson string) string {
	out := f.call("POST", "/v1/judge/decisions", fmt.Sprintf(`{"schema_version":"openbrain.judge.decision.v1","workspace_id":"acme","project_id":"docket","action_id":"act-%s",
		"idempotency_key":%q,"decision":"block","reasoning_summary":"pushing to main needs review","confidence":"high",
		"judge":{"kind":"rule","policy_version":"v1"},"checks":{"policy_check":"fail"},"memory_to_write":{"lessons":[%q]}}`, key, key, lesson))
	items, _ := out["review_items"].([]any)
	if len(items) != 1 {
		f.t.Fatalf("decision made no review item: %v", out)
	}
	return items[0].(string)
}

// seedApproval asks the judge, as a runtime token, about a high-risk
// action from a new session and returns the approval id it queued.
func (f *fixture) seedApproval(session, key string) string {
	return f.seedApprovalAs(runtimeP, session, key)
}

// seedApprovalAs is seedApproval as who: a reviewer for a session the
// hooks started, which no runtime token may be judged under.
func (f *fixture) seedApprovalAs(who server.Principal, session, key string) string {
	body := fmt.Sprintf(`{"schema_version":"openbrain.judge.action_proposal.v1","workspace_id":"acme","project_id":"docket","task_id":"task-1","flow_id":%q,
		"action_id":"act-%s","idempotency_key":%q,"runtime":{"name":"openclaw","version":"1.4","adapter":"docket-openclaw"},
		"actor":{"agent_id":"coder","role":"worker"},"tool":{"name":"payments.wire","kind":"api","target_system":null},
		"action":{"risk_class":"high_risk","description":"wire 5000 EUR for the customer","target":null,"arguments_digest":"sha256:%s","full_arguments_ref":null},
		"authorization":{"claimed_user_authorization":null,"user_authorization_refs":[]},"evidence":{"source_refs":[]},
		"expected_consequence":{"summary":"money sent","external_recipients":[],"data_exposed":[],"systems_changed":["bank"],"persistence":"external"},
		"rollback":{"is_reversible":false,"rollback_plan":null,"rollback_owner":null},
		"sensitivity":{"contains_secret_like_data":false,"contains_customer_data":true,"contains_private_personal_data":false,"contains_financial_or_legal_data":true,"contains_production_system_access":false}}`,
		session, key, key, strings.Repeat("ab", 32))
	out := f.callAs(who, "POST", "/v1/judge/evaluate", body)
	id, _ := out["approval_id"].(string)
	if id == "" {
		f.t.Fatalf("evaluate queued no approval: %v", out)
	}
	return id
}

// seedTrust rates agents through the real trust store: claude-code's
// main agent approved 25 times 65 days ago (level 2 by now: two 30-day
// holds), the Explore subagent of claude-code (no session on the board)
// likewise, and openclaw's coder with a critical violation (level 0).
func (f *fixture) seedTrust() {
	f.t.Helper()
	p, err := trust.LoadPolicy(f.h)
	if err != nil {
		f.t.Fatal(err)
	}
	st := &trust.Store{Home: f.h, Keys: f.l.Keys()}
	// the state is written as of 65 days ago: the levels a reader sees
	// today are the ones it advances to
	then := time.Now().Add(-65 * 24 * time.Hour)
	crit := trust.Signal{ID: "crit-1", Time: then, Agent: "openclaw/coder", Tool: "payments.wire", Class: "high_risk",
		Misaligned: true, High: true, Critical: true, Why: "critical: builtin:keys_read"}
	sigs := []trust.Signal{crit}
	for i := 0; i < 25; i++ {
		for _, a := range []string{"claude-code/main", "claude-code/Explore"} {
			sigs = append(sigs, trust.Signal{ID: fmt.Sprintf("%s-%d", a, i), Time: then, Agent: a, Tool: "Bash", Class: "reversible_write", Rating: 1, Why: "approved"})
		}
	}
	if err := st.Record(&p, sigs, then); err != nil {
		f.t.Fatal(err)
	}
}
