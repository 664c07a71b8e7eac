package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SSE pacing: how often a stream looks for events other replicas wrote,
// and how often an idle stream sends a keep-alive comment.
const (
	ssePoll      = 500 * time.Millisecond
	sseKeepAlive = 15 * time.Second
	sseBatch     = 256
)

// events streams the event log as Server-Sent Events. Each event's id is
// its seq; a client that reconnects with Last-Event-ID (or ?after=SEQ)
// gets every event after it, in order, none lost and none repeated.
func (s *Server) events(w http.ResponseWriter, r *http.Request, _ Principal) {
	after := int64(0)
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("after")
	}
	if last != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(last), 10, 64)
		if err != nil || n < 0 {
			writeError(w, badRequest("Last-Event-ID", "want the seq of the last event received"))
			return
		}
		// An id past the newest event is not from this log (it was reset,
		// or the client talks to another server): waiting for it would
		// silently skip every event up to it.
		newest, err := s.cfg.Events.Newest(r.Context())
		if err != nil {
			s.logf("events: %v", err)
			writeError(w, err)
			return
		}
		if n > newest {
			writeError(w, badRequest("Last-Event-ID", "%d is past the newest event (%d): the event log was reset or the id is from another server; reconnect without it", n, newest))
			return
		}
		after = n
	}
	types := map[string]bool{}
	for _, t := range strings.Split(r.URL.Query().Get("types"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			types[t] = true
		}
	}
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 1000\n\n")
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	keepAlive := time.NewTicker(sseKeepAlive)
	defer keepAlive.Stop()
	for {
		woke, stop := s.cfg.Events.wait()
		evs, err := s.cfg.Events.After(ctx, after, sseBatch)
		if err != nil {
			stop()
			if ctx.Err() == nil {
				s.logf("events: %v", err)
				fmt.Fprintf(w, "event: error\ndata: {\"code\":\"unavailable\"}\n\n")
				rc.Flush()
			}
			return
		}
		if len(evs) > 0 {
			stop()
			rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
			for _, e := range evs {
				after = e.Seq
				if len(types) > 0 && !types[e.Type] {
					continue
				}
				fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Type, e.Data)
			}
			// an id without data moves the client past filtered-out events
			fmt.Fprintf(w, "id: %d\n\n", after)
			if err := rc.Flush(); err != nil {
				return
			}
			continue
		}
		t := time.NewTimer(ssePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			stop()
			return
		case <-s.closing:
			t.Stop()
			stop()
			return
		case <-woke:
		case <-t.C:
			stop()
		case <-keepAlive.C:
			stop()
			rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
			fmt.Fprintf(w, ": keep-alive\n\n")
			if err := rc.Flush(); err != nil {
				t.Stop()
				return
			}
		}
		t.Stop()
	}
}
