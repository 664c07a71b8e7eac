package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/docket/docket/internal/hookclient"
)

// HookCall is one hook invocation forwarded by a thin client over the
// hook socket: its arguments, stdin, forwarded environment, and the
// caller the kernel vouches for (SO_PEERCRED).
type HookCall struct {
	Args  []string
	Stdin []byte
	// Getenv reads the forwarded environment (hookclient.ForwardedEnv
	// only); everything else reads as unset.
	Getenv func(string) string
	Peer   hookclient.Peer
}

// HookFunc runs one hook exactly as its binary would in-process, writing
// its stdout and stderr and returning its exit code. The server adds no
// logic of its own: cmd/docket wires docket-judge's, docket-ledger's,
// docket-gate's and docket validate's functions here.
type HookFunc func(ctx context.Context, call HookCall, stdout, stderr io.Writer) int

// HookTimeout bounds one hook call on the socket; the thin clients give
// up earlier (their deadlines sit inside the hook timeouts) and fail
// closed.
const HookTimeout = 30 * time.Minute

type peerKey struct{}

// HookHandler serves the hook routes (hookclient.Route*) of hooks. It
// must be served by ServeHooks, which records each connection's peer
// (and speaks the socket's HTTP itself, hookserve.go; the handler is an
// http.Handler too, for any other server).
func HookHandler(hooks map[string]HookFunc, log func(format string, a ...any)) http.Handler {
	return &hookHandler{hooks: hooks, log: log}
}

type hookHandler struct {
	hooks map[string]HookFunc
	log   func(format string, a ...any)
}

func (h *hookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	peer, hasPeer := r.Context().Value(peerKey{}).(hookclient.Peer)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 2*hookclient.MaxStdin))
	if err != nil {
		http.Error(w, "bad hook request: "+err.Error(), http.StatusBadRequest)
		return
	}
	method := r.Method
	status, ctype, out := h.serve(r.Context(), method, r.URL.Path, body, peer, hasPeer)
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(status)
	w.Write(out)
}

// serve answers one request: its status, content type and body.
func (h *hookHandler) serve(ctx context.Context, method, path string, body []byte, peer hookclient.Peer, hasPeer bool) (int, string, []byte) {
	fn, ok := h.hooks[path]
	if !ok || method != http.MethodPost {
		return textAnswer(http.StatusNotFound, "no hook route "+method+" "+path)
	}
	if !hasPeer {
		return textAnswer(http.StatusForbidden, "caller unknown: no peer credentials")
	}
	var req hookclient.Request
	if err := json.Unmarshal(body, &req); err != nil {
		return textAnswer(http.StatusBadRequest, "bad hook request: "+err.Error())
	}
	env := map[string]string{}
	for _, k := range hookclient.ForwardedEnv {
		if v, ok := req.Env[k]; ok {
			env[k] = v
		}
	}
	call := HookCall{Args: req.Args, Stdin: req.Stdin, Peer: peer, Getenv: func(k string) string { return env[k] }}
	var out, errb bytes.Buffer
	code := runHook(ctx, fn, call, &out, &errb, h.log, path)
	b, _ := json.Marshal(hookclient.Response{Exit: code, Stdout: out.Bytes(), Stderr: errb.Bytes()})
	return http.StatusOK, "application/json", b
}

// textAnswer is what http.Error writes.
func textAnswer(status int, msg string) (int, string, []byte) {
	return status, "text/plain; charset=utf-8", []byte(msg + "\n")
}

// runHook runs fn; a panic is a hook's internal error: exit 2, which
// every runtime treats as a failed hook (the judge and the gate fail
// closed on their own before that).
func runHook(ctx context.Context, fn HookFunc, call HookCall, stdout, stderr *bytes.Buffer, log func(string, ...any), route string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			log("hook %s: internal error: %v", route, r)
			stdout.Reset()
			fmt.Fprintf(stderr, "docket: error: internal error in the daemon (%v)\n", r)
			code = 2
		}
	}()
	return fn(ctx, call, stdout, stderr)
}

// ServeHooks serves h on the Unix socket listener ln until ctx ends,
// learning each connection's peer from SO_PEERCRED; a connection whose
// peer cannot be learned is refused. A handler from HookHandler is
// served by the socket's own minimal HTTP/1.1 server (hookserve.go),
// any other by net/http.
func ServeHooks(ctx context.Context, ln net.Listener, h http.Handler) error {
	if hh, ok := h.(*hookHandler); ok {
		return serveRaw(ctx, ln, hh)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      HookTimeout,
		IdleTimeout:       IdleTimeout,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if p, err := connPeer(c); err == nil {
				return context.WithValue(ctx, peerKey{}, p)
			}
			return ctx
		},
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		dctx, cancel := context.WithTimeout(context.Background(), DrainTimeout)
		defer cancel()
		done <- srv.Shutdown(dctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve hooks: %w", err)
	}
	if err := <-done; err != nil {
		return fmt.Errorf("drain hooks: %w", err)
	}
	return nil
}

// connPeer is the peer of a Unix socket connection.
func connPeer(c net.Conn) (hookclient.Peer, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return hookclient.Peer{}, errors.New("not a Unix socket")
	}
	return PeerCred(uc)
}
