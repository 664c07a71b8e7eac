package judge

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/regular"
)

// Side-channel binding statuses, recorded on every proposal.
const (
	// SideChannelBound: exactly one pending statement matched the call's
	// tool name and arguments hash; its authorization and evidence apply.
	SideChannelBound = "bound"
	// SideChannelMissing: the session has no pending statement.
	SideChannelMissing = "missing"
	// SideChannelUnbound: the session has pending statements, none for
	// this call (wrong tool or arguments). Nothing is applied.
	SideChannelUnbound = "unbound"
	// SideChannelDuplicate: more than one statement matched. None is
	// applied and all are consumed.
	SideChannelDuplicate = "duplicate"
)

// StatementTTL is how long a pending statement waits for its call.
const StatementTTL = 10 * time.Minute

// maxStatement bounds a statement file.
const maxStatement = 64 << 10

// Statement is the actor's side-channel statement about its next call,
// written by `docket propose`. It can only add authorization and
// evidence; every framework-derived field is ignored.
type Statement struct {
	Session       string   `json:"session"`
	Tool          string   `json:"tool"`
	ArgsDigest    string   `json:"args_digest"`
	Authorization string   `json:"authorization,omitempty"`
	Evidence      []string `json:"evidence,omitempty"`
	Consequence   string   `json:"expected_consequence,omitempty"`
	Rollback      string   `json:"rollback,omitempty"`
	Created       string   `json:"created"`
}

func statementDir(h home.Home, session string) string {
	return filepath.Join(h.RunDir(), "propose", session)
}

// WriteStatement stores st as a pending statement for its session and
// returns its path. The file is created with O_EXCL, mode 0600.
func WriteStatement(h home.Home, st Statement) (string, error) {
	if !home.ValidSessionID(st.Session) {
		return "", fmt.Errorf("write statement: invalid session id %q", st.Session)
	}
	if st.Tool == "" || !strings.HasPrefix(st.ArgsDigest, "sha256:") || len(st.ArgsDigest) != len("sha256:")+64 {
		return "", errors.New("write statement: need a tool name and a sha256:<hex> arguments digest")
	}
	if st.Created == "" {
		st.Created = time.Now().UTC().Format(time.RFC3339Nano)
	}
	dir := statementDir(h, st.Session)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("write statement: %w", err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("write statement: %w", err)
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	p := filepath.Join(dir, fmt.Sprintf("%d-%s.json", time.Now().UnixNano(), hex.EncodeToString(rnd[:])))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write statement: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return "", fmt.Errorf("write statement: %w", err)
	}
	return p, f.Close()
}

// StatementBinding is the result of binding pending statements to one call.
type StatementBinding struct {
	Status    string
	Statement *Statement // set only when Status is bound
	// Stale counts statements dropped for age or malformation.
	Stale int
}

// BindStatement finds the session's pending statements for the call
// (tool, argsDigest), consumes the matching ones and reports the status.
// It never guesses: a statement for other arguments is not applied.
func BindStatement(h home.Home, session, tool, argsDigest string, now time.Time) (StatementBinding, error) {
	if !home.ValidSessionID(session) {
		return StatementBinding{Status: SideChannelMissing}, nil
	}
	dir := statementDir(h, session)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return StatementBinding{Status: SideChannelMissing}, nil
	}
	if err != nil {
		return StatementBinding{Status: SideChannelMissing}, fmt.Errorf("bind statement: %w", err)
	}
	var b StatementBinding
	var matches []string
	var matched []Statement
	pending := 0
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		st, err := readStatement(p)
		if err != nil || st.Session != session {
			os.Remove(p)
			b.Stale++
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, st.Created)
		if err != nil || now.Sub(t) > StatementTTL || t.Sub(now) > time.Minute {
			os.Remove(p)
			b.Stale++
			continue
		}
		pending++
		if st.Tool == tool && st.ArgsDigest == argsDigest {
			matches = append(matches, p)
			matched = append(matched, st)
		}
	}
	for _, p := range matches {
		os.Remove(p)
	}
	switch {
	case len(matches) == 1:
		b.Status, b.Statement = SideChannelBound, &matched[0]
	case len(matches) > 1:
		b.Status = SideChannelDuplicate
	case pending > 0:
		b.Status = SideChannelUnbound
	default:
		b.Status = SideChannelMissing
	}
	return b, nil
}

func readStatement(p string) (Statement, error) {
	// not a FIFO or a device either: the judge would wait on it
	data, err := regular.ReadFile(regular.OpenNoFollow, p, maxStatement)
	if err != nil {
		return Statement{}, err
	}
	var st Statement
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		return Statement{}, err
	}
	return st, nil
}

// ApplyStatement copies a bound statement's actor fields into p. Only
// authorization, evidence, expected consequence and rollback plan can be
// set; everything framework-derived stays as assembled.
func ApplyStatement(p *ActionProposal, b StatementBinding) {
	p.Binding.SideChannel = b.Status
	if b.Status != SideChannelBound || b.Statement == nil {
		return
	}
	st := b.Statement
	if st.Authorization != "" {
		a := st.Authorization
		p.Authorization.ClaimedUserAuthorization = &a
		p.Authorization.UserAuthorizationRefs = append(p.Authorization.UserAuthorizationRefs, AuthRef{Kind: "user_message", QuoteOrSummary: Truncate(a, 1000)})
	}
	for _, e := range st.Evidence {
		kind := "file"
		if strings.Contains(e, "://") {
			kind = "web"
		}
		uri := e
		p.Evidence.SourceRefs = append(p.Evidence.SourceRefs, SourceRef{Kind: kind, URI: &uri, Summary: Truncate(e, 300)})
	}
	if st.Consequence != "" {
		p.ExpectedConsequence.Summary = Truncate(st.Consequence, 1000)
	}
	if st.Rollback != "" {
		r := Truncate(st.Rollback, 1000)
		p.Rollback.RollbackPlan = &r
	}
}
