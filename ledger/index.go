package ledger

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/docket/docket/internal/home"
)

// The session index, ledger/.sessions, lists every session that ever had
// a ledger, one line each, in the order they were created:
//
//	<session> <key_id> <mac>
//
// where mac = hex(HMAC-SHA256(K, "docket-session-index-v1\n" || decimal(i)
// || "\n" || session || "\n" || mac of line i-1)), 64 zeros before line
// 0. Deleting a session's files, or a line, is then visible to `docket
// verify --all` (see Inventory). Its name starts with a dot, which no
// session id may, so it never collides with a session's files.

const (
	sessionIndexFile = ".sessions"
	sessionIndexLock = ".sessions.lock"
	maxIndexBytes    = 64 << 20
)

func indexPath(h home.Home) string { return filepath.Join(h.LedgerDir(), sessionIndexFile) }

func indexMAC(key []byte, i int, session, prev string) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "docket-session-index-v1\n%d\n%s\n%s", i, session, prev)
	return hex.EncodeToString(m.Sum(nil))
}

// indexLine is one parsed line of the index.
type indexLine struct{ session, keyID, mac string }

func readIndexLines(path string) ([]indexLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []indexLine
	sc := bufio.NewScanner(io.LimitReader(f, maxIndexBytes))
	for sc.Scan() {
		parts := strings.Split(sc.Text(), " ")
		if len(parts) != 3 || !home.ValidSessionID(parts[0]) || len(parts[2]) != 64 {
			return out, fmt.Errorf("line %d malformed", len(out)+1)
		}
		out = append(out, indexLine{parts[0], parts[1], parts[2]})
	}
	return out, sc.Err()
}

// registerSession adds session to the index unless it is listed. The
// caller holds the session's lock; the index has its own.
func (l *Ledger) registerSession(session string) error {
	if err := os.MkdirAll(l.home.LedgerDir(), 0o700); err != nil {
		return err
	}
	unlock, err := lockFile(filepath.Join(l.home.LedgerDir(), sessionIndexLock), LockTimeout)
	if err != nil {
		return fmt.Errorf("lock session index: %w", err)
	}
	defer unlock()
	path := indexPath(l.home)
	lines, err := readIndexLines(path)
	if err != nil && !isNotExist(err) {
		return fmt.Errorf("read session index: %w", err)
	}
	prev := zeroHash
	for _, ln := range lines {
		if ln.session == session {
			return nil
		}
		prev = ln.mac
	}
	line := fmt.Sprintf("%s %s %s\n", session, l.keys.hmacID, indexMAC(l.keys.hmacKey, len(lines), session, prev))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("write session index: %w", err)
	}
	_, err = f.WriteString(line)
	if err == nil && !l.testingOnlyNoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write session index: %w", err)
	}
	return nil
}

// indexExisting registers every session with a ledger file, for state
// roots written before the index existed (Init calls it).
func (l *Ledger) indexExisting() error {
	sessions, err := Sessions(l.home)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		if err := l.registerSession(s); err != nil {
			return err
		}
	}
	return nil
}

// SessionFiles says which of a session's files exist.
type SessionFiles struct {
	Session string   `json:"session"`
	Ledger  bool     `json:"ledger"`
	Head    bool     `json:"head"`
	Pack    bool     `json:"pack"`
	Indexed bool     `json:"indexed"`
	Seen    []string `json:"seen_in,omitempty"` // where else the session was named
}

// Inventory is every session a state root knows of, from the signed
// index and from the files and directories that name sessions.
type Inventory struct {
	Sessions []SessionFiles `json:"sessions"`
	// IndexProblem is non-empty when the index is missing or does not
	// verify; with no HMAC key its MACs are not checked.
	IndexProblem string `json:"index_problem,omitempty"`
	IndexChecked bool   `json:"index_checked"`
}

// Findings lists, one line each, what is wrong: sessions whose ledger is
// gone while something else still names them, sessions the index does not
// list, and index problems.
func (inv *Inventory) Findings() []Finding {
	var out []Finding
	if inv.IndexProblem != "" {
		out = append(out, Finding{Reason: "session index: " + inv.IndexProblem})
	}
	for _, s := range inv.Sessions {
		var where []string
		if s.Indexed {
			where = append(where, "the signed session index")
		}
		if s.Head {
			where = append(where, "its head")
		}
		if s.Pack {
			where = append(where, "its artifact pack")
		}
		where = append(where, s.Seen...)
		switch {
		case !s.Ledger:
			out = append(out, Finding{Session: s.Session, Reason: "ledger missing: deleted, yet named by " + strings.Join(where, ", ")})
		case !s.Indexed && inv.IndexProblem == "" && inv.IndexChecked:
			out = append(out, Finding{Session: s.Session, Reason: "not in the signed session index (a ledger docket did not create, or an index line was removed)"})
		}
	}
	return out
}

// Finding is one problem Inventory found.
type Finding struct {
	Session string `json:"session,omitempty"`
	Reason  string `json:"reason"`
}

// TakeInventory lists the sessions under h. keys may be nil (an auditor
// without the HMAC key): the index's lines are then read but not checked.
func TakeInventory(h home.Home, keys *Keys) (*Inventory, error) {
	inv := &Inventory{IndexChecked: keys != nil}
	byName := map[string]*SessionFiles{}
	get := func(s string) *SessionFiles {
		if byName[s] == nil {
			byName[s] = &SessionFiles{Session: s}
		}
		return byName[s]
	}
	ents, err := os.ReadDir(h.LedgerDir())
	if err != nil && !isNotExist(err) {
		return nil, fmt.Errorf("list ledgers: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if s, ok := strings.CutSuffix(name, ".jsonl"); ok && home.ValidSessionID(s) {
			get(s).Ledger = true
		}
		if s, ok := strings.CutSuffix(name, ".head"); ok && home.ValidSessionID(s) {
			get(s).Head = true
		}
		if s, ok := strings.CutSuffix(name, ".tree"); ok && home.ValidSessionID(s) {
			f := get(s)
			f.Seen = append(f.Seen, "its tree hashes")
		}
		if s, ok := cutStateSuffix(name); ok && home.ValidSessionID(s) {
			f := get(s)
			f.Seen = append(f.Seen, "its verified-prefix state")
		}
	}
	arts, err := os.ReadDir(h.ArtifactsDir())
	if err != nil && !isNotExist(err) {
		return nil, fmt.Errorf("list artifacts: %w", err)
	}
	for _, e := range arts {
		if !e.IsDir() || !home.ValidSessionID(e.Name()) {
			continue
		}
		f := get(e.Name())
		if _, err := os.Stat(filepath.Join(h.SessionArtifactsDir(e.Name()), PackName)); err == nil {
			f.Pack = true
		} else {
			f.Seen = append(f.Seen, "its artifact directory")
		}
	}
	cwdDir := filepath.Join(h.RunDir(), "cwd")
	if runs, err := os.ReadDir(cwdDir); err == nil {
		for _, e := range runs {
			b, err := os.ReadFile(filepath.Join(cwdDir, e.Name()))
			if s := strings.TrimSpace(string(b)); err == nil && home.ValidSessionID(s) {
				f := get(s)
				f.Seen = append(f.Seen, "run/cwd/"+e.Name())
			}
		}
	}
	lines, err := readIndexLines(indexPath(h))
	switch {
	case isNotExist(err):
		if len(byName) > 0 {
			inv.IndexProblem = "missing (ledger/.sessions was deleted; 'docket init' rebuilds it from the ledgers that remain)"
		}
	case err != nil:
		inv.IndexProblem = err.Error()
	}
	prev := zeroHash
	for i, ln := range lines {
		if keys != nil && inv.IndexProblem == "" {
			key, ok := keys.hmacKeyFor(ln.keyID)
			if !ok || !hmac.Equal([]byte(indexMAC(key, i, ln.session, prev)), []byte(ln.mac)) {
				inv.IndexProblem = fmt.Sprintf("line %d (%s) does not verify: a line was removed, reordered or edited", i+1, ln.session)
			}
		}
		prev = ln.mac
		get(ln.session).Indexed = true
	}
	for _, f := range byName {
		inv.Sessions = append(inv.Sessions, *f)
	}
	sort.Slice(inv.Sessions, func(i, j int) bool { return inv.Sessions[i].Session < inv.Sessions[j].Session })
	return inv, nil
}

// stateSuffix names a session's verified-prefix state file; earlier
// versions of docket kept a v1 state in S.vstate (legacyStateSuffix),
// which they still read and write beside it.
const (
	stateSuffix       = ".vstate2"
	legacyStateSuffix = ".vstate"
)

func cutStateSuffix(name string) (string, bool) {
	if s, ok := strings.CutSuffix(name, stateSuffix); ok {
		return s, true
	}
	return strings.CutSuffix(name, legacyStateSuffix)
}
