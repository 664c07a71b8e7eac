// Package server is `docket serve`: docket's judge, store and ledger as an
// HTTP service for runtimes without hooks (the OpenBrain V1 API:
// recall, decisions, the review queue, the inspector, evaluate) and for
// people (approvals, sessions, events), with bearer-token roles, a
// durable Server-Sent Events stream, Prometheus metrics and an OpenAPI
// document. It adds no decision logic: handlers parse and validate the
// request, call the same store, judge and ledger functions the hooks and
// the CLI call, and map errors onto statuses in one place (apiError).
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/policywatch"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
	"github.com/docket/docket/trust"
)

// DefaultMaxBody bounds a request body (413 past it).
const DefaultMaxBody = 1 << 20

// Timeouts of the HTTP server. A request's handler work is bounded by
// WriteTimeout; the event stream extends its own deadline per write.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 120 * time.Second
	// DrainTimeout bounds how long shutdown waits for requests in flight.
	DrainTimeout = 15 * time.Second
)

// Config wires a Server.
type Config struct {
	Home   home.Home
	Store  store.Store
	Events *EventLog
	Tokens *Tokens
	// Policy is the judge's policy set; LoadPolicy, when set, reloads it
	// when the state root's policies change.
	Policy     *judge.PolicySet
	LoadPolicy func() (*judge.PolicySet, error)
	// Ledger records evaluations; nil leaves them out of the ledger (the
	// decision still says so in its warnings).
	Ledger *ledger.Ledger
	// LLM is the optional second judge.
	LLM judge.JudgeBackend
	// MaxBody bounds request bodies; 0 means DefaultMaxBody.
	MaxBody int64
	// Log receives one line per failed request (5xx) and background error.
	Log io.Writer
	Now func() time.Time
}

// Server is the HTTP API. Create it with New.
type Server struct {
	cfg     Config
	metrics *metrics
	policy  *judge.Engine // holds the policy snapshot; policywatch.Watch reloads it
	polErr  atomic.Pointer[error]
	handler http.Handler
	closing chan struct{}
	once    sync.Once
	logMu   sync.Mutex
	ui      atomic.Pointer[http.Handler] // the console, at every path no API route takes
	// levels keeps the monitoring levels (trust policy and MAC'd level
	// summary) while neither file changes
	levels Warm[*judge.Trust]
	// scope is the ledger's name for session owners (ledgerScope)
	scope atomic.Pointer[string]
	// testingOnlyBeforeClaim, when set, runs just before a runtime
	// token claims a new session
	testingOnlyBeforeClaim func(session string)
}

// New returns a server over cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Events == nil || cfg.Tokens == nil || cfg.Policy == nil {
		return nil, errors.New("new server: store, events, tokens and policy are required")
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	s := &Server{cfg: cfg, metrics: newMetrics(), closing: make(chan struct{})}
	s.policy = judge.NewEngine(cfg.Home, cfg.Policy)
	s.handler = http.MaxBytesHandler(s.mux(), cfg.MaxBody)
	return s, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

func (s *Server) logf(format string, a ...any) {
	s.logMu.Lock()
	fmt.Fprintf(s.cfg.Log, "docket: "+format+"\n", a...)
	s.logMu.Unlock()
}

// route is one API route. Exactly one of jsonH and rawH is set.
type route struct {
	method string
	path   string // as in the OpenAPI document and the mux pattern
	role   Role   // "" = no authentication
	jsonH  func(s *Server, r *request) (int, any, error)
	rawH   func(s *Server, w http.ResponseWriter, r *http.Request, who Principal)
	// body says the route reads a JSON request body
	body bool
}

// request is what a JSON handler sees.
type request struct {
	*http.Request
	body []byte
	who  Principal
}

// routes is the API. The OpenAPI document (openapi.json) lists exactly
// these; TestOpenAPIMatchesRoutes fails when they disagree.
var routes = []route{
	{method: "GET", path: "/healthz", rawH: (*Server).healthz},
	{method: "GET", path: "/metrics", role: RoleRuntime, rawH: (*Server).serveMetrics},
	{method: "GET", path: "/v1/openapi.json", role: RoleRuntime, rawH: (*Server).openapi},
	{method: "POST", path: "/v1/judge/recall", role: RoleRuntime, jsonH: (*Server).recall, body: true},
	{method: "POST", path: "/v1/judge/decisions", role: RoleRuntime, jsonH: (*Server).writeDecision, body: true},
	{method: "GET", path: "/v1/judge/decisions/{decision_id}", role: RoleRuntime, jsonH: (*Server).getDecision},
	{method: "POST", path: "/v1/judge/evaluate", role: RoleRuntime, jsonH: (*Server).evaluate, body: true},
	{method: "GET", path: "/v1/memories/{memory_id}/inspector", role: RoleReviewer, jsonH: (*Server).inspector},
	{method: "GET", path: "/v1/review-queue", role: RoleReviewer, jsonH: (*Server).reviewQueue},
	{method: "POST", path: "/v1/review-queue/{item_id}/actions", role: RoleReviewer, jsonH: (*Server).reviewAction, body: true},
	{method: "GET", path: "/v1/approvals", role: RoleReviewer, jsonH: (*Server).listApprovals},
	{method: "GET", path: "/v1/approvals/{approval_id}", role: RoleRuntime, jsonH: (*Server).getApproval},
	{method: "POST", path: "/v1/approvals/{approval_id}/actions", role: RoleReviewer, jsonH: (*Server).approvalAction, body: true},
	{method: "GET", path: "/v1/sessions", role: RoleReviewer, jsonH: (*Server).listSessions},
	{method: "GET", path: "/v1/sessions/{session_id}", role: RoleReviewer, jsonH: (*Server).sessionEntries},
	{method: "GET", path: "/v1/sessions/{session_id}/verify", role: RoleReviewer, jsonH: (*Server).verifySession},
	{method: "GET", path: "/v1/events", role: RoleReviewer, rawH: (*Server).events},
	{method: "GET", path: "/v1/tokens", role: RoleAdmin, jsonH: (*Server).listTokens},
	{method: "POST", path: "/v1/tokens", role: RoleAdmin, jsonH: (*Server).createToken, body: true},
	{method: "POST", path: "/v1/tokens/{token_id}/revoke", role: RoleAdmin, jsonH: (*Server).revokeToken},
}

func (s *Server) mux() *http.ServeMux {
	mux := http.NewServeMux()
	methods := map[string][]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
		methods[rt.path] = append(methods[rt.path], rt.method)
	}
	for path, ms := range methods {
		sort.Strings(ms)
		allow := strings.Join(ms, ", ")
		if strings.Contains(allow, "GET") {
			allow += ", HEAD"
		}
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed", Message: r.Method + " is not allowed here; use " + allow})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if ui := s.ui.Load(); ui != nil && !strings.HasPrefix(r.URL.Path, "/v1/") {
			(*ui).ServeHTTP(w, r)
			return
		}
		writeError(w, notFound("no route %s %s; see /v1/openapi.json", r.Method, r.URL.Path))
	})
	return mux
}

// wrap authenticates, reads the body, runs the handler, maps its error
// and records metrics.
func (s *Server) wrap(rt route) http.Handler {
	name := rt.method + " " + rt.path
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		code := s.serve(rt, w, r)
		s.metrics.observe(name, code, time.Since(start))
	})
}

func (s *Server) serve(rt route, w http.ResponseWriter, r *http.Request) int {
	fail := func(err error) int {
		ae := writeError(w, err)
		if ae.Status >= 500 {
			s.logf("%s %s: %v", r.Method, r.URL.Path, err)
		}
		return ae.Status
	}
	var who Principal
	if rt.role != "" {
		var err error
		if who, err = s.authenticate(r); err != nil {
			return fail(err)
		}
		if !who.Role.Allows(rt.role) {
			return fail(&Error{Status: http.StatusForbidden, Code: CodeForbidden,
				Message: fmt.Sprintf("token %q has role %s; this route needs %s", who.Name, who.Role, rt.role)})
		}
		if err := who.routeAllowed(rt, r.URL.Query()); err != nil {
			return fail(err)
		}
	}
	if rt.rawH != nil {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		rt.rawH(s, sw, r, who)
		return sw.code
	}
	req := &request{Request: r, who: who}
	if rt.body {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return fail(err)
		}
		req.body = b
	}
	code, body, err := rt.jsonH(s, req)
	if err != nil {
		return fail(err)
	}
	writeJSON(w, code, body)
	return code
}

func (s *Server) authenticate(r *http.Request) (Principal, error) {
	// the scheme name is case-insensitive (RFC 7235)
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return Principal{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: "missing bearer token (Authorization: Bearer dkt_…; create one with 'docket token create')"}
	}
	p, err := s.cfg.Tokens.Authenticate(strings.TrimSpace(tok))
	if err != nil {
		if errors.Is(err, ErrBadToken) {
			return Principal{}, &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: "invalid or revoked token"}
		}
		return Principal{}, err
	}
	return p, nil
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// engine returns a judge engine for one evaluation, over the policy in
// force, the server's store (recall, write-back, approvals) and ledger.
// The decision and the approval it writes record who as their creator.
func (s *Server) engine(who Principal) *judge.Engine {
	e := judge.NewEngine(s.cfg.Home, s.policy.Policy())
	if perr := s.polErr.Load(); perr != nil {
		e.SetPolicyError(*perr)
	}
	e.Headless, e.WriteBackAll, e.SideChannel = true, true, false
	// the policy may be approved or changed while the server runs
	e.RecheckApproval = true
	// a runtime waits on the answer; the hook's tight store deadlines
	// would turn a busy moment into a fail-closed block
	e.RecallTimeout, e.WriteBackTimeout = 2*time.Second, 5*time.Second
	e.Now = s.cfg.Now
	ad := storeadapter.New(s.cfg.Store)
	ad.Creator = who.ID
	e.OpenRecall = func(context.Context) (judge.Recaller, error) { return ad, nil }
	e.Writer, e.Approvals = ad, ad
	if s.cfg.Ledger != nil {
		e.Ledger = s.cfg.Ledger
	}
	if s.cfg.LLM != nil {
		e.LLM = s.cfg.LLM
	}
	e.Trust = s.trustLevels()
	// a body file a proposal names is on the runtime's machine; reading
	// the server's file of that name would judge the wrong bytes and
	// tell the caller what the server's files hold
	e.Open = func(string) (*os.File, error) { return nil, judge.ErrRemoteFile }
	return e
}

// trustLevels returns the monitoring levels an evaluation applies, as
// the judge hook does (judge.LoadTrust): the trust policy and the level
// summary, reloaded when the stat fingerprint of either file changes (a
// refresh by `docket trust` or a critical violation rewrites the
// summary). Without a ledger there are no keys to verify the summary
// with, and levels are left out, as in the hook.
func (s *Server) trustLevels() *judge.Trust {
	if s.cfg.Ledger == nil {
		return nil
	}
	h := s.cfg.Home
	paths := []string{filepath.Join(h.PoliciesDir(), trust.PolicyFile), filepath.Join(h.Root, trust.Dir, trust.LevelsFile)}
	t, _ := s.levels.Get("trust", paths, func() (*judge.Trust, error) { return judge.LoadTrust(h, s.cfg.Ledger.Keys()), nil })
	return t
}

// Serve serves on ln until ctx ends, then drains: it stops accepting,
// ends event streams, waits up to DrainTimeout for requests in flight and
// returns nil. Every write acknowledged before that is committed (the
// store commits before a handler answers). With tlsCert and tlsKey set it
// serves HTTPS.
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsCert, tlsKey string) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          nil,
	}
	if tlsCert != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	srv.RegisterOnShutdown(func() { s.once.Do(func() { close(s.closing) }) })
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	go s.cfg.Events.TailLedgers(bg, s.cfg.Home, 250*time.Millisecond, func(err error) { s.logf("events: %v", err) })
	if s.cfg.LoadPolicy != nil && s.cfg.Home.Root != "" {
		go policywatch.Watch(bg, s.policy, []string{s.cfg.Home.PoliciesDir()}, s.cfg.LoadPolicy, func(_ *judge.PolicySet, err error) {
			if err != nil {
				s.polErr.Store(&err)
				s.logf("policy reload failed, evaluations fail closed: %v", err)
				return
			}
			s.polErr.Store(nil)
		})
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		dctx, cancel := context.WithTimeout(context.Background(), DrainTimeout)
		defer cancel()
		done <- srv.Shutdown(dctx)
	}()
	var err error
	if tlsCert != "" {
		err = srv.ServeTLS(ln, tlsCert, tlsKey)
	} else {
		err = srv.Serve(ln)
	}
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	return nil
}
