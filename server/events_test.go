package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseEvent is one received event.
type sseEvent struct {
	id   int64
	typ  string
	data string
}

// readEvents connects to the event stream after lastID and returns the
// first n events.
func readEvents(t *testing.T, e *env, lastID string, n int) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.tokens[RoleReviewer])
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var out []sseEvent
	var cur sseEvent
	for sc.Scan() && len(out) < n {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	if len(out) < n {
		t.Fatalf("got %d events, want %d (%v)", len(out), n, sc.Err())
	}
	return out
}

func TestEventsResumeWithoutLoss(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 3; i++ {
		e.must(201, "POST", "/v1/judge/decisions", RoleRuntime, decisionBody(fmt.Sprintf("ev-%d", i), "allow", ""))
	}
	first := readEvents(t, e, "", 2)
	if first[0].typ != EventDecisionWritten || first[1].id <= first[0].id {
		t.Fatalf("first events: %+v", first)
	}
	// more events while the client is away, from many writers at once
	var wg sync.WaitGroup
	for i := 3; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			e.must(201, "POST", "/v1/judge/decisions", RoleRuntime, decisionBody(fmt.Sprintf("ev-%d", i), "block", ""))
		}(i)
	}
	wg.Wait()
	rest := readEvents(t, e, strconv.FormatInt(first[1].id, 10), 18)
	seen := map[string]bool{}
	prev := first[1].id
	for _, ev := range append(first, rest...) {
		key := ev.data[strings.Index(ev.data, `"decision_id"`):][:40]
		if seen[key] {
			t.Fatalf("event repeated: %s", ev.data)
		}
		seen[key] = true
	}
	for _, ev := range rest {
		if ev.id <= prev {
			t.Fatalf("ids not increasing: %d after %d", ev.id, prev)
		}
		prev = ev.id
	}
	if len(seen) != 20 {
		t.Fatalf("%d distinct decisions in the stream, want 20", len(seen))
	}
	// a live stream gets an event written after it connected
	done := make(chan []sseEvent, 1)
	go func() { done <- readEvents(t, e, strconv.FormatInt(prev, 10), 1) }()
	time.Sleep(100 * time.Millisecond)
	e.must(201, "POST", "/v1/judge/decisions", RoleRuntime, decisionBody("ev-live", "revise", `"required_revision":{"summary":"smaller batch"}`))
	select {
	case got := <-done:
		if !strings.Contains(got[0].data, "act-ev-live") {
			t.Fatalf("live event: %+v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no live event")
	}
}

func TestEventsFromLedgerAndReview(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.srv.cfg.Events.TailLedgers(ctx, e.h, 20*time.Millisecond, func(err error) { t.Error(err) })
	e.must(201, "POST", "/v1/judge/evaluate", RoleRuntime, proposalBody("tail-1", "payments.wire", "high_risk", "flow-tail", nil))
	evs := readEvents(t, e, "", 3)
	types := map[string]bool{}
	for _, ev := range evs {
		types[ev.typ] = true
	}
	for _, want := range []string{EventApprovalQueued, EventDecisionJudged, EventLedgerAppend} {
		if !types[want] {
			t.Errorf("no %s event in %+v", want, evs)
		}
	}
}

func TestEventsBadLastEventID(t *testing.T) {
	e := newEnv(t)
	// "99" is past the newest event of an empty log: a client that
	// waited for it would miss events 1..99 once they were written.
	for _, id := range []string{"yesterday", "-1", "99"} {
		req, _ := http.NewRequest("GET", e.url+"/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+e.tokens[RoleReviewer])
		req.Header.Set("Last-Event-ID", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(body), `"field":"Last-Event-ID"`) {
			t.Errorf("Last-Event-ID %q: status %d, body %s", id, resp.StatusCode, body)
		}
	}
}

// TestEventsNeedReviewer: the stream carries every session's decisions,
// approvals and appends, so a runtime token gets none of it, whatever
// the spelling of the request.
func TestEventsNeedReviewer(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", "/v1/judge/decisions", RoleRuntime, decisionBody("ev-role", "allow", ""))
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/events"},
		{"HEAD", "/v1/events"},
		{"GET", "/v1/events?after=0&types=decision.written"},
		{"GET", "/v1/events/"},
		{"GET", "/v1//events"},
		{"GET", "/v1/./events"},
		{"GET", "/V1/EVENTS"},
	} {
		code, body := e.do(tc.method, tc.path, RoleRuntime, "")
		if code < 400 || strings.Contains(string(body), "decision.written") {
			t.Errorf("%s %s with a runtime token: %d %.120s", tc.method, tc.path, code, body)
		}
	}
	if code, _ := e.do("HEAD", "/v1/events", RoleReviewer, ""); code != 200 {
		t.Errorf("HEAD /v1/events with a reviewer token: %d", code)
	}
}
