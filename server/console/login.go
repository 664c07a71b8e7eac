package console

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/server"
)

// DefaultLoginTTL is how long a login link stays valid.
const DefaultLoginTTL = 5 * time.Minute

// LoginPath is the console path a login link points at.
const LoginPath = "/login"

// ticketsFile holds the pending one-time login links of a state root:
// the SHA-256 of each, never the link's secret. It lives in the keys
// directory, which the judge forbids agents to read.
func ticketsFile(h home.Home) string { return filepath.Join(h.KeysDir(), "console-logins.json") }

type ticket struct {
	Hash      string      `json:"sha256"`
	Name      string      `json:"name"`
	Role      server.Role `json:"role"`
	ExpiresAt time.Time   `json:"expires_at"`
}

type ticketFile struct {
	Version int      `json:"version"`
	Tickets []ticket `json:"tickets"`
	// Revoked ends every console session of a name (AllNames: of
	// everyone) begun at or before the time given.
	Revoked map[string]time.Time `json:"revoked,omitempty"`
}

// AllNames, given to RevokeLogins, ends every console session.
const AllNames = "*"

// RevokeLogins ends the console sessions of name (AllNames: everyone's)
// begun up to now and drops the name's unused login links. A running
// console sees it on the session's next request.
func RevokeLogins(h home.Home, name string, now time.Time) error {
	if name == "" {
		return errors.New("revoke logins: no name")
	}
	return updateTickets(h, now, func(f *ticketFile) {
		if f.Revoked == nil {
			f.Revoked = map[string]time.Time{}
		}
		f.Revoked[name] = now.UTC()
		live := f.Tickets[:0]
		for _, t := range f.Tickets {
			if name != AllNames && t.Name != name {
				live = append(live, t)
			}
		}
		f.Tickets = live
	})
}

// revocations holds the ticket file's revocations, decoded again only
// when the file's bytes change (it is a few hundred bytes, read on each
// request a person makes).
type revocations struct {
	mu   sync.Mutex
	last []byte
	m    map[string]time.Time
	err  error
}

// revoked reports whether a session of name begun at started has been
// revoked. A ticket file that cannot be read revokes every session.
func (r *revocations) revoked(h home.Home, name string, started time.Time) bool {
	b, err := os.ReadFile(ticketsFile(h))
	if errors.Is(err, fs.ErrNotExist) {
		b, err = nil, nil
	}
	if err != nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil && r.err == nil || !bytes.Equal(b, r.last) {
		var f ticketFile
		r.last, r.m, r.err = b, nil, nil
		if b != nil {
			r.err = json.Unmarshal(b, &f)
		}
		r.m = f.Revoked
		if r.m == nil {
			r.m = map[string]time.Time{}
		}
	}
	if r.err != nil {
		return true
	}
	for _, k := range []string{name, AllNames} {
		if at, ok := r.m[k]; ok && !started.After(at) {
			return true
		}
	}
	return false
}

func hashSecret(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// IssueLogin records a one-time login for name with role, valid for ttl,
// and returns its secret (the t= of the login URL). Whoever can write the
// state root's keys directory can log in: the same trust as 'docket
// token create'.
func IssueLogin(h home.Home, name string, role server.Role, ttl time.Duration, now time.Time) (string, error) {
	if role != server.RoleReviewer && role != server.RoleAdmin {
		return "", fmt.Errorf("issue login: role %q: the console is for reviewer or admin", role)
	}
	if ttl <= 0 || ttl > time.Hour {
		return "", fmt.Errorf("issue login: ttl %s: want more than 0 and at most 1h", ttl)
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("issue login: %w", err)
	}
	secret := base64.RawURLEncoding.EncodeToString(raw[:])
	err := updateTickets(h, now, func(f *ticketFile) {
		f.Tickets = append(f.Tickets, ticket{Hash: hashSecret(secret), Name: name, Role: role, ExpiresAt: now.Add(ttl).UTC()})
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}

// ErrBadLogin is a login link that is unknown, used or expired.
var ErrBadLogin = errors.New("login link unknown, already used or expired")

// consumeLogin spends a login secret: it returns who it names and
// removes it, so a second use fails.
func consumeLogin(h home.Home, secret string, now time.Time) (server.Principal, error) {
	if len(secret) < 20 || len(secret) > 100 {
		return server.Principal{}, ErrBadLogin
	}
	want := hashSecret(secret)
	var who server.Principal
	found := false
	err := updateTickets(h, now, func(f *ticketFile) {
		for i, t := range f.Tickets {
			if t.Hash == want {
				who, found = server.Principal{Name: t.Name, Role: t.Role}, true
				f.Tickets = append(f.Tickets[:i], f.Tickets[i+1:]...)
				return
			}
		}
	})
	if err != nil {
		return server.Principal{}, err
	}
	if !found {
		return server.Principal{}, ErrBadLogin
	}
	return who, nil
}

// updateTickets runs fn on the ticket file under an exclusive lock after
// dropping expired tickets, and writes it back atomically (mode 0600).
func updateTickets(h home.Home, now time.Time, fn func(*ticketFile)) error {
	path := ticketsFile(h)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write login: %w", err)
	}
	lk := flock.New(path + ".lock")
	if err := lk.Lock(); err != nil {
		return fmt.Errorf("lock logins: %w", err)
	}
	defer lk.Unlock()
	f := ticketFile{Version: 1}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read logins: %w", err)
	}
	if err == nil {
		if json.Unmarshal(b, &f) != nil || f.Version != 1 {
			f = ticketFile{Version: 1} // a damaged file only loses pending links
		}
	}
	live := f.Tickets[:0]
	for _, t := range f.Tickets {
		if now.Before(t.ExpiresAt) {
			live = append(live, t)
		}
	}
	f.Tickets = live
	fn(&f)
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := home.WriteFileAtomic(path, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("write logins: %w", err)
	}
	return nil
}
