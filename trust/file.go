package trust

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gofrs/flock"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// Files under the state root.
const (
	Dir        = "trust"
	StateFile  = "state.json"
	LevelsFile = "levels"
	lockFile   = "lock"
	// MAC domains: a MAC of one file is never valid for the other.
	stateDomain  = "docket-trust-state-v1"
	levelsDomain = "docket-trust-levels-v1" // levels, see summary.go
	// maxFile bounds what a reader reads of either file.
	maxFile = 64 << 20
)

// ErrForged means a trust file's MAC does not verify: it was written by
// someone without the key, or torn. Readers ignore such a file.
var ErrForged = errors.New("trust file MAC does not verify")

// envelope is a trust file: the payload, exactly as MAC'd, and its MAC.
type envelope struct {
	V       int             `json:"v"`
	KeyID   string          `json:"key_id"`
	MAC     string          `json:"mac"`
	Payload json.RawMessage `json:"payload"`
}

func dirOf(h home.Home) string { return filepath.Join(h.Root, Dir) }

func seal(keys *ledger.Keys, domain string, v any) ([]byte, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode trust file: %w", err)
	}
	id, mac := keys.MAC(domain, payload)
	return json.Marshal(envelope{V: 1, KeyID: id, MAC: mac, Payload: payload})
}

func open(keys *ledger.Keys, domain, path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return fmt.Errorf("read trust file: %w", err)
	}
	if len(b) > maxFile {
		return fmt.Errorf("%w: %s is too large", ErrForged, filepath.Base(path))
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil || env.V != 1 {
		return fmt.Errorf("%w: %s is not a trust file", ErrForged, filepath.Base(path))
	}
	if !keys.CheckMAC(domain, env.KeyID, env.Payload, env.MAC) {
		return fmt.Errorf("%w: %s", ErrForged, filepath.Base(path))
	}
	dec := json.NewDecoder(bytes.NewReader(env.Payload))
	return dec.Decode(v)
}

// writeFile replaces path atomically.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write trust file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write trust file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write trust file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write trust file: %w", err)
	}
	return nil
}

// Store reads and writes the trust state under a state root.
type Store struct {
	Home home.Home
	Keys *ledger.Keys
	// LockWait bounds the wait for another writer (default 30 s); a hook
	// sets it short: what it could not record, the next refresh reads
	// from the ledger.
	LockWait time.Duration
}

// lock takes the exclusive trust lock.
func (st *Store) lock() (func(), error) {
	if err := os.MkdirAll(dirOf(st.Home), 0o700); err != nil {
		return nil, fmt.Errorf("create trust folder: %w", err)
	}
	wait := st.LockWait
	if wait <= 0 {
		wait = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	fl := flock.New(filepath.Join(dirOf(st.Home), lockFile))
	ok, err := fl.TryLockContext(ctx, 10*time.Millisecond)
	if err != nil || !ok {
		return nil, fmt.Errorf("lock trust state: another writer holds it (%v)", nonNil(err, ctx.Err()))
	}
	return func() { _ = fl.Unlock() }, nil
}

func nonNil(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Load returns the state; a missing file is an empty state, a forged
// or torn one is an empty state and ErrForged (wrapped).
func (st *Store) Load() (*State, error) {
	s := NewState()
	err := open(st.Keys, stateDomain, filepath.Join(dirOf(st.Home), StateFile), s)
	if errors.Is(err, fs.ErrNotExist) {
		return NewState(), nil
	}
	if err != nil {
		return NewState(), err
	}
	if s.Keys == nil {
		s.Keys = map[string]*KeyState{}
	}
	if s.Scans == nil {
		s.Scans = map[string]*SessionScan{}
	}
	if s.Applied == nil {
		s.Applied = map[string]time.Time{}
	}
	return s, nil
}

// save writes state.json and the summary levels.json.
func (st *Store) save(p *Policy, s *State) error {
	b, err := seal(st.Keys, stateDomain, s)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dirOf(st.Home), StateFile), b); err != nil {
		return err
	}
	return writeFile(filepath.Join(dirOf(st.Home), LevelsFile), s.Summary(p).encode(st.Keys))
}

// Refresh reads what the ledgers gained since the last refresh, applies
// the signals and advances the state to now, then saves it. A forged
// state file is discarded and the state rebuilt from the ledgers. It
// returns the state (also when saving failed).
func (st *Store) Refresh(p *Policy, now time.Time) (*State, error) {
	unlock, err := st.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	s, lerr := st.Load()
	if lerr != nil && !errors.Is(lerr, ErrForged) {
		return nil, lerr
	}
	l, err := ledger.Open(st.Home)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	sessions, err := ledger.Sessions(st.Home)
	if err != nil {
		return nil, err
	}
	s.Warnings = nil
	if lerr != nil {
		s.Warnings = append(s.Warnings, "the trust state did not verify and was rebuilt from the ledgers")
	}
	var sigs []Signal
	for _, sess := range sessions {
		fi, err := os.Stat(st.Home.LedgerPath(sess))
		if err != nil {
			continue
		}
		sc := s.Scans[sess]
		if sc == nil {
			sc = &SessionScan{}
		}
		if sc.Size == fi.Size() {
			continue
		}
		entries, err := readSince(l, sess, sc)
		if err != nil {
			s.Warnings = append(s.Warnings, fmt.Sprintf("session %s: %v (its new entries are not rated)", sess, err))
			continue
		}
		sigs = append(sigs, Scan(p, sess, sc, entries)...)
		sc.Size = fi.Size()
		s.Scans[sess] = sc
	}
	s.Advance(p, sigs, now)
	return s, st.save(p, s)
}

// Record applies signals at once (the judge records a critical
// violation without waiting for the next refresh) and saves the state.
func (st *Store) Record(p *Policy, sigs []Signal, now time.Time) error {
	unlock, err := st.lock()
	if err != nil {
		return err
	}
	defer unlock()
	s, err := st.Load()
	if err != nil && !errors.Is(err, ErrForged) {
		return err
	}
	s.Advance(p, sigs, now)
	return st.save(p, s)
}

// readSince returns the session's entries from sc.Seq on. A first scan
// verifies the whole ledger; later ones read only what was appended
// since the last scan (from byte sc.Size, ledger.ReadFrom: hash-chained
// to the MAC'd verified-prefix head), so a refresh costs the same on a
// ledger of 10 or 10,000 entries.
func readSince(l *ledger.Ledger, session string, sc *SessionScan) ([]*ledger.Entry, error) {
	if sc.Seq == 0 {
		return l.ReadVerified(session)
	}
	return l.ReadFrom(session, sc.Size, sc.Seq)
}

func itoa(n int) string     { return strconv.Itoa(n) }
func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }
