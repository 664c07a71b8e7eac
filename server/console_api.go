package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/trust"
)

// This file is what the console (server/console) needs from the server:
// it calls the API's own route handlers in process, so the browser and
// the HTTP API share one code path for every read and every decision.

// Mount serves h at every path no API route takes (the console at "/").
func (s *Server) Mount(h http.Handler) { s.ui.Store(&h) }

// Home is the state root the server serves.
func (s *Server) Home() home.Home { return s.cfg.Home }

type callKey struct{}

type callState struct {
	who  Principal
	body []byte
	ran  bool
	code int
	out  any
	err  error
}

var (
	callOnce sync.Once
	callMux  *http.ServeMux
)

// callRoutes is a mux over the JSON routes whose handlers record their
// result in the request's callState instead of writing a response.
func callRoutes() *http.ServeMux {
	callOnce.Do(func() {
		callMux = http.NewServeMux()
		for _, rt := range routes {
			if rt.jsonH == nil {
				continue
			}
			rt := rt
			callMux.HandleFunc(rt.method+" "+rt.path, func(_ http.ResponseWriter, r *http.Request) {
				st := r.Context().Value(callKey{}).(*callState)
				s := r.Context().Value(serverKey{}).(*Server)
				st.ran = true
				if !st.who.Role.Allows(rt.role) {
					st.err = &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: fmt.Sprintf("%s has role %s; this needs %s", st.who.Name, st.who.Role, rt.role)}
					return
				}
				if err := st.who.routeAllowed(rt, r.URL.Query()); err != nil {
					st.err = err
					return
				}
				st.code, st.out, st.err = rt.jsonH(s, &request{Request: r, body: st.body, who: st.who})
			})
		}
	})
	return callMux
}

type serverKey struct{}

// Call runs the JSON API route for method and target (a path with its
// query, e.g. "/v1/review-queue?status=pending") as who, with body as
// the request body, and returns the JSON the API would have answered.
// An error is an *Error (status, code, message), as the API maps it.
func (s *Server) Call(ctx context.Context, who Principal, method, target string, body []byte) ([]byte, error) {
	st := &callState{who: who, body: body}
	ctx = context.WithValue(context.WithValue(ctx, callKey{}, st), serverKey{}, s)
	r, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("call %s %s: %w", method, target, err)
	}
	callRoutes().ServeHTTP(discard{}, r)
	if !st.ran {
		return nil, notFound("no route %s %s", method, target)
	}
	if st.err != nil {
		ae := apiError(st.err)
		if ae.Status >= 500 {
			s.logf("console %s %s: %v", method, target, st.err)
		}
		return nil, ae
	}
	out, err := json.Marshal(st.out)
	if err != nil {
		return nil, fmt.Errorf("call %s %s: %w", method, target, err)
	}
	return out, nil
}

// ErrorStatus is the HTTP status the API answers err with.
func ErrorStatus(err error) int {
	var ae *Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return apiError(err).Status
}

// LastEventSeq is the seq of the newest event (0 for none).
func (s *Server) LastEventSeq(ctx context.Context) (int64, error) {
	var n int64
	err := s.cfg.Events.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(seq), 0) FROM serve_events").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read events: %w", err)
	}
	return n, nil
}

// EventsAfter returns up to limit events after seq, oldest first.
func (s *Server) EventsAfter(ctx context.Context, after int64, limit int) ([]Event, error) {
	return s.cfg.Events.After(ctx, after, limit)
}

// ServeEvents streams the event log as /v1/events does, for a caller the
// console authenticated.
func (s *Server) ServeEvents(w http.ResponseWriter, r *http.Request) { s.events(w, r, Principal{}) }

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

// TrustLevels reads the monitoring levels for the console, read-only:
// the trust state (trust.Store.Load, MAC-verified with the ledger's keys)
// advanced in memory to now, so a hold that completed since the last
// refresh shows as the level it graduated to. Ledger entries written
// since the last `docket trust` or refresh are not read; nothing is
// written. The policy is the trust policy in force (on an error, the
// fail-closed policy the judge uses, and the error).
func (s *Server) TrustLevels(now time.Time) (*trust.State, trust.Policy, []string, error) {
	p, perr := trust.LoadPolicy(s.cfg.Home)
	var warn []string
	if perr != nil {
		warn = append(warn, perr.Error()+" (failing closed: enforce mode with the default thresholds)")
	}
	if s.cfg.Ledger == nil {
		return nil, p, warn, errors.New("read trust levels: no ledger keys to verify them with")
	}
	st := &trust.Store{Home: s.cfg.Home, Keys: s.cfg.Ledger.Keys()}
	state, err := st.Load()
	if err != nil && !errors.Is(err, trust.ErrForged) {
		return nil, p, warn, fmt.Errorf("read trust levels: %w", err)
	}
	if err != nil {
		warn = append(warn, err.Error()+": every agent is at level 0 until `docket trust` rebuilds the state from the ledgers")
	}
	if now.After(state.Clock) {
		state.Advance(&p, nil, now)
	}
	return state, p, append(warn, state.Warnings...), nil
}
