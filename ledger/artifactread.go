package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
)

// ArtifactFiles reads small artifacts of one session's entries through
// one open pack: the gate looks at the input of each call after a pass,
// and opening the pack for each costs more than reading them. Each file
// is checked as OpenArtifact checks it (the manifest against the entry's
// digest, the file against the manifest's) before it is returned.
type ArtifactFiles struct {
	l       *Ledger
	session string
	once    sync.Once
	p       *packReader
	err     error
}

// ArtifactFiles returns a reader of session's artifacts; the pack is
// opened on first use. Close it when done.
func (l *Ledger) ArtifactFiles(session string) *ArtifactFiles {
	return &ArtifactFiles{l: l, session: session}
}

// Session is the session whose artifacts a reads.
func (a *ArtifactFiles) Session() string { return a.session }

// ReadFile returns the named artifact of e, at most max bytes: a larger
// file is an error.
func (a *ArtifactFiles) ReadFile(e *Entry, name string, max int64) ([]byte, error) {
	if e.Session != a.session {
		return nil, fmt.Errorf("artifact %s: entry of session %q read as %q", name, e.Session, a.session)
	}
	if e.Manifest == "" {
		return nil, fmt.Errorf("artifact %s: %w", name, fs.ErrNotExist)
	}
	a.once.Do(func() { a.p, a.err = openPackReader(a.l.home.SessionArtifactsDir(a.session)) })
	if a.err != nil {
		return nil, fmt.Errorf("artifact %s: %w", name, a.err)
	}
	b, err := readBundle(a.p.f, a.p.size, e.Artifacts, e.Manifest)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", name, err)
	}
	for i, mf := range b.manifest.Files {
		if mf.Name != name {
			continue
		}
		if mf.Size > max {
			return nil, fmt.Errorf("artifact %s: %d bytes, over %d", name, mf.Size, max)
		}
		data := make([]byte, mf.Size)
		if _, err := a.p.f.ReadAt(data, b.offsets[i]); err != nil {
			return nil, fmt.Errorf("artifact %s: %w", name, err)
		}
		if !b.fileMatches(i, data) {
			return nil, fmt.Errorf("artifact %s: %w: digest mismatch", name, ErrTampered)
		}
		return data, nil
	}
	return nil, fmt.Errorf("artifact %s: %w", name, fs.ErrNotExist)
}

// Close closes the pack if it was opened; later reads fail.
func (a *ArtifactFiles) Close() error {
	closed := errors.New("artifact reader closed")
	a.once.Do(func() { a.err = closed })
	if a.p == nil {
		return nil
	}
	err := a.p.f.Close()
	a.p, a.err = nil, closed
	return err
}
