package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docket/docket/gate"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/ledgerhook"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store/sqlstore"
)

// entryBody is a runtime's after-tool-call body for the ledger route.
func entryBody(call string) string {
	return `{"tool_name":"exec","tool_call_id":"` + call + `","params":{"command":"go test ./..."},"result":{"details":{"exitCode":0}}}`
}

// stopBody is a final answer for the gate route.
func stopBody(t *testing.T, msg string, active bool) string {
	b, err := json.Marshal(map[string]any{"last_assistant_message": msg, "stop_hook_active": active, "cwd": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ledgerLen returns the number of entries of a session's ledger (0 for
// none), verified.
func ledgerLen(t *testing.T, h home.Home, session string) int {
	t.Helper()
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	if has, err := hasLedger(h, session); err != nil {
		t.Fatal(err)
	} else if !has {
		return 0
	}
	es, err := l.ReadVerified(session)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// hookAppend appends a Claude Code PostToolUse to session through the
// code docket-ledger runs, with no token anywhere.
func hookAppend(t *testing.T, h home.Home, session string) {
	t.Helper()
	t.Setenv("DOCKET_HOME", h.Root)
	payload := `{"session_id":"` + session + `","transcript_path":"/tmp/t.jsonl","cwd":"/tmp","hook_event_name":"PostToolUse","tool_name":"Bash","tool_use_id":"toolu_h1","tool_input":{"command":"go test ./..."},"tool_response":{"stdout":"ok","stderr":"","interrupted":false}}`
	var stderr bytes.Buffer
	if err := ledgerhook.Run(context.Background(), []string{"--runtime", "claude"}, strings.NewReader(payload), io.Discard, &stderr, ledgerhook.Options{}); err != nil {
		t.Fatalf("docket-ledger: %v %s", err, stderr.String())
	}
}

// TestSessionOwners: a runtime token appends to and gates the sessions it
// owns (a new id is claimed by the first write), and another runtime
// token, a revoked token's successor and any runtime on a session the
// hooks wrote get one 404 that is the same byte for byte, whatever the
// reason, on both routes and on evaluate, and change nothing: not the
// ledger, not the gate's block counter. Reviewers and admins use every
// session and claim none.
func TestSessionOwners(t *testing.T) {
	for _, be := range accessBackends {
		t.Run(be.name, func(t *testing.T) {
			testSessionOwners(t, be.env(t))
		})
	}
}

func testSessionOwners(t *testing.T, e *env) {
	tokA, _ := e.runtime("owner-a")
	tokB, _ := e.runtime("owner-b")
	reviewer, admin := e.tokens[RoleReviewer], e.tokens[RoleAdmin]
	g, err := gate.New(e.h)
	if err != nil {
		t.Fatal(err)
	}
	blockCap := g.Lexicon.BlockCap
	const claim = "All done — tests pass."

	// A's first write claims its new session; A appends and gates it
	if code, out := e.as(tokA, "POST", "/v1/ledger/sess-a/entries", entryBody("a1")); code != 201 {
		t.Fatalf("A's first append: %d %s", code, out)
	}
	if code, out := e.as(tokA, "POST", "/v1/ledger/sess-a/entries", entryBody("a2")); code != 201 {
		t.Fatalf("A's second append: %d %s", code, out)
	}
	code, out := e.as(tokA, "POST", "/v1/gate/sess-a/check", stopBody(t, claim, false))
	first := jsonOf(t, code, out, 200)
	if first["decision"] != "block" {
		t.Fatalf("A's unsupported claim: %s", out)
	}

	// what B gets for A's session: a 404 that names neither A nor the
	// ledger, the same on every route that takes the session
	refused := ""
	attempt := func(who, token, what, method, path, body string) {
		t.Helper()
		code, out := e.as(token, method, path, body)
		if code != 404 {
			t.Errorf("%s %s: %d %s, want 404", who, what, code, out)
			return
		}
		if refused == "" {
			refused = out
		}
		if out != refused {
			t.Errorf("%s %s answers\n%s\nnot the same 404 as\n%s", who, what, out, refused)
		}
	}
	lenA := ledgerLen(t, e.h, "sess-a")
	attempt("B", tokB, "appends to A's session", "POST", "/v1/ledger/sess-a/entries", entryBody("b1"))
	for i := 0; i < blockCap+2; i++ {
		attempt("B", tokB, "gates A's session", "POST", "/v1/gate/sess-a/check", stopBody(t, claim, true))
	}
	attempt("B", tokB, "judges under A's session", "POST", "/v1/judge/evaluate", proposalBody("own-b1", "payments.wire", "high_risk", "sess-a", nil))
	attempt("B", tokB, "appends again to A's session", "POST", "/v1/ledger/sess-a/entries", entryBody("b2"))
	if strings.Contains(refused, "owner") || strings.Contains(refused, "tok_") || strings.Contains(refused, "owner-a") {
		t.Errorf("the 404 names the owner: %s", refused)
	}
	if n := ledgerLen(t, e.h, "sess-a"); n != lenA {
		t.Fatalf("B's refused requests changed A's ledger: %d entries, want %d", n, lenA)
	}

	// A's gate decisions go on from where A left them: blocks up to the
	// cap, then the release, as if B had never tried
	decisions := []string{first["decision"].(string)}
	for i := 0; i < blockCap; i++ {
		code, out := e.as(tokA, "POST", "/v1/gate/sess-a/check", stopBody(t, claim, true))
		decisions = append(decisions, jsonOf(t, code, out, 200)["decision"].(string))
	}
	want := strings.TrimSuffix(strings.Repeat("block ", blockCap), " ") + " allow"
	if got := strings.Join(decisions, " "); got != want {
		t.Fatalf("A's gate decisions %q, want %q (B's attempts moved A's block counter)", got, want)
	}
	if n := ledgerLen(t, e.h, "sess-a"); n != lenA+blockCap {
		t.Fatalf("A's ledger has %d entries, want %d", n, lenA+blockCap)
	}

	// a session the hooks started is no runtime's, not even to claim
	hookAppend(t, e.h, "sess-hook")
	attempt("A", tokA, "appends to a hook's session", "POST", "/v1/ledger/sess-hook/entries", entryBody("h1"))
	attempt("B", tokB, "gates a hook's session", "POST", "/v1/gate/sess-hook/check", stopBody(t, claim, false))
	attempt("A", tokA, "judges under a hook's session", "POST", "/v1/judge/evaluate", proposalBody("own-h1", "payments.wire", "high_risk", "sess-hook", nil))
	if n := ledgerLen(t, e.h, "sess-hook"); n != 1 {
		t.Fatalf("the hook's session has %d entries after the runtimes' attempts, want 1", n)
	}

	// reviewers and admins use every session, and claim none
	for who, tok := range map[string]string{"a reviewer": reviewer, "an admin": admin} {
		for _, s := range []string{"sess-a", "sess-hook"} {
			if code, out := e.as(tok, "POST", "/v1/ledger/"+s+"/entries", entryBody("r-"+s)); code != 201 {
				t.Errorf("%s appends to %s: %d %s", who, s, code, out)
			}
			if code, out := e.as(tok, "POST", "/v1/gate/"+s+"/check", stopBody(t, "I looked at the diff.", false)); code != 200 {
				t.Errorf("%s gates %s: %d %s", who, s, code, out)
			}
			if code, out := e.as(tok, "GET", "/v1/sessions/"+s, ""); code != 200 {
				t.Errorf("%s reads %s: %d %s", who, s, code, out)
			}
		}
	}
	if code, out := e.as(reviewer, "POST", "/v1/ledger/sess-rev/entries", entryBody("r1")); code != 201 {
		t.Fatalf("a reviewer starts a session: %d %s", code, out)
	}
	attempt("A", tokA, "appends to a reviewer's session", "POST", "/v1/ledger/sess-rev/entries", entryBody("r2"))
	if code, out := e.as(tokA, "POST", "/v1/ledger/sess-a/entries", entryBody("a3")); code != 201 {
		t.Fatalf("A after the reviewers' writes: %d %s", code, out)
	}

	// a new id is claimable, by its first append or its first gate check
	if code, out := e.as(tokB, "POST", "/v1/ledger/sess-b/entries", entryBody("b3")); code != 201 {
		t.Fatalf("B's new session: %d %s", code, out)
	}
	if code, out := e.as(tokB, "POST", "/v1/gate/sess-b2/check", stopBody(t, claim, false)); code != 200 {
		t.Fatalf("B's new session, gated first: %d %s", code, out)
	}
	attempt("A", tokA, "gates B's session", "POST", "/v1/gate/sess-b2/check", stopBody(t, claim, false))
	attempt("A", tokA, "appends to B's session", "POST", "/v1/ledger/sess-b/entries", entryBody("a4"))

	// A is revoked: its sessions stay A's, reachable by no other runtime,
	// not even a new token under A's name
	if _, err := OpenTokens(e.h).Revoke("owner-a", time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _ := e.as(tokA, "POST", "/v1/ledger/sess-a/entries", entryBody("a5")); code != http.StatusUnauthorized {
		t.Errorf("revoked A appends: %d, want 401", code)
	}
	tokA2, _ := e.runtime("owner-a")
	lenA = ledgerLen(t, e.h, "sess-a")
	attempt("B", tokB, "appends to revoked A's session", "POST", "/v1/ledger/sess-a/entries", entryBody("b4"))
	attempt("A's successor", tokA2, "appends to A's session", "POST", "/v1/ledger/sess-a/entries", entryBody("a6"))
	attempt("A's successor", tokA2, "gates A's session", "POST", "/v1/gate/sess-a/check", stopBody(t, claim, false))
	if n := ledgerLen(t, e.h, "sess-a"); n != lenA {
		t.Fatalf("refused requests changed revoked A's ledger: %d entries, want %d", n, lenA)
	}
	if code, out := e.as(reviewer, "POST", "/v1/gate/sess-a/check", stopBody(t, "I looked at the diff.", false)); code != 200 {
		t.Errorf("a reviewer gates revoked A's session: %d %s", code, out)
	}
	// a runtime principal without a token id (none authenticates so, but
	// the console's calls take any principal) owns nothing and claims
	// nothing
	for _, who := range []Principal{{Name: "no-id", Role: RoleRuntime}} {
		_, err := e.srv.Call(context.Background(), who, "POST", "/v1/ledger/sess-noid/entries", []byte(entryBody("n1")))
		if ErrorStatus(err) != 404 {
			t.Errorf("%+v starts a session: %v, want 404", who, err)
		}
	}
	if n := ledgerLen(t, e.h, "sess-noid"); n != 0 {
		t.Errorf("a principal without a token id wrote %d entries", n)
	}
	if t.Failed() {
		return
	}
	if !strings.Contains(refused, "not_found") {
		t.Fatalf("the refusal is not a not_found error: %s", refused)
	}
}

// TestSessionClaimRace: two runtime tokens, each on its own server (a
// replica: its own store connection) over one state root and one
// database, claim one new session at the same moment — both past the
// check that finds it unowned and without a ledger. Exactly one wins;
// the other gets the 404 and writes nothing, then and afterwards.
func TestSessionClaimRace(t *testing.T) {
	for _, be := range []struct {
		name string
		open func(t *testing.T, h home.Home) (*sqlstore.Store, bool)
	}{
		{"sqlite", func(t *testing.T, h home.Home) (*sqlstore.Store, bool) {
			st, err := sqlstore.OpenSQLite(context.Background(), h.StorePath())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st, false
		}},
		{"postgres", func() func(t *testing.T, h home.Home) (*sqlstore.Store, bool) {
			dsn := ""
			return func(t *testing.T, h home.Home) (*sqlstore.Store, bool) {
				if dsn == "" {
					dsn = pgSchema(t)
				}
				st, err := sqlstore.OpenPostgres(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st, true
			}
		}()},
	} {
		t.Run(be.name, func(t *testing.T) {
			h, _ := home.At(t.TempDir())
			if _, err := ledger.Init(h); err != nil {
				t.Fatal(err)
			}
			st1, pg := be.open(t, h)
			st2, _ := be.open(t, h)
			r1, r2 := newEnvOver(t, h, st1, pg), newEnvOver(t, h, st2, pg)
			tokA, idA := r1.runtime("race-a")
			tokB, idB := r1.runtime("race-b")
			// both claims of a round wait, past the owner and ledger
			// checks, until the other is there too
			var mu sync.Mutex
			var holding string // the session whose claims wait
			var arrived int
			var both chan struct{}
			hold := func(s string) {
				mu.Lock()
				if s != holding {
					mu.Unlock()
					return
				}
				if arrived++; arrived == 2 {
					close(both)
				}
				ch := both
				mu.Unlock()
				select {
				case <-ch:
				case <-time.After(10 * time.Second):
				}
			}
			r1.srv.testingOnlyBeforeClaim, r2.srv.testingOnlyBeforeClaim = hold, hold
			for round := 0; round < 4; round++ {
				session := fmt.Sprintf("race-%d", round)
				mu.Lock()
				holding, arrived, both = session, 0, make(chan struct{})
				mu.Unlock()
				entries, check := "/v1/ledger/"+session+"/entries", "/v1/gate/"+session+"/check"
				pathA, pathB := entries, check
				if round%2 == 1 {
					pathA, pathB = check, entries
				}
				type result struct {
					code int
					out  string
				}
				res := make([]result, 2)
				var wg sync.WaitGroup
				for i, c := range []struct {
					e         *env
					tok, path string
				}{{r1, tokA, pathA}, {r2, tokB, pathB}} {
					body := entryBody("race")
					if c.path == check {
						body = stopBody(t, "All done — tests pass.", false)
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						code, out := c.e.as(c.tok, "POST", c.path, body)
						res[i] = result{code, out}
					}()
				}
				wg.Wait()
				mu.Lock()
				if arrived != 2 {
					t.Fatalf("round %d: %d of 2 requests reached the claim", round, arrived)
				}
				holding = ""
				mu.Unlock()
				won := -1
				for i, r := range res {
					switch {
					case r.code == 201 || r.code == 200:
						if won >= 0 {
							t.Fatalf("round %d: both claims won: %+v", round, res)
						}
						won = i
					case r.code != 404:
						t.Fatalf("round %d: claim %d answered %d %s", round, i, r.code, r.out)
					}
				}
				if won < 0 {
					t.Fatalf("round %d: neither claim won: %+v", round, res)
				}
				// the loser wrote nothing; the winner owns the session on
				// both replicas, the loser on neither
				if n := ledgerLen(t, h, session); n != 1 {
					t.Fatalf("round %d: %d entries after the race, want the winner's 1: %+v", round, n, res)
				}
				winner, loser, owner := tokA, tokB, idA
				if won == 1 {
					winner, loser, owner = tokB, tokA, idB
				}
				scope, err := r1.srv.ledgerScope()
				if err != nil {
					t.Fatal(err)
				}
				if got, err := r2.store.SessionOwner(context.Background(), scope, session); err != nil || got != owner {
					t.Fatalf("round %d: recorded owner %q %v, want %q", round, got, err, owner)
				}
				for _, r := range []*env{r1, r2} {
					if code, out := r.as(winner, "POST", "/v1/ledger/"+session+"/entries", entryBody("after")); code != 201 {
						t.Fatalf("round %d: the winner appends: %d %s", round, code, out)
					}
					if code, out := r.as(loser, "POST", "/v1/ledger/"+session+"/entries", entryBody("after")); code != 404 {
						t.Fatalf("round %d: the loser appends: %d %s", round, code, out)
					}
				}
			}
		})
	}
}
