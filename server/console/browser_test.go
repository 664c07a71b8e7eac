package console

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/server"
)

// chromiumPath finds Debian's chromium; without it the browser tests
// skip, except under CI=true where they fail.
func chromiumPath(t *testing.T) string {
	for _, p := range []string{os.Getenv("DOCKET_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (install Debian's chromium; .ci/run does)")
	}
	t.Skip("chromium not found; the browser tests need Debian's chromium")
	return ""
}

// artifactsDir is where screenshots go: $DOCKET_TEST_ARTIFACTS/console,
// else the test's temporary directory.
func artifactsDir(t *testing.T) string {
	if d := os.Getenv("DOCKET_TEST_ARTIFACTS"); d != "" {
		d = filepath.Join(d, "console")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	// the first run starts the browser: no timeout on it (it would stop
	// the browser); each later step gets its own
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// stepTimeout bounds one browser step.
const stepTimeout = 30 * time.Second

// value runs one action that returns a value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return value(t, ctx, "text of "+sel, chromedp.Text(chromedp.CSS(sel)))
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return value(t, ctx, expr, chromedp.Evaluate[T](expr))
}

func waitFor(t *testing.T, ctx context.Context, expr string, d time.Duration) {
	t.Helper()
	value(t, ctx, "wait for "+expr, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(d)))
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestBrowser drives the console in headless Chromium: log in, find the
// blocked session on the Kanban, open its timeline, confirm a review item
// and see the next recall return it, approve a waiting escalation and see
// the waiting headless judge released, and watch a new tool call appear
// in the live log without a reload.
func TestBrowser(t *testing.T) {
	f := newFixture(t)
	f.seedBlocked()
	f.seedDone()
	item := f.seedReview("invoices above 1000 EUR need the finance owner's approval")
	apr := f.seedApproval("sess-wire", "esc-1")
	f.seedTrust()
	dir := artifactsDir(t)
	ctx := newBrowser(t)
	css := func(s string) chromedp.CSS { return chromedp.CSS(s) }

	// log in; the link leaves the address bar
	run(t, ctx, "log in", chromedp.Navigate(f.loginURL(server.RoleReviewer)), chromedp.WaitVisible(css("#col-blocked")))
	if loc := value(t, ctx, "location", chromedp.Location()); loc != f.url+"/" {
		t.Fatalf("after login at %s", loc)
	}

	// the Kanban
	blocked, approval, done, working := text(t, ctx, "#col-blocked"), text(t, ctx, "#col-approval"), text(t, ctx, "#col-done"), text(t, ctx, "#col-working")
	if !strings.Contains(blocked, blockedSession) || !strings.Contains(blocked, "tests_pass") || !strings.Contains(blocked, "no validator_pass") {
		t.Errorf("blocked column: %q", blocked)
	}
	if !strings.Contains(approval, "sess-wire") || !strings.Contains(approval, "payments.wire") {
		t.Errorf("approval column: %q", approval)
	}
	if !strings.Contains(done, doneSession) || strings.Contains(working+blocked, doneSession) {
		t.Errorf("done column: %q", done)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll(".agent").length`); n < 2 {
		t.Errorf("%d agent cards", n)
	}
	// the status cards show the monitoring levels
	if lvl := text(t, ctx, `.agent .trust[data-agent="claude-code/main"] .lvl`); lvl != "2" {
		t.Errorf("claude-code/main shown at level %q, want 2", lvl)
	}
	if row := text(t, ctx, `.agent .trust[data-agent="openclaw/coder"] table.trust tbody`); !strings.Contains(row, "tool:payments.wire\t0\t0.00") {
		t.Errorf("openclaw/coder's levels: %q", row)
	}
	shot(t, ctx, dir, "overview")

	// keyboard: the first Tab reaches the skip link
	run(t, ctx, "tab", chromedp.KeyEvent("\t"))
	if focused := eval[string](t, ctx, `document.activeElement.className`); focused != "skip" {
		t.Errorf("first tab focuses %q, want the skip link", focused)
	}

	// the session timeline
	run(t, ctx, "open the session", chromedp.Click(css(`#col-blocked a[href="/sessions/`+blockedSession+`"]`)), chromedp.WaitVisible(css("#timeline")))
	timeline, verify, claims := text(t, ctx, "#timeline"), text(t, ctx, "#verify"), text(t, ctx, "table.claims")
	for _, want := range []string{"tool_call", "Bash", "gate_decision", "block"} {
		if !strings.Contains(timeline, want) {
			t.Errorf("timeline lacks %q: %q", want, timeline)
		}
	}
	if !strings.HasPrefix(verify, "Verified") || !strings.Contains(claims, "missing") {
		t.Errorf("verify %q, claims %q", verify, claims)
	}
	// the agent's stdout is shown as text, not run as markup
	run(t, ctx, "open stdout", chromedp.Click(css(`tr.arts details:nth-of-type(2) summary`)))
	stdout := text(t, ctx, `tr.arts details:nth-of-type(2) pre`)
	injected := eval[int](t, ctx, `document.querySelectorAll("main img, main script").length`)
	if !strings.Contains(stdout, `<script>alert("x")</script>`) || injected != 0 {
		t.Errorf("stdout %q, %d injected elements", stdout, injected)
	}
	shot(t, ctx, dir, "session")

	// confirm the review item, then the next recall returns the memory
	const recallBody = `{"schema_version":"openbrain.judge.recall.v1","request_id":"r","workspace_id":"acme","project_id":"docket","action_id":"a",
		"query":{"summary":"pay invoices above 1000 EUR","entities":{"topics":["invoices"]}}}`
	if s := fmt.Sprint(f.call("POST", "/v1/judge/recall", recallBody)); strings.Contains(s, "finance owner") {
		t.Fatalf("the unconfirmed lesson is recalled before the review: %s", s)
	}
	run(t, ctx, "review page",
		chromedp.Navigate(f.url+"/review"),
		chromedp.WaitVisible(css("#"+item)),
		chromedp.SetValue(css("#"+item+"-as"), "can_use_as_instruction"),
		chromedp.SetValue(css("#"+item+"-cnote"), "finance policy"))
	shot(t, ctx, dir, "review")
	run(t, ctx, "confirm", chromedp.Click(css(`#`+item+` button[value="confirm"]`)))
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(css("#flash"))); err != nil {
		shot(t, ctx, dir, "confirm-failed")
		t.Fatalf("no flash after confirm: %v", err)
	}
	if flash := text(t, ctx, "#flash"); !strings.Contains(flash, "confirm on "+item+" done") || !strings.Contains(flash, "can_use_as_instruction") {
		t.Fatalf("flash after confirm: %q", flash)
	}
	if s := fmt.Sprint(f.call("POST", "/v1/judge/recall", recallBody)); !strings.Contains(s, "finance owner") {
		t.Errorf("the next recall does not return the confirmed lesson: %s", s)
	}

	// the inspector of that memory
	run(t, ctx, "inspector",
		chromedp.Navigate(f.url+"/review?status=resolved"),
		chromedp.WaitVisible(css("#"+item)),
		chromedp.Click(css(`#`+item+` a[href^="/memories/"]`)),
		chromedp.WaitVisible(css("dl.questions")))
	if answers := text(t, ctx, "dl.questions"); !strings.Contains(answers, "10. Is it still true?") || !strings.Contains(answers, "confirmed by token:ana") {
		t.Errorf("inspector: %q", answers)
	}
	shot(t, ctx, dir, "memory")

	// the confirmed lesson is a standing instruction on the notes page,
	// and a reviewer edits it there
	run(t, ctx, "notes", chromedp.Navigate(f.url+"/notes"), chromedp.WaitVisible(css("article.note")))
	if notes := text(t, ctx, "main"); !strings.Contains(notes, "acme / docket") || !strings.Contains(notes, "finance owner") {
		t.Errorf("notes: %q", notes)
	}
	run(t, ctx, "edit a note",
		chromedp.Click(css("article.note details summary")),
		chromedp.SetValue(css("article.note input[name=summary]"), "invoices above 1000 EUR: ask the finance owner"),
		chromedp.Click(css("article.note form.wide button")),
		chromedp.WaitVisible(css("#flash")))
	if flash, h3 := text(t, ctx, "#flash"), text(t, ctx, "article.note h3"); !strings.Contains(flash, "edit on mem_") || h3 != "invoices above 1000 EUR: ask the finance owner" {
		t.Errorf("after editing a note: flash %q, title %q", flash, h3)
	}
	shot(t, ctx, dir, "notes")

	// a headless judge waits on the approval; approving it here releases it
	released := make(chan judge.Resolution, 1)
	go func() {
		r, err := storeadapter.New(f.st).Wait(context.Background(), apr, 60*time.Second)
		if err != nil {
			r.Note = "error: " + err.Error()
		}
		released <- r
	}()
	run(t, ctx, "approvals", chromedp.Navigate(f.url+"/approvals"), chromedp.WaitVisible(css("#"+apr)))
	if left := text(t, ctx, "#"+apr+" .timeleft"); !strings.Contains(left, "left") {
		t.Errorf("time left: %q", left)
	}
	run(t, ctx, "open the proposal", chromedp.Click(css("#"+apr+" details.proposal summary")))
	if prop := text(t, ctx, "#"+apr+" details.proposal pre"); !strings.Contains(prop, "payments.wire is high_risk") || !strings.Contains(prop, `"outcome": "escalate"`) {
		t.Errorf("proposal: %q", prop)
	}
	shot(t, ctx, dir, "approvals")
	select {
	case r := <-released:
		t.Fatalf("released before approval: %+v", r)
	case <-time.After(300 * time.Millisecond):
	}
	run(t, ctx, "approve",
		chromedp.SetValue(css("#"+apr+"-anote"), "ok, customer confirmed by phone"),
		chromedp.Click(css(`form[action="/approvals/`+apr+`"] input[value="approve"] ~ button`)),
		chromedp.WaitVisible(css("#flash")))
	if flash := text(t, ctx, "#flash"); !strings.Contains(flash, "approved") {
		t.Errorf("flash after approve: %q", flash)
	}
	select {
	case r := <-released:
		if r.Status != judge.ApprovalApproved || r.By != "token:ana" {
			t.Fatalf("released with %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting judge was not released")
	}

	// the live log: a new tool call appears without a reload
	run(t, ctx, "overview again", chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(css("#live")))
	waitFor(t, ctx, `document.getElementById("live-state").textContent === "(live)"`, 10*time.Second)
	eval[int](t, ctx, `window.__noReload = 1`)
	f.appendEntry("sess-live", ledger.Record{Kind: ledger.KindToolCall, Runtime: "gemini-cli", Tool: "WriteFile-live-" + xss, Body: map[string]any{"failed": false}})
	waitFor(t, ctx, `Array.from(document.querySelectorAll("#live li.new")).some(li => li.textContent.includes("WriteFile-live-"))`, 15*time.Second)
	liveText := text(t, ctx, "#live li.new")
	marker := eval[int](t, ctx, `window.__noReload || 0`)
	injected = eval[int](t, ctx, `document.querySelectorAll("#live img, #live script").length`)
	if marker != 1 || injected != 0 || !strings.Contains(liveText, "ledger.append") || !strings.Contains(liveText, "sess-live") {
		t.Errorf("live log: %q (marker %d, injected %d)", liveText, marker, injected)
	}
	shot(t, ctx, dir, "overview-live")

	// phone width: nothing scrolls sideways
	run(t, ctx, "phone", chromedp.EmulateViewport(390, 844), chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(css("#col-blocked")))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("overview is %d px wide at a 390 px viewport", w)
	}
	shot(t, ctx, dir, "overview-phone")
	run(t, ctx, "phone session", chromedp.Navigate(f.url+"/sessions/"+blockedSession), chromedp.WaitVisible(css("#timeline")))
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("session page is %d px wide at a 390 px viewport", w)
	}
	shot(t, ctx, dir, "session-phone")
	t.Logf("screenshots in %s", dir)
}
