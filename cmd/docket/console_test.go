package main

import (
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
)

func TestConsoleCommand(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	h, err := home.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	// no server recorded, no --server
	if _, errOut, code := docket(t, "console"); code != 1 || !strings.Contains(errOut, "docket serve") {
		t.Fatalf("without a server: %d %q", code, errOut)
	}
	if err := writeServeInfo(h, ServeInfo{URL: "http://127.0.0.1:7999", Addr: "127.0.0.1:7999", PID: os.Getpid()}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		wantHost string
	}{
		{"from serve.json", []string{"console"}, 0, "127.0.0.1:7999"},
		{"explicit server", []string{"console", "--server", "https://docket.internal:7420/", "--role", "admin"}, 0, "docket.internal:7420"},
		{"runtime role", []string{"console", "--role", "runtime"}, 2, ""},
		{"ttl too long", []string{"console", "--ttl", "2h"}, 2, ""},
		{"not a url", []string{"console", "--server", "ftp://x"}, 2, ""},
		{"argument", []string{"console", "extra"}, 2, ""},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		out, errOut, code := docket(t, tt.args...)
		if code != tt.code {
			t.Errorf("%s: exit %d, want %d (%s)", tt.name, code, tt.code, errOut)
			continue
		}
		if tt.code != 0 {
			continue
		}
		u, err := url.Parse(strings.TrimSpace(out))
		if err != nil || u.Host != tt.wantHost || u.Path != "/login" || len(u.Query().Get("t")) < 40 {
			t.Errorf("%s: printed %q", tt.name, out)
			continue
		}
		if seen[u.Query().Get("t")] {
			t.Errorf("%s: the same secret twice", tt.name)
		}
		seen[u.Query().Get("t")] = true
		// only the secret's hash is stored
		b, _ := os.ReadFile(h.KeysDir() + "/console-logins.json")
		if strings.Contains(string(b), u.Query().Get("t")) {
			t.Errorf("%s: the login secret is stored in clear", tt.name)
		}
	}
}

func TestConsoleRevoke(t *testing.T) {
	t.Setenv("DOCKET_HOME", t.TempDir())
	h, err := home.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := docket(t, "console", "--server", "http://127.0.0.1:7999", "--name", "ana"); code != 0 {
		t.Fatalf("issue: %d %s", code, errOut)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string // in the ticket file's revocations
	}{
		{[]string{"console", "--revoke", "ana"}, 0, `"ana"`},
		{[]string{"console", "--revoke", "all"}, 0, `"*"`},
		{[]string{"console", "--revoke", "ana", "extra"}, 2, ""},
		{[]string{"console", "--revoke", ""}, 2, ""},
		{[]string{"console", "--revoke", " "}, 2, ""},
	} {
		_, errOut, code := docket(t, tt.args...)
		if code != tt.code {
			t.Fatalf("%v: exit %d, want %d (%s)", tt.args, code, tt.code, errOut)
		}
		if tt.want == "" {
			continue
		}
		b, _ := os.ReadFile(h.KeysDir() + "/console-logins.json")
		if !strings.Contains(string(b), `"revoked"`) || !strings.Contains(string(b), tt.want) {
			t.Fatalf("%v: ticket file %s", tt.args, b)
		}
		if strings.Contains(string(b), `"name": "ana"`) {
			t.Fatalf("%v: ana's unused link kept: %s", tt.args, b)
		}
	}
}
