package server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestServeDrains: cancelling Serve's context ends open event streams,
// refuses new connections and returns nil.
func TestServeDrains(t *testing.T) {
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln, "", "") }()
	url := "http://" + ln.Addr().String()
	req, _ := http.NewRequest("GET", url+"/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+e.tokens[RoleReviewer])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	e.url = url
	e.must(201, "POST", "/v1/judge/decisions", RoleRuntime, decisionBody("drain-1", "allow", ""))
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the event: %v", err)
		}
		if strings.HasPrefix(line, "event: decision.written") {
			break
		}
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(DrainTimeout + 5*time.Second):
		t.Fatal("Serve did not return: an event stream held the drain")
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Fatal("still accepting connections after the drain")
	}
}
