// Package policies loads docket's policy files: the claim lexicon
// (claims.yaml), claim binding (claim_binding.yaml), the tools registry
// (tools.yaml) and the judge configuration (judges.md). Each has an
// embedded default; a file of the same name under $DOCKET_HOME/policies
// replaces it. policy_version is a hash over every source in force.
package policies

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/regular"
)

//go:embed defaults
var defaults embed.FS

// MaxPolicySize bounds a policy file; larger ones are a policy error.
const MaxPolicySize = 4 << 20

// Source is one policy file's bytes and where they came from.
type Source struct {
	Name   string // file name, e.g. "claims.yaml"
	Origin string // absolute path, or "embedded:<name>"
	Data   []byte
}

// Error is a policy error: a file that exists but cannot be used. It is
// never silently replaced by a default.
type Error struct {
	Origin string
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("policy %s: %v", e.Origin, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Load returns the named policy: $DOCKET_HOME/policies/<name> when it
// exists, else the embedded default. Invalid UTF-8 or an oversized file is
// an *Error.
func Load(h home.Home, name string) (Source, error) {
	p := filepath.Join(h.PoliciesDir(), name)
	data, err := readLimited(p)
	switch {
	case err == nil:
		return check(Source{Name: name, Origin: p, Data: data})
	case !errors.Is(err, fs.ErrNotExist):
		return Source{}, &Error{Origin: p, Err: err}
	}
	data, err = Default(name)
	if err != nil {
		return Source{}, err
	}
	return check(Source{Name: name, Origin: "embedded:" + name, Data: data})
}

// LoadFile reads a policy from an explicit path (a delegate or test file).
func LoadFile(path string) (Source, error) {
	data, err := readLimited(path)
	if err != nil {
		return Source{}, &Error{Origin: path, Err: err}
	}
	return check(Source{Name: filepath.Base(path), Origin: path, Data: data})
}

// Default returns the embedded default policy of that name.
func Default(name string) ([]byte, error) {
	b, err := defaults.ReadFile("defaults/" + name)
	if err != nil {
		return nil, fmt.Errorf("no default policy %q", name)
	}
	return b, nil
}

// Names lists the embedded default policies, sorted.
func Names() []string {
	ents, _ := defaults.ReadDir("defaults")
	var names []string
	for _, e := range ents {
		if !e.IsDir() && e.Name() != "README.md" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// Version is the policy_version of a set of sources: "pv1:" and the
// SHA-256 over each source's name and bytes, in name order, each
// length-prefixed. Any change to any source changes it.
func Version(srcs ...Source) string {
	sorted := append([]Source(nil), srcs...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Name != sorted[j].Name {
			return sorted[i].Name < sorted[j].Name
		}
		return sorted[i].Origin < sorted[j].Origin
	})
	h := sha256.New()
	for _, s := range sorted {
		for _, part := range [][]byte{[]byte(s.Name), s.Data} {
			h.Write([]byte(strconv.Itoa(len(part))))
			h.Write([]byte{':'})
			h.Write(part)
		}
	}
	return "pv1:" + hex.EncodeToString(h.Sum(nil))[:32]
}

func readLimited(path string) ([]byte, error) {
	f, err := regular.Open(path) // a delegate in the agent's tree may be a FIFO
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxPolicySize {
		return nil, fmt.Errorf("larger than %d bytes", MaxPolicySize)
	}
	buf := make([]byte, st.Size())
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

func check(s Source) (Source, error) {
	if !utf8.Valid(s.Data) {
		return Source{}, &Error{Origin: s.Origin, Err: errors.New("invalid UTF-8")}
	}
	return s, nil
}

// computeDefaultsDigest is the SHA-256 over the embedded defaults, each
// name, length and bytes in name order (see knownDefaultsDigest).
func computeDefaultsDigest() string {
	s := sha256.New()
	for _, n := range Names() {
		b, _ := Default(n)
		fmt.Fprintf(s, "%s %d\n", n, len(b))
		s.Write(b)
	}
	return hex.EncodeToString(s.Sum(nil))
}
