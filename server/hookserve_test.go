package server

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/hookclient"
)

// startHooks serves hooks on a fresh socket until the test ends.
func startHooks(t *testing.T, hooks map[string]HookFunc) (sock string, stop func() error) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "h.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHooks(ctx, ln, HookHandler(hooks, t.Logf)) }()
	var stopped bool
	var serr error
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			serr = <-done
		}
		return serr
	}
	t.Cleanup(func() { stop() })
	return sock, stop
}

func rawCall(t *testing.T, sock, req string) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(c, req) // a server that answers early need not read it all
	b, _ := io.ReadAll(c)
	return string(b)
}

// What the socket's own HTTP server refuses, with the status net/http
// would have given.
func TestHookServeRefuses(t *testing.T) {
	called := false
	sock, _ := startHooks(t, map[string]HookFunc{hookclient.RouteLedger: func(context.Context, HookCall, io.Writer, io.Writer) int { called = true; return 0 }})
	post := "POST " + hookclient.RouteLedger + " HTTP/1.1\r\nHost: x\r\n"
	cases := []struct{ name, req, want string }{
		{"a GET", "GET " + hookclient.RouteLedger + " HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404"},
		{"no such route", "POST /v1/hook/nope HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", "HTTP/1.1 404"},
		{"not HTTP", "hello\r\n\r\n", "HTTP/1.1 400"},
		{"chunked", post + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "HTTP/1.1 501"},
		{"two lengths", post + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "HTTP/1.1 400"},
		{"a negative length", post + "Content-Length: -1\r\n\r\n", "HTTP/1.1 400"},
		{"a body over the limit", post + "Content-Length: 999999999999\r\n\r\n", "HTTP/1.1 413"},
		{"a body cut short", post + "Content-Length: 10\r\n\r\n{}", "HTTP/1.1 400"},
		{"headers without end", post + strings.Repeat("X-Pad: "+strings.Repeat("a", 1000)+"\r\n", 80), "HTTP/1.1 400"},
		{"not a request", post + "Content-Length: 1\r\n\r\n{", "HTTP/1.1 400"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := tc.req
			if tc.name == "a body cut short" {
				// the client hangs up after its short body
				c, err := net.Dial("unix", sock)
				if err != nil {
					t.Fatal(err)
				}
				io.WriteString(c, req)
				c.(*net.UnixConn).CloseWrite()
				b, _ := io.ReadAll(c)
				c.Close()
				if !strings.HasPrefix(string(b), tc.want) {
					t.Fatalf("got %q, want %s", b, tc.want)
				}
				return
			}
			if got := rawCall(t, sock, req); !strings.HasPrefix(got, tc.want) {
				t.Fatalf("got %q, want %s", got, tc.want)
			}
		})
	}
	if called {
		t.Fatal("a refused request ran the hook")
	}
}

// A caller that hangs up ends the hook's context; shutting the server
// down lets a call in flight finish and answer.
func TestHookServeContextAndDrain(t *testing.T) {
	ended := make(chan struct{})
	started := make(chan struct{}, 2)
	sock, stop := startHooks(t, map[string]HookFunc{
		hookclient.RouteJudge: func(ctx context.Context, _ HookCall, _, _ io.Writer) int {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				close(ended)
			case <-time.After(10 * time.Second):
			}
			return 0
		},
		hookclient.RouteGate: func(ctx context.Context, _ HookCall, stdout, _ io.Writer) int {
			started <- struct{}{}
			time.Sleep(300 * time.Millisecond)
			io.WriteString(stdout, "drained")
			return 0
		},
	})
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST "+hookclient.RouteJudge+" HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
	<-started
	c.Close()
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the hook's context did not end when its caller hung up")
	}
	answer := make(chan *hookclient.Response, 1)
	go func() {
		resp, err := hookclient.Call(sock, hookclient.RouteGate, hookclient.Request{}, 10*time.Second)
		if err != nil {
			t.Error(err)
		}
		answer <- resp
	}()
	<-started
	if err := stop(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if resp := <-answer; resp == nil || string(resp.Stdout) != "drained" {
		t.Fatalf("the call in flight at shutdown: %+v", resp)
	}
	if _, err := hookclient.Call(sock, hookclient.RouteGate, hookclient.Request{}, time.Second); err == nil {
		t.Fatal("a call after shutdown was answered")
	}
}
