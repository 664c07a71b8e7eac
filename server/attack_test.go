package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A session id in the path names a ledger under the ledger directory and
// nothing else, however it is spelled.
func TestSessionPathAttacks(t *testing.T) {
	e := newEnv(t)
	// a .jsonl file outside the ledger directory, which a traversal would reach
	secret := "do-not-serve-" + t.Name()
	for _, p := range []string{filepath.Join(e.h.Root, "outside.jsonl"), filepath.Join(e.h.KeysDir(), "outside.jsonl")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"secret":"`+secret+`"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{
		"/v1/sessions/..%2Foutside",
		"/v1/sessions/..%2Fkeys%2Foutside",
		"/v1/sessions/..%2F..%2F" + strings.TrimPrefix(filepath.Join(e.h.Root, "outside"), "/"),
		"/v1/sessions/%2e%2e%2Foutside",
		"/v1/sessions/..%5Coutside",
		"/v1/sessions/..",
		"/v1/sessions/.sessions",
		"/v1/sessions/outside%00",
		"/v1/sessions/..%2Fkeys%2Ftokens",
		"/v1/sessions/..%2Foutside/verify",
		"/v1/sessions/..%2Fkeys%2Foutside/verify",
	} {
		t.Run(path, func(t *testing.T) {
			code, b := e.doRaw("GET", path, e.tokens[RoleReviewer], nil)
			if code == http.StatusOK || code >= 500 {
				t.Fatalf("status %d: %s", code, b)
			}
			if strings.Contains(string(b), secret) || strings.Contains(string(b), "sha256") {
				t.Fatalf("served a file outside the ledger: %s", b)
			}
		})
	}
}

// A token revoked after it was used (and cached) stops working on the
// next request; a runtime token reaches no reviewer or admin route.
func TestRevokedAfterUse(t *testing.T) {
	e := newEnv(t)
	toks := OpenTokens(e.h)
	_, sec, err := toks.Create("late", RoleReviewer, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if code, b := e.doRaw("GET", "/v1/review-queue", sec, nil); code != 200 {
		t.Fatalf("before revoking: %d %s", code, b)
	}
	if _, err := toks.Revoke("late", time.Now()); err != nil {
		t.Fatal(err)
	}
	if code, b := e.doRaw("GET", "/v1/review-queue", sec, nil); code != 401 {
		t.Fatalf("after revoking: %d %s", code, b)
	}
	for _, rt := range routes {
		if rt.role == RoleRuntime || rt.role == "" {
			continue
		}
		path := strings.NewReplacer("{session_id}", "flow-x", "{memory_id}", "mem_x", "{item_id}", "rev_x",
			"{approval_id}", "apr_x", "{token_id}", "tok_x").Replace(rt.path)
		if code, b := e.doRaw(rt.method, path, e.tokens[RoleRuntime], []byte(`{}`)); code != 403 {
			t.Errorf("runtime token on %s %s: %d %s", rt.method, rt.path, code, b)
		}
	}
}
