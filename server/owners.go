package server

// Session owners. A ledger session written first through the API by a
// runtime token is that token's (store.Store.ClaimSession records the
// token id, the same id the creator of its decisions and approvals
// carries). A runtime token may append to, gate and be judged under only
// the sessions it owns, and claims a session on its first write only when
// the session has no ledger yet: a session the hooks, `docket validate`
// or the Unix socket started has no API owner and is no runtime's.
// Reviewers and admins use every session and claim none.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
)

// noSession answers a session a runtime token may not use: another
// token's and one the hooks wrote alike, byte for byte, so the answer
// tells the caller neither who holds the session nor what is in it.
// The session id is left out too, so that every refusal is the same.
func noSession() error { return notFound("no such session for this token") }

// ledgerScope names the ledger sessions live in, for their owners: the
// SHA-256 of the state root's checkpoint verifier key, which `docket
// init` never rewrites and replicas sharing a state root share. Replicas
// on one database but state roots of their own keep owners apart, as
// their ledgers are.
func (s *Server) ledgerScope() (string, error) {
	if p := s.scope.Load(); p != nil {
		return *p, nil
	}
	var keys *ledger.Keys
	if s.cfg.Ledger != nil {
		keys = s.cfg.Ledger.Keys()
	} else {
		k, err := ledger.LoadKeys(s.cfg.Home)
		if err != nil {
			return "", fmt.Errorf("load ledger keys: %w", err)
		}
		keys = k
	}
	vkey := keys.VerifierKey()
	if vkey == "" {
		return "", errors.New("load ledger keys: no checkpoint verifier key")
	}
	sum := sha256.Sum256([]byte(vkey))
	scope := "ledger:" + hex.EncodeToString(sum[:])
	s.scope.Store(&scope)
	return scope, nil
}

// hasLedger reports whether session has a ledger under h: its entries
// file or its signed head.
func hasLedger(h home.Home, session string) (bool, error) {
	path := h.LedgerPath(session)
	for _, p := range []string{path, strings.TrimSuffix(path, ".jsonl") + ".head"} {
		if _, err := os.Lstat(p); err == nil {
			return true, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("stat ledger: %w", err)
		}
	}
	return false, nil
}

// useSession decides whether who may write to or gate session, claiming
// it for a runtime token that finds it new. It returns nil, or the
// noSession 404 for a session the caller may not use.
func (s *Server) useSession(ctx context.Context, who Principal, session string) error {
	if who.Role.Allows(RoleReviewer) {
		return nil
	}
	if !who.Role.Valid() || who.ID == "" {
		return noSession()
	}
	scope, err := s.ledgerScope()
	if err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "session owners cannot be checked: " + err.Error()}
	}
	owner, err := s.cfg.Store.SessionOwner(ctx, scope, session)
	switch {
	case err == nil:
		if owner != who.ID {
			return noSession()
		}
		return nil
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	// no owner: a session with a ledger is the hooks'; a new one is
	// claimed, and of claims racing (on any replica) the first wins
	if has, err := hasLedger(s.cfg.Home, session); err != nil {
		return err
	} else if has {
		return noSession()
	}
	if f := s.testingOnlyBeforeClaim; f != nil {
		f(session)
	}
	owner, err = s.cfg.Store.ClaimSession(ctx, scope, session, who.ID)
	if err != nil {
		return err
	}
	if owner != who.ID {
		return noSession()
	}
	return nil
}
