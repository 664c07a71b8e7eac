package validators

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"time"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/ledger"
)

// Appender appends one entry to a session's ledger. On error nothing was
// appended. *ledger.Ledger implements it.
type Appender interface {
	Append(session string, r ledger.Record) (*ledger.Entry, error)
}

// EntryReader reads a session's ledger. *ledger.Ledger implements it.
type EntryReader interface {
	// ReadVerified returns the session's entries in seq order, only when
	// the whole ledger verifies; a session without a ledger yields no
	// entries and no error.
	ReadVerified(session string) ([]*ledger.Entry, error)
	// OpenArtifact opens the named artifact of e; a missing artifact is an
	// error wrapping fs.ErrNotExist.
	OpenArtifact(e *ledger.Entry, name string) (ledger.ReadSeekCloser, error)
}

// Ledger is what the runner needs from the evidence log.
type Ledger interface {
	Appender
	EntryReader
}

var _ Ledger = (*ledger.Ledger)(nil)

// MemLedger is an in-memory Ledger for tests. Its zero value is an empty
// ledger. It keeps entries and artifacts but neither chains nor signs.
type MemLedger struct {
	mu        sync.Mutex
	sessions  map[string][]*ledger.Entry
	artifacts map[*ledger.Entry]map[string][]byte
	// Err, when set, is returned by every method (a broken ledger).
	Err error
}

// Append records r. Args and Body are canonicalized as the real ledger
// does; artifacts are read to EOF.
func (m *MemLedger) Append(session string, r ledger.Record) (*ledger.Entry, error) {
	if m.Err != nil {
		return nil, m.Err
	}
	e := &ledger.Entry{V: ledger.Version, Session: session, Time: time.Now().UTC().Format(time.RFC3339Nano),
		Kind: r.Kind, Runtime: r.Runtime, Event: r.Event, Tool: r.Tool, ToolUseID: r.ToolUseID, AgentID: r.AgentID}
	if r.Args != nil {
		d, err := canonjson.Digest(r.Args)
		if err != nil {
			return nil, fmt.Errorf("append: args: %w", err)
		}
		e.Args = d
	}
	if r.Body != nil {
		b, err := canonjson.Marshal(r.Body)
		if err != nil {
			return nil, fmt.Errorf("append: body: %w", err)
		}
		e.Body = b
	}
	files := map[string][]byte{}
	for _, a := range r.Artifacts {
		if _, dup := files[a.Name]; dup || a.Name == "" {
			return nil, fmt.Errorf("append: bad or duplicate artifact name %q", a.Name)
		}
		b, err := io.ReadAll(a.Data)
		if err != nil {
			return nil, fmt.Errorf("append: artifact %s: %w", a.Name, err)
		}
		files[a.Name] = b
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = map[string][]*ledger.Entry{}
		m.artifacts = map[*ledger.Entry]map[string][]byte{}
	}
	e.Seq = uint64(len(m.sessions[session]))
	if len(files) > 0 {
		e.Manifest = "mem"
	}
	m.sessions[session] = append(m.sessions[session], e)
	m.artifacts[e] = files
	c := *e
	return &c, nil
}

// ReadVerified returns copies of the session's entries.
func (m *MemLedger) ReadVerified(session string) ([]*ledger.Entry, error) {
	if m.Err != nil {
		return nil, m.Err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*ledger.Entry
	for _, e := range m.sessions[session] {
		c := *e
		out = append(out, &c)
	}
	return out, nil
}

// OpenArtifact opens an artifact of an entry returned by this ledger.
func (m *MemLedger) OpenArtifact(e *ledger.Entry, name string) (ledger.ReadSeekCloser, error) {
	if m.Err != nil {
		return nil, m.Err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, orig := range m.sessions[e.Session] {
		if orig.Seq == e.Seq {
			if b, ok := m.artifacts[orig][name]; ok {
				return nopCloser{bytes.NewReader(b)}, nil
			}
		}
	}
	return nil, fmt.Errorf("artifact %s: %w", name, fs.ErrNotExist)
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// bodyOf decodes an entry's body into a map; a missing or malformed body
// yields nil.
func bodyOf(e *ledger.Entry) map[string]any {
	if len(e.Body) == 0 {
		return nil
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(e.Body))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// maxInputJSON bounds how much of a tool call's input.json is read.
const maxInputJSON = 1 << 20

// toolInput reads e's input.json artifact (the tool_input the hook
// stored); absent or unreadable input yields nil.
func toolInput(l EntryReader, e *ledger.Entry) ([]byte, error) {
	f, err := l.OpenArtifact(e, "input.json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxInputJSON))
}
