package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/server"
	"github.com/docket/docket/trust"
)

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLoginLinkWorksOnce(t *testing.T) {
	f := newFixture(t)
	link := f.loginURL(server.RoleReviewer)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == CookieName {
			ck = c
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Value == "" {
		t.Fatalf("session cookie: %+v", ck)
	}
	if resp, _ := noRedirect.Get(link); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("second use of a login link: %d, want 401", resp.StatusCode)
	}
	// an expired link, a guessed one, a runtime role
	secret, _ := IssueLogin(f.h, "ana", server.RoleReviewer, time.Minute, time.Now().Add(-2*time.Minute))
	for name, u := range map[string]string{
		"expired": f.url + LoginPath + "?t=" + url.QueryEscape(secret),
		"guessed": f.url + LoginPath + "?t=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"empty":   f.url + LoginPath,
	} {
		if resp, _ := noRedirect.Get(u); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s link: %d, want 401", name, resp.StatusCode)
		}
	}
	if _, err := IssueLogin(f.h, "ana", server.RoleRuntime, time.Minute, time.Now()); err == nil {
		t.Error("a runtime login was issued")
	}
	// a forged cookie is no session
	req, _ := http.NewRequest("GET", f.url+"/", nil)
	req.AddCookie(&http.Cookie{Name: CookieName, Value: ck.Value + "x"})
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged cookie: %d", resp.StatusCode)
	}
}

func TestPagesNeedLogin(t *testing.T) {
	f := newFixture(t)
	for _, p := range []string{"/", "/review", "/approvals", "/sessions/x", "/memories/mem_x", "/live"} {
		if code, _ := get(t, http.DefaultClient, f.url+p); code != http.StatusUnauthorized {
			t.Errorf("GET %s without a session: %d", p, code)
		}
	}
	// the API keeps its bearer tokens: a console cookie is not one
	c := f.client(server.RoleAdmin)
	if code, _ := get(t, c, f.url+"/v1/review-queue"); code != http.StatusUnauthorized {
		t.Errorf("API with a console cookie: %d", code)
	}
}

func TestPostNeedsCSRFAndSameOrigin(t *testing.T) {
	f := newFixture(t)
	item := f.seedReview("invoices above 1000 EUR need the finance owner's approval")
	c := f.client(server.RoleReviewer)
	_, body := get(t, c, f.url+"/review")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no csrf token on the review page")
	}
	post := func(form url.Values, origin string) int {
		// the token also rides in the query, where it must not count
		req, _ := http.NewRequest("POST", f.url+"/review/"+item+"?csrf="+url.QueryEscape(m[1]), strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		noRedirect := *c
		noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name   string
		form   url.Values
		origin string
		want   int
	}{
		{"no token", url.Values{"action": {"confirm"}}, "", 403},
		{"wrong token", url.Values{"action": {"confirm"}, "csrf": {m[1] + "x"}}, "", 403},
		{"cross origin", url.Values{"action": {"confirm"}, "csrf": {m[1]}}, "http://evil.example", 403},
		{"opaque origin", url.Values{"action": {"confirm"}, "csrf": {m[1]}}, "null", 403},
		{"another port of the same host", url.Values{"action": {"confirm"}, "csrf": {m[1]}}, "http://127.0.0.1:1", 403},
		{"token in the query, not the form", url.Values{"action": {"confirm"}}, "", 403},
		{"same origin", url.Values{"action": {"confirm"}, "csrf": {m[1]}}, f.url, 303},
	}
	for _, tt := range tests {
		if got := post(tt.form, tt.origin); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	// only the same-origin post with the token went through
	b, err := f.srv.Call(context.Background(), server.Principal{Name: "r", Role: server.RoleReviewer}, "GET", "/v1/review-queue?status=resolved", nil)
	if err != nil || !strings.Contains(string(b), item) || !strings.Contains(string(b), `"resolved_by":"token:ana"`) {
		t.Fatalf("resolved queue: %s %v", b, err)
	}
}

func TestHeadersAndEscaping(t *testing.T) {
	f := newFixture(t)
	f.seedBlocked()
	item := f.seedReview("never trust " + xss)
	apr := f.seedApprovalAs(reviewerP, blockedSession, "esc-1") // the hooks' session
	b, err := f.srv.Call(context.Background(), server.Principal{Name: "r", Role: server.RoleReviewer}, "GET", "/v1/review-queue", nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := regexp.MustCompile(`"item_id":"` + item + `","memory_id":"(mem_[0-9a-f]+)"`).FindSubmatch(b)
	if mem == nil {
		t.Fatalf("no memory for %s in %s", item, b)
	}
	c := f.client(server.RoleReviewer)
	// text cannot hold a raw "<": any "<" is a tag the template wrote
	quoted := regexp.MustCompile(`"[^"]*"`)
	inline := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>\s*[^<\s]|<[^>]*\son[a-z]+=|<[^>]*\sstyle=|javascript:`)
	for _, p := range []string{"/", "/sessions/" + blockedSession, "/review", "/approvals", "/notes", "/review?status=resolved", "/memories/" + string(mem[1])} {
		resp, err := c.Get(f.url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(b)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d: %s", p, resp.StatusCode, body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != CSP || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q", p, csp)
		}
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<img src=x") {
			t.Errorf("%s: agent text reached the page unescaped", p)
		}
		// attribute values cannot hold a raw quote either: drop them
		if m := inline.FindString(quoted.ReplaceAllString(body, `""`)); m != "" {
			t.Errorf("%s: inline script or style: %q", p, m)
		}
		if p == "/sessions/"+blockedSession && (!strings.Contains(body, "&lt;script&gt;alert") || !strings.Contains(body, "tests_pass")) {
			t.Errorf("session page lacks the escaped stdout or the claim")
		}
		if p == "/approvals" && !strings.Contains(body, apr) {
			t.Errorf("approvals page lacks %s", apr)
		}
	}
}

// form posts a console form with the session's CSRF token and returns
// the flash message of the page it lands on.
func form(t *testing.T, f *fixture, c *http.Client, path string, v url.Values) string {
	t.Helper()
	_, body := get(t, c, f.url+"/review")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no csrf token")
	}
	v.Set("csrf", m[1])
	resp, err := c.PostForm(f.url+path, v)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fm := regexp.MustCompile(`id="flash">([^<]*)<`).FindStringSubmatch(string(b))
	if fm == nil {
		t.Fatalf("POST %s: no flash (%d)", path, resp.StatusCode)
	}
	return fm[1]
}

// TestEveryReviewAction runs each review form and reads the memory back
// through the API.
func TestEveryReviewAction(t *testing.T) {
	f := newFixture(t)
	c := f.client(server.RoleReviewer)
	reviewer := server.Principal{Name: "r", Role: server.RoleReviewer}
	memOf := func(item string) map[string]any {
		for _, st := range []string{"pending", "escalated", "resolved"} {
			b, err := f.srv.Call(context.Background(), reviewer, "GET", "/v1/review-queue?status="+st, nil)
			if err != nil {
				t.Fatal(err)
			}
			var q struct {
				Items []map[string]any `json:"items"`
			}
			json.Unmarshal(b, &q)
			for _, it := range q.Items {
				if it["item_id"] == item {
					return it["memory"].(map[string]any)
				}
			}
		}
		return nil
	}
	tests := []struct {
		action string
		form   url.Values
		check  func(m map[string]any) bool
	}{
		{"evidence_only", url.Values{}, func(m map[string]any) bool { return m["use_policy"] == "can_use_as_evidence" }},
		{"reject", url.Values{"note": {"wrong"}}, func(m map[string]any) bool { return m["lifecycle"] == "rejected" }},
		{"mark_stale", url.Values{}, func(m map[string]any) bool { return m["freshness"].(map[string]any)["stale"] == true }},
		{"restrict_scope", url.Values{"visibility": {"personal"}}, func(m map[string]any) bool { return m["scope"].(map[string]any)["visibility"] == "personal" }},
		{"edit", url.Values{"summary": {"edited <b>summary</b>"}}, func(m map[string]any) bool { return m["summary"] == "edited <b>summary</b>" }},
		{"escalate", url.Values{"note": {"ask legal"}}, func(m map[string]any) bool { return m != nil }},
	}
	for i, tt := range tests {
		item := f.seedReviewKey(fmt.Sprintf("k-%d", i), "lesson number "+tt.action)
		tt.form.Set("action", tt.action)
		flash := form(t, f, c, "/review/"+item, tt.form)
		if !strings.Contains(flash, tt.action+" on "+item+" done") {
			t.Errorf("%s: flash %q", tt.action, flash)
			continue
		}
		if tt.action == "escalate" {
			b, _ := f.srv.Call(context.Background(), reviewer, "GET", "/v1/review-queue?status=escalated", nil)
			if !strings.Contains(string(b), item) {
				t.Errorf("escalate: %s not escalated", item)
			}
			continue
		}
		if m := memOf(item); m == nil || !tt.check(m) {
			t.Errorf("%s: memory after: %v", tt.action, m)
		}
	}
	// merge needs the other memory; a missing one is an error shown, not a 500
	item := f.seedReviewKey("k-merge", "lesson to merge")
	if flash := form(t, f, c, "/review/"+item, url.Values{"action": {"merge"}, "other_memory_id": {"mem_missing"}}); !strings.Contains(flash, "failed") {
		t.Errorf("merge into a missing memory: %q", flash)
	}
}

// TestEveryApprovalAction runs the approval forms other than approve
// (TestBrowser approves) and reads each approval back.
func TestEveryApprovalAction(t *testing.T) {
	f := newFixture(t)
	c := f.client(server.RoleReviewer)
	tests := []struct {
		name   string
		form   url.Values
		status string // "" = the form is refused and the approval stays pending
	}{
		{"reject", url.Values{"action": {"reject"}, "note": {"no"}}, "rejected"},
		{"escalate", url.Values{"action": {"escalate"}, "owner": {"cfo"}}, "escalated"},
		{"modify", url.Values{"action": {"modify"}, "arguments": {`{"amount":10}`}}, "modified"},
		{"modify with bad JSON", url.Values{"action": {"modify"}, "arguments": {`{"amount":`}}, ""},
		{"modify with an array", url.Values{"action": {"modify"}, "arguments": {`[1]`}}, ""},
		{"unknown action", url.Values{"action": {"delete"}}, ""},
	}
	for i, tt := range tests {
		apr := f.seedApproval(fmt.Sprintf("sess-%d", i), fmt.Sprintf("e-%d", i))
		flash := form(t, f, c, "/approvals/"+apr, tt.form)
		b, err := f.srv.Call(context.Background(), runtimeP, "GET", "/v1/approvals/"+apr, nil)
		if err != nil {
			t.Fatal(err)
		}
		var a struct {
			Status    string          `json:"status"`
			Arguments json.RawMessage `json:"arguments"`
		}
		json.Unmarshal(b, &a)
		want := tt.status
		if want == "" {
			want = "pending"
			if !strings.Contains(flash, "failed") {
				t.Errorf("%s: flash %q", tt.name, flash)
			}
		}
		if a.Status != want {
			t.Errorf("%s: status %s, want %s (flash %q)", tt.name, a.Status, want, flash)
		}
		if tt.name == "modify" && string(a.Arguments) != `{"amount":10}` {
			t.Errorf("modify: arguments %s", a.Arguments)
		}
	}
}

func TestLogout(t *testing.T) {
	f := newFixture(t)
	c := f.client(server.RoleReviewer)
	if code, _ := get(t, c, f.url+"/"); code != 200 {
		t.Fatalf("before logout: %d", code)
	}
	_, body := get(t, c, f.url+"/")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no csrf token")
	}
	u, _ := url.Parse(f.url)
	old := c.Jar.Cookies(u)
	resp, err := c.PostForm(f.url+"/logout", url.Values{"csrf": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, _ := get(t, c, f.url+"/"); code != http.StatusUnauthorized {
		t.Fatalf("after logout: %d", code)
	}
	// the old cookie, replayed, is no session either
	req, _ := http.NewRequest("GET", f.url+"/", nil)
	for _, ck := range old {
		req.AddCookie(ck)
	}
	if len(old) == 0 {
		t.Fatal("no cookie before logout")
	}
	if resp, _ := http.DefaultClient.Do(req); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("replayed cookie after logout: %d", resp.StatusCode)
	}
}

func TestAPIPathsStayJSON(t *testing.T) {
	f := newFixture(t)
	resp, err := http.Get(f.url + "/v1/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("unknown API path: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp, err = http.Get(f.url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
}

// agentCards returns the overview's agent cards by name.
func agentCards(t *testing.T, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<li class="agent"><h3>([^<]*)</h3>(.*?)</li>`).FindAllStringSubmatch(body, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestTrustOnCards: the overview's agent cards show each agent's
// monitoring level and score, with a row per tool and class, read from
// the real trust state and advanced to now (two holds completed since
// the last refresh read as level 2); a forged state shows no level.
func TestTrustOnCards(t *testing.T) {
	f := newFixture(t)
	f.seedBlocked()
	f.seedApproval("sess-wire", "esc-1")
	f.seedTrust()
	c := f.client(server.RoleReviewer)
	_, body := get(t, c, f.url+"/")
	cards := agentCards(t, body)
	tests := []struct {
		card, agent, level, score string
		rows                      []string
	}{
		// the runtime's card is its main agent's
		{"claude-code", "claude-code/main", "2", "1.00", []string{`<td>overall</td><td title="post-exec-review">2</td><td>1.00</td>`, "<td>tool:Bash</td>", "<td>class:reversible_write</td>"}},
		// an agent with no session on the board gets a card of its own
		{"claude-code/Explore", "claude-code/Explore", "2", "1.00", nil},
		// a critical violation: level 0
		{"coder", "openclaw/coder", "0", "0.00", []string{`<td>tool:payments.wire</td><td title="review-all">0</td>`}},
	}
	for _, tt := range tests {
		card, ok := cards[tt.card]
		if !ok {
			t.Errorf("no card %q among %d", tt.card, len(cards))
			continue
		}
		want := fmt.Sprintf(`data-agent="%s">`, tt.agent)
		head := fmt.Sprintf(`%s: level <b class="lvl">%s</b>`, tt.agent, tt.level)
		if !strings.Contains(card, want) || !strings.Contains(card, head) || !strings.Contains(card, `score <b class="score">`+tt.score+`</b>`) {
			t.Errorf("card %s lacks %s at level %s, score %s:\n%s", tt.card, tt.agent, tt.level, tt.score, card)
		}
		for _, r := range tt.rows {
			if !strings.Contains(card, r) {
				t.Errorf("card %s lacks row %s:\n%s", tt.card, r, card)
			}
		}
	}
	if !strings.Contains(body, "mode observe: recorded, not enforced") {
		t.Error("the trust mode is not shown")
	}

	// a state file written without the key is not believed
	forged := `{"v":1,"key_id":"x","mac":"00","payload":{"clock":"2026-01-01T00:00:00Z","keys":{"claude-code/main *":{"agent":"claude-code/main","scope":"*","level":4,"score":1}}}}`
	if err := os.WriteFile(filepath.Join(f.h.Root, trust.Dir, trust.StateFile), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	_, body = get(t, c, f.url+"/")
	card := agentCards(t, body)["claude-code"]
	if strings.Contains(card, `data-agent=`) || !strings.Contains(card, `level <b class="lvl">0</b> review-all`) || !strings.Contains(body, "does not verify") {
		t.Errorf("forged trust state shown:\n%s", card)
	}
}

// TestRevokeEndsSessions: `docket console --revoke` ends a name's
// sessions in the running console on their next request, everyone's
// with AllNames, drops the name's unused links, and a ticket file that
// does not parse ends every session rather than none.
func TestRevokeEndsSessions(t *testing.T) {
	f := newFixture(t)
	ana := f.client(server.RoleReviewer)
	if code, _ := get(t, ana, f.url+"/"); code != 200 {
		t.Fatalf("before revoke: %d", code)
	}
	unused := f.loginURL(server.RoleReviewer)
	if err := RevokeLogins(f.h, "bob", time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, ana, f.url+"/"); code != 200 {
		t.Fatalf("bob's revocation ended ana's session: %d", code)
	}
	if err := RevokeLogins(f.h, "ana", time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, ana, f.url+"/"); code != http.StatusUnauthorized {
		t.Fatalf("ana's session after her revocation: %d", code)
	}
	if code, _ := get(t, &http.Client{Timeout: 20 * time.Second}, unused); code != http.StatusUnauthorized {
		t.Fatalf("a link issued before the revocation logged in: %d", code)
	}
	again := f.client(server.RoleReviewer) // a new link after it works
	if code, _ := get(t, again, f.url+"/"); code != 200 {
		t.Fatalf("a session begun after the revocation: %d", code)
	}
	if err := RevokeLogins(f.h, AllNames, time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, again, f.url+"/"); code != http.StatusUnauthorized {
		t.Fatalf("after revoking everyone: %d", code)
	}
	last := f.client(server.RoleAdmin)
	if err := os.WriteFile(ticketsFile(f.h), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _ := get(t, last, f.url+"/"); code != http.StatusUnauthorized {
		t.Fatalf("a ticket file that does not parse left a session open: %d", code)
	}
}
