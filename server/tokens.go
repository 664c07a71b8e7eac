package server

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofrs/flock"

	"github.com/docket/docket/internal/home"
)

// Role is what a token may do. Each role may do everything the roles
// before it may.
type Role string

const (
	// RoleRuntime: recall, evaluate, write and read decisions, poll its
	// approvals — only the decisions and approvals this token created
	// (Principal.MayRead). Not the event stream: it carries every
	// session's decisions, approvals and ledger appends.
	RoleRuntime Role = "runtime"
	// RoleReviewer: also the review queue, the inspector, approvals,
	// the ledger's sessions and the event stream.
	RoleReviewer Role = "reviewer"
	// RoleAdmin: also tokens.
	RoleAdmin Role = "admin"
)

// Roles lists the roles, least privileged first.
var Roles = []Role{RoleRuntime, RoleReviewer, RoleAdmin}

// Valid reports whether r is a role.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// Allows reports whether r may do what need requires.
func (r Role) Allows(need Role) bool {
	return r.Valid() && slices.Index(Roles, r) >= slices.Index(Roles, need)
}

// TokenPrefix starts every token, so that secret scanners can find one.
const TokenPrefix = "dkt_"

// TokensFile is where tokens are kept, under the state root's keys
// directory (which the judge forbids agents to read): the SHA-256 of each
// token, never the token.
func TokensFile(h home.Home) string { return filepath.Join(h.KeysDir(), "tokens.json") }

// Token is one stored token. Hash is the hex SHA-256 of the token.
type Token struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	Hash      string    `json:"sha256"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// Workspaces binds the token to these workspaces (store.Scope's
	// workspace_id, compared byte for byte). nil, as in a token file
	// written before bindings existed, leaves it unbound: it may name any
	// workspace. A list, even an empty one (which allows none), is kept
	// as written (omitzero), so that a rewrite of the file never unbinds
	// a token.
	Workspaces []string `json:"workspaces,omitzero"`
}

// Bound reports whether the token is bound to a list of workspaces.
func (t Token) Bound() bool { return t.Workspaces != nil }

// Active reports whether the token still authenticates.
func (t Token) Active() bool { return t.RevokedAt.IsZero() }

type tokenFile struct {
	Version int     `json:"version"`
	Tokens  []Token `json:"tokens"`
}

// Principal is who made a request. ID is the token's id, which the store
// records as the creator of the approvals and decisions the request
// writes; it is empty for a console login, which is never a runtime.
//
// Workspaces is the token's binding (Token.Workspaces): nil for an
// unbound token and a console login, which may name any workspace.
type Principal struct {
	ID         string
	Name       string
	Role       Role
	Workspaces []string
}

// MayUseWorkspace reports whether p may name workspace ws in a request
// or read a record stored under it: any workspace for an unbound
// principal, else exactly (byte for byte, as the store compares) one of
// its workspaces. The empty workspace is never a bound principal's.
func (p Principal) MayUseWorkspace(ws string) bool {
	if p.Workspaces == nil {
		return true
	}
	return ws != "" && slices.Contains(p.Workspaces, ws)
}

// MayRead reports whether p may read an approval or a decision whose
// creator (store.Approval.Creator, store.Decision.Creator) is creator.
// Reviewers and admins read every one. A runtime token reads only what
// it created itself: not another token's (a revoked one's included), not
// the hooks' and not records stored before creators were recorded (an
// empty creator, which no token id matches).
func (p Principal) MayRead(creator string) bool {
	if p.Role.Allows(RoleReviewer) {
		return true
	}
	return p.Role.Valid() && p.ID != "" && creator == p.ID
}

// Tokens is the token file of one state root. The server re-reads the
// file when it changes, so a token created or revoked by `docket token`
// takes effect on the next request.
type Tokens struct {
	path string

	mu     sync.Mutex
	stamp  string
	byHash map[string]Token
}

// OpenTokens returns the tokens of h; the file need not exist yet.
func OpenTokens(h home.Home) *Tokens { return &Tokens{path: TokensFile(h)} }

// ErrBadToken is any token that does not authenticate.
var ErrBadToken = errors.New("invalid or revoked token")

// Authenticate returns the principal a bearer token names.
func (t *Tokens) Authenticate(token string) (Principal, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 200 {
		return Principal{}, ErrBadToken
	}
	if err := t.refresh(); err != nil {
		return Principal{}, err
	}
	sum := sha256.Sum256([]byte(token))
	h := hex.EncodeToString(sum[:])
	t.mu.Lock()
	tok, ok := t.byHash[h]
	t.mu.Unlock()
	if !ok || subtle.ConstantTimeCompare([]byte(tok.Hash), []byte(h)) != 1 || !tok.Active() {
		return Principal{}, ErrBadToken
	}
	p := Principal{ID: tok.ID, Name: tok.Name, Role: tok.Role}
	if tok.Bound() {
		// never nil: a bound token stays bound when its list is empty
		p.Workspaces = append(make([]string, 0, len(tok.Workspaces)), tok.Workspaces...)
	}
	return p, nil
}

// refresh re-reads the file when its size or modification time changed.
func (t *Tokens) refresh() error {
	st, err := os.Stat(t.path)
	stamp := ""
	if err == nil {
		stamp = fmt.Sprintf("%d/%d", st.Size(), st.ModTime().UnixNano())
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read tokens: %w", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if stamp == t.stamp && t.byHash != nil {
		return nil
	}
	f, err := readTokens(t.path)
	if err != nil {
		return err
	}
	m := make(map[string]Token, len(f.Tokens))
	for _, tok := range f.Tokens {
		m[tok.Hash] = tok
	}
	t.byHash, t.stamp = m, stamp
	return nil
}

func readTokens(path string) (tokenFile, error) {
	var f tokenFile
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return tokenFile{Version: 1}, nil
	}
	if err != nil {
		return f, fmt.Errorf("read tokens: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil || f.Version != 1 {
		return f, fmt.Errorf("read tokens %s: not a version 1 token file", path)
	}
	return f, nil
}

// validName: 1 to 64 characters from [A-Za-z0-9._-].
func validName(n string) bool { return home.ValidSessionID(n) && len(n) <= 64 }

// update runs fn on the token file under an exclusive lock and writes the
// result atomically with mode 0600.
func (t *Tokens) update(fn func(*tokenFile) error) error {
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	lk := flock.New(t.path + ".lock")
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("lock tokens: %w", err)
	}
	defer lk.Unlock()
	f, err := readTokens(t.path)
	if err != nil {
		return err
	}
	if err := fn(&f); err != nil {
		return err
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := home.WriteFileAtomic(t.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write tokens: %w", err)
	}
	return nil
}

// ErrTokenName is a name that is malformed or already held by an active
// token.
var ErrTokenName = errors.New("token name")

// ErrTokenWorkspace is a workspace binding Create refuses: a malformed
// workspace id, or a binding for a role other than runtime.
var ErrTokenWorkspace = errors.New("token workspace")

// MaxTokenWorkspaces bounds the workspaces one token is bound to.
const MaxTokenWorkspaces = 64

// ValidateWorkspaces checks a binding for a token of role: only a
// runtime token is bound (a reviewer's routes — the review queue, the
// ledger's sessions, the event stream — are not partitioned by
// workspace), to 1 to MaxTokenWorkspaces distinct workspace ids, each
// 1-256 bytes of valid UTF-8 without surrounding spaces, control
// characters or commas. Nothing is normalized: the ids are kept, and
// compared, byte for byte as the store compares them.
func ValidateWorkspaces(role Role, ws []string) error {
	if ws == nil {
		return nil
	}
	if role != RoleRuntime {
		return fmt.Errorf("%w: only runtime tokens are bound to workspaces, not %s tokens", ErrTokenWorkspace, role)
	}
	if len(ws) == 0 || len(ws) > MaxTokenWorkspaces {
		return fmt.Errorf("%w: want 1 to %d workspaces, got %d", ErrTokenWorkspace, MaxTokenWorkspaces, len(ws))
	}
	seen := map[string]bool{}
	for _, w := range ws {
		if !validWorkspace(w) {
			return fmt.Errorf("%w %q: 1-256 bytes of UTF-8, no surrounding spaces, control characters or commas", ErrTokenWorkspace, w)
		}
		if seen[w] {
			return fmt.Errorf("%w %q: named twice", ErrTokenWorkspace, w)
		}
		seen[w] = true
	}
	return nil
}

func validWorkspace(w string) bool {
	if w == "" || len(w) > 256 || !utf8.ValidString(w) || strings.TrimSpace(w) != w || strings.Contains(w, ",") {
		return false
	}
	for _, r := range w {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// Create makes a token for name with role and returns it with the secret,
// which exists nowhere else: only its hash is stored.
func (t *Tokens) Create(name string, role Role, now time.Time) (Token, string, error) {
	return t.CreateBound(name, role, nil, now)
}

// CreateBound is Create for a token bound to workspaces
// (ValidateWorkspaces); nil binds it to none.
func (t *Tokens) CreateBound(name string, role Role, workspaces []string, now time.Time) (Token, string, error) {
	if !validName(name) {
		return Token{}, "", fmt.Errorf("%w %q: 1-64 characters from [A-Za-z0-9._-]", ErrTokenName, name)
	}
	if !role.Valid() {
		return Token{}, "", fmt.Errorf("unknown role %q (runtime, reviewer or admin)", role)
	}
	if err := ValidateWorkspaces(role, workspaces); err != nil {
		return Token{}, "", err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return Token{}, "", err
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(secret))
	var id [6]byte
	rand.Read(id[:])
	tok := Token{ID: "tok_" + hex.EncodeToString(id[:]), Name: name, Role: role, Hash: hex.EncodeToString(sum[:]), CreatedAt: now.UTC().Truncate(time.Second)}
	if workspaces != nil {
		tok.Workspaces = slices.Clone(workspaces)
	}
	err := t.update(func(f *tokenFile) error {
		for _, o := range f.Tokens {
			if o.Name == name && o.Active() {
				return fmt.Errorf("%w %q is taken by an active token; revoke it first", ErrTokenName, name)
			}
		}
		f.Tokens = append(f.Tokens, tok)
		return nil
	})
	if err != nil {
		return Token{}, "", err
	}
	return tok, secret, nil
}

// List returns every token, revoked ones included, oldest first.
func (t *Tokens) List() ([]Token, error) {
	f, err := readTokens(t.path)
	return f.Tokens, err
}

// ErrNoToken: no active token has that name or id.
var ErrNoToken = errors.New("no such active token")

// Revoke revokes the active token with the given name or id.
func (t *Tokens) Revoke(nameOrID string, now time.Time) (Token, error) {
	var out Token
	err := t.update(func(f *tokenFile) error {
		for i, o := range f.Tokens {
			if (o.Name == nameOrID || o.ID == nameOrID) && o.Active() {
				f.Tokens[i].RevokedAt = now.UTC().Truncate(time.Second)
				out = f.Tokens[i]
				return nil
			}
		}
		return fmt.Errorf("%w %q", ErrNoToken, nameOrID)
	})
	return out, err
}
