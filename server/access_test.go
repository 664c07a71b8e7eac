package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/store/memstore"
	"github.com/docket/docket/store/sqlstore"
)

func TestMayRead(t *testing.T) {
	tests := []struct {
		name    string
		who     Principal
		creator string
		want    bool
	}{
		{"runtime, its own", Principal{ID: "tok_a", Role: RoleRuntime}, "tok_a", true},
		{"runtime, another token's", Principal{ID: "tok_a", Role: RoleRuntime}, "tok_b", false},
		{"runtime, a hook's", Principal{ID: "tok_a", Role: RoleRuntime}, "", false},
		{"runtime, a prefix of its id", Principal{ID: "tok_a", Role: RoleRuntime}, "tok_", false},
		{"runtime, its id with a suffix", Principal{ID: "tok_a", Role: RoleRuntime}, "tok_ab", false},
		{"runtime, another case", Principal{ID: "tok_a", Role: RoleRuntime}, "TOK_A", false},
		{"runtime without an id, a hook's", Principal{Role: RoleRuntime}, "", false},
		{"no role, a matching id", Principal{ID: "tok_a"}, "tok_a", false},
		{"unknown role, a matching id", Principal{ID: "tok_a", Role: "root"}, "tok_a", false},
		{"unknown role, another token's", Principal{ID: "tok_a", Role: "root"}, "tok_b", false},
		{"reviewer, another token's", Principal{ID: "tok_r", Role: RoleReviewer}, "tok_b", true},
		{"reviewer, a hook's", Principal{ID: "tok_r", Role: RoleReviewer}, "", true},
		{"console reviewer (no id), a hook's", Principal{Role: RoleReviewer}, "", true},
		{"admin, another token's", Principal{ID: "tok_x", Role: RoleAdmin}, "tok_b", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.who.MayRead(tt.creator); got != tt.want {
				t.Fatalf("%+v.MayRead(%q) = %v, want %v", tt.who, tt.creator, got, tt.want)
			}
		})
	}
}

// accessBackends are the store backends the access rule is checked on:
// it lives in the server, but each backend must keep the creator it reads.
var accessBackends = []struct {
	name string
	env  func(t *testing.T) *env
}{
	{"memstore", func(t *testing.T) *env {
		h, _ := home.At(t.TempDir())
		if _, err := ledger.Init(h); err != nil {
			t.Fatal(err)
		}
		events, err := sqlstore.OpenSQLite(context.Background(), h.StorePath())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { events.Close() })
		return newEnvWith(t, h, &memstore.Store{}, events, false)
	}},
	{"sqlite", func(t *testing.T) *env { return newEnv(t) }},
	{"postgres", func(t *testing.T) *env { return replica(t, pgSchema(t)) }},
}

// runtime creates a runtime token and returns its secret and id.
func (e *env) runtime(name string) (secret, id string) {
	e.t.Helper()
	tok, secret, err := OpenTokens(e.h).Create(name, RoleRuntime, time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	return secret, tok.ID
}

// as sends a request with a token and returns the status and body.
func (e *env) as(token, method, path, body string) (int, string) {
	e.t.Helper()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	code, out := e.doRaw(method, path, token, b)
	return code, string(out)
}

// TestRuntimeReadsOnlyItsOwn: a runtime token reads the approvals and
// decisions it created, and nothing else: another runtime token's, a
// revoked token's and the hooks' answer exactly as an id that does not
// exist. Reviewers and admins read all of them.
func TestRuntimeReadsOnlyItsOwn(t *testing.T) {
	for _, be := range accessBackends {
		t.Run(be.name, func(t *testing.T) {
			testRuntimeReadsOnlyItsOwn(t, be.env(t))
		})
	}
}

func testRuntimeReadsOnlyItsOwn(t *testing.T, e *env) {
	ctx := context.Background()
	tokA, idA := e.runtime("tenant-a")
	tokB, _ := e.runtime("tenant-b")
	reviewer, admin := e.tokens[RoleReviewer], e.tokens[RoleAdmin]

	// A: an evaluation that escalates (a decision and an approval) and a
	// written-back decision
	code, out := e.as(tokA, "POST", "/v1/judge/evaluate", proposalBody("acc-1", "payments.wire", "high_risk", "flow-a", nil))
	ev := jsonOf(t, code, out, 201)
	evalID, aprA := ev["decision_id"].(string), ev["approval_id"].(string)
	if ev["decision"] != "escalate" || aprA == "" {
		t.Fatalf("evaluation: %s", out)
	}
	code, out = e.as(tokA, "POST", "/v1/judge/decisions", decisionBody("k-acc-a", "block", ""))
	wrote := jsonOf(t, code, out, 201)["decision_id"].(string)

	// the hooks: an approval and a decision with no token behind them,
	// through the adapter docket-judge uses
	hook := storeadapter.New(e.store)
	hookApr, err := hook.Submit(ctx, judge.ApprovalItem{SessionID: "flow-hook", ActionID: "toolu_1", ToolName: "Bash",
		Summary: "terraform apply", Reason: "production change", RiskClass: policies.HighRisk, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	hookDec := "dec_" + strings.Repeat("7", 24)
	if err := hook.WriteDecision(ctx, judge.DecisionRecord{SessionID: "flow-hook", ActionID: "toolu_1", DecisionID: hookDec,
		IdempotencyKey: "sha256:" + strings.Repeat("7", 64), Decision: judge.Escalate, ToolName: "Bash", ReasoningSummary: "production change", JudgeID: "policy"}); err != nil {
		t.Fatal(err)
	}

	approvals := map[string]string{"A's evaluation": aprA, "a hook's": hookApr}
	decisions := map[string]string{"A's evaluation": evalID, "A's write-back": wrote, "a hook's": hookDec}
	// what an id that does not exist answers, for every caller
	missing := func(token, kind, id string) (int, string) {
		ghost := "apr_" + strings.Repeat("0", 16)
		path := "/v1/approvals/"
		if kind == "decision" {
			ghost, path = "dec_"+strings.Repeat("0", 24), "/v1/judge/decisions/"
		}
		code, out := e.as(token, "GET", path+ghost, "")
		return code, strings.ReplaceAll(out, ghost, id)
	}
	check := func(who, token string, kind, what, id string, readable bool) {
		t.Helper()
		path := "/v1/approvals/" + id
		if kind == "decision" {
			path = "/v1/judge/decisions/" + id
		}
		code, out := e.as(token, "GET", path, "")
		if readable {
			if code != 200 || !strings.Contains(out, id) {
				t.Errorf("%s reads %s %s: %d %s, want 200", who, what, kind, code, out)
			}
			return
		}
		mcode, mout := missing(token, kind, id)
		if mcode != 404 || code != mcode || out != mout {
			t.Errorf("%s reads %s %s: %d %s\nwant what a missing id answers: %d %s", who, what, kind, code, out, mcode, mout)
		}
	}
	for what, id := range approvals {
		check("A", tokA, "approval", what, id, what != "a hook's")
		check("B", tokB, "approval", what, id, false)
		check("a reviewer", reviewer, "approval", what, id, true)
		check("an admin", admin, "approval", what, id, true)
	}
	for what, id := range decisions {
		check("A", tokA, "decision", what, id, what != "a hook's")
		check("B", tokB, "decision", what, id, false)
		check("a reviewer", reviewer, "decision", what, id, true)
		check("an admin", admin, "decision", what, id, true)
	}

	// the records name their creator; a reviewer's list shows it
	if _, out := e.as(tokA, "GET", "/v1/approvals/"+aprA, ""); !strings.Contains(out, `"creator":"`+idA+`"`) {
		t.Errorf("A's approval does not name A's token: %s", out)
	}
	if _, out := e.as(reviewer, "GET", "/v1/judge/decisions/"+wrote, ""); !strings.Contains(out, `"creator":"`+idA+`"`) {
		t.Errorf("A's decision does not name A's token: %s", out)
	}
	if _, out := e.as(reviewer, "GET", "/v1/approvals/"+hookApr, ""); strings.Contains(out, `"creator"`) {
		t.Errorf("a hook's approval names a creator: %s", out)
	}
	if code, out := e.as(reviewer, "GET", "/v1/approvals", ""); code != 200 || !strings.Contains(out, `"creator":"`+idA+`"`) {
		t.Errorf("reviewer's list: %d %s", code, out)
	}

	// B cannot get at A's records by replaying A's idempotency keys: a
	// conflict that names neither A's decision nor its approval
	for _, rq := range []struct{ path, body string }{
		{"/v1/judge/evaluate", proposalBody("acc-1", "payments.wire", "high_risk", "flow-a", nil)},
		{"/v1/judge/decisions", decisionBody("k-acc-a", "block", "")},
	} {
		code, out := e.as(tokB, "POST", rq.path, rq.body)
		if code != 409 || strings.Contains(out, evalID) || strings.Contains(out, wrote) || strings.Contains(out, aprA) || strings.Contains(out, "production") {
			t.Errorf("B replays A's key on %s: %d %s, want 409 naming nothing of A's", rq.path, code, out)
		}
	}
	// ... nor by claiming to be A in the body
	code, out = e.as(tokB, "POST", "/v1/judge/decisions", strings.Replace(decisionBody("k-acc-b", "allow", ""), `"workspace_id"`, `"creator":"`+idA+`","workspace_id"`, 1))
	if code != 400 || !strings.Contains(out, `"field":"creator"`) {
		t.Errorf("a body naming a creator: %d %s, want 400 on creator", code, out)
	}
	// ... nor by judging A's session and action under its own key: the
	// session is A's (TestSessionOwners), a 404 that names nothing of A's
	code, out = e.as(tokB, "POST", "/v1/judge/evaluate", strings.Replace(proposalBody("acc-1b", "payments.wire", "high_risk", "flow-a", nil), `"action_id":"act-acc-1b"`, `"action_id":"act-acc-1"`, 1))
	if code != 404 || strings.Contains(out, aprA) || strings.Contains(out, evalID) || strings.Contains(out, idA) {
		t.Errorf("B judges A's session: %d %s, want a 404 naming nothing of A's", code, out)
	}
	// ... nor by judging A's action under a session of its own: B gets an
	// approval of its own, which A cannot read
	code, out = e.as(tokB, "POST", "/v1/judge/evaluate", strings.Replace(proposalBody("acc-1b", "payments.wire", "high_risk", "flow-b", nil), `"action_id":"act-acc-1b"`, `"action_id":"act-acc-1"`, 1))
	evB := jsonOf(t, code, out, 201)
	aprB := evB["approval_id"].(string)
	if aprB == "" || aprB == aprA {
		t.Fatalf("B judging A's action got approval %q (A's is %s)", aprB, aprA)
	}
	check("B", tokB, "approval", "B's evaluation", aprB, true)
	check("A", tokA, "approval", "B's evaluation", aprB, false)
	check("A", tokA, "decision", "B's evaluation", evB["decision_id"].(string), false)

	// A polls its approval through to the reviewer's answer
	if code, out := e.as(reviewer, "POST", "/v1/approvals/"+aprA+"/actions", `{"action":"approve"}`); code != 200 {
		t.Fatalf("approve: %d %s", code, out)
	}
	if code, out := e.as(tokA, "GET", "/v1/approvals/"+aprA, ""); code != 200 || !strings.Contains(out, `"status":"approved"`) {
		t.Errorf("A polls its approved approval: %d %s", code, out)
	}
	check("B", tokB, "approval", "A's approved", aprA, false)
	// A's replay still finds its approval
	code, out = e.as(tokA, "POST", "/v1/judge/evaluate", proposalBody("acc-1", "payments.wire", "high_risk", "flow-a", nil))
	if rep := jsonOf(t, code, out, 200); rep["approval_id"] != aprA || rep["approval_status"] != "approved" {
		t.Errorf("A's replay: %s", out)
	}

	// A is revoked: its records stay A's, readable by no other runtime,
	// not even a new token under A's name
	if _, err := OpenTokens(e.h).Revoke("tenant-a", time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _ := e.as(tokA, "GET", "/v1/approvals/"+aprA, ""); code != http.StatusUnauthorized {
		t.Errorf("revoked A reads its approval: %d, want 401", code)
	}
	tokA2, idA2 := e.runtime("tenant-a")
	if idA2 == idA {
		t.Fatalf("the new token reuses the revoked token's id %s", idA)
	}
	for what, id := range approvals {
		check("B after A's revocation", tokB, "approval", what, id, false)
		check("A's successor", tokA2, "approval", what, id, false)
		check("a reviewer after A's revocation", reviewer, "approval", what, id, true)
	}
	for what, id := range decisions {
		check("B after A's revocation", tokB, "decision", what, id, false)
		check("A's successor", tokA2, "decision", what, id, false)
		check("a reviewer after A's revocation", reviewer, "decision", what, id, true)
	}
}

func jsonOf(t *testing.T, code int, out string, want int) map[string]any {
	t.Helper()
	if code != want {
		t.Fatalf("status %d, want %d: %s", code, want, out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return m
}
