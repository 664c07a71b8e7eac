package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/hookclient"
)

// The hook socket hands each call its caller's credentials from the
// kernel, only the forwarded environment, and the hook's exact output.
func TestHookSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "h.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	hooks := map[string]HookFunc{
		hookclient.RouteLedger: func(_ context.Context, c HookCall, stdout, stderr io.Writer) int {
			fmt.Fprintf(stdout, "uid=%d pid=%d headless=%q home=%q stdin=%s args=%q", c.Peer.UID, c.Peer.PID, c.Getenv("DOCKET_HEADLESS"), c.Getenv("DOCKET_HOME"), c.Stdin, c.Args)
			io.WriteString(stderr, "warn\n")
			return 2
		},
		hookclient.RouteGate: func(context.Context, HookCall, io.Writer, io.Writer) int { panic("boom") },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeHooks(ctx, ln, HookHandler(hooks, func(string, ...any) {})) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	resp, err := hookclient.Call(sock, hookclient.RouteLedger, hookclient.Request{
		Args: []string{"--runtime", "claude"}, Stdin: []byte(`{"p":1}`),
		Env: map[string]string{"DOCKET_HEADLESS": "1", "DOCKET_HOME": "/caller"},
	}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`uid=%d pid=%d headless="1" home="" stdin={"p":1} args=["--runtime" "claude"]`, os.Getuid(), os.Getpid())
	if string(resp.Stdout) != want || string(resp.Stderr) != "warn\n" || resp.Exit != 2 {
		t.Fatalf("got %d %q %q, want 2 %q", resp.Exit, resp.Stdout, resp.Stderr, want)
	}
	// a panicking hook is exit 2 with nothing on stdout
	resp, err = hookclient.Call(sock, hookclient.RouteGate, hookclient.Request{}, 5*time.Second)
	if err != nil || resp.Exit != 2 || len(resp.Stdout) != 0 || !strings.Contains(string(resp.Stderr), "boom") {
		t.Fatalf("panic: %+v, %v", resp, err)
	}
	// unknown route and a body that is not a request are errors, which a
	// thin client turns into its fail-closed answer
	if _, err := hookclient.Call(sock, "/v1/hook/nope", hookclient.Request{}, 5*time.Second); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("unknown route: %v", err)
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST "+hookclient.RouteLedger+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 1\r\n\r\n{")
	b, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(b), "HTTP/1.1 400") {
		t.Fatalf("bad body: %q", b)
	}
}

// A connection whose peer is unknown (not a Unix socket) is refused.
func TestHookSocketNeedsPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	called := false
	hooks := map[string]HookFunc{hookclient.RouteLedger: func(context.Context, HookCall, io.Writer, io.Writer) int { called = true; return 0 }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ServeHooks(ctx, ln, HookHandler(hooks, func(string, ...any) {}))
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "POST "+hookclient.RouteLedger+" HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}")
	b, _ := io.ReadAll(c)
	if !strings.HasPrefix(string(b), "HTTP/1.1 403") || called {
		t.Fatalf("no peer: %q, hook called %v", b, called)
	}
}
