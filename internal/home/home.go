// Package home locates docket's state root and the files inside it.
//
// The state root is $DOCKET_HOME, else $XDG_STATE_HOME/docket, else
// ~/.local/state/docket. Everything docket keeps on disk lives below it;
// auditors may copy the ledger and artifacts trees elsewhere and verify them.
package home

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Home is a resolved state root. Its zero value is not usable.
type Home struct {
	Root string
}

// Resolve returns the state root named by the environment. It does not
// create anything.
func Resolve() (Home, error) {
	return resolve(os.Getenv)
}

func resolve(getenv func(string) string) (Home, error) {
	if d := getenv("DOCKET_HOME"); d != "" {
		return At(d)
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return At(filepath.Join(d, "docket"))
	}
	h := getenv("HOME")
	if h == "" {
		return Home{}, errors.New("cannot locate state root: set DOCKET_HOME (HOME is unset)")
	}
	return At(filepath.Join(h, ".local", "state", "docket"))
}

// At returns the Home rooted at dir, made absolute.
func At(dir string) (Home, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Home{}, fmt.Errorf("resolve state root: %w", err)
	}
	return Home{Root: abs}, nil
}

// Key and directory names inside the state root.
const (
	HMACKeyFile       = "hmac.key"
	CheckpointKeyFile = "checkpoint.key"
	VerifierKeyFile   = "checkpoint.vkey"
)

func (h Home) KeysDir() string           { return filepath.Join(h.Root, "keys") }
func (h Home) HMACKeyPath() string       { return filepath.Join(h.KeysDir(), HMACKeyFile) }
func (h Home) CheckpointKeyPath() string { return filepath.Join(h.KeysDir(), CheckpointKeyFile) }
func (h Home) VerifierKeyPath() string   { return filepath.Join(h.KeysDir(), VerifierKeyFile) }
func (h Home) LedgerDir() string         { return filepath.Join(h.Root, "ledger") }
func (h Home) ArtifactsDir() string      { return filepath.Join(h.Root, "artifacts") }
func (h Home) PoliciesDir() string       { return filepath.Join(h.Root, "policies") }
func (h Home) ValidatorsDir() string     { return filepath.Join(h.Root, "validators") }
func (h Home) StorePath() string         { return filepath.Join(h.Root, "store.db") }

// ToolchainsPath is where `docket init` records the toolchains (go,
// python3) validators run, by absolute path and version.
func (h Home) ToolchainsPath() string { return filepath.Join(h.Root, "toolchains.json") }

// CacheDir holds the validators' own build caches (go-build, mod), kept
// apart from the user's, which anything the agent runs can write.
func (h Home) CacheDir() string { return filepath.Join(h.Root, "cache") }

// RunDir holds small mutable bookkeeping that is not evidence: the
// last-session-per-directory index, the gate's consecutive-block counters.
func (h Home) RunDir() string { return filepath.Join(h.Root, "run") }

// GateBlocksPath is the stop gate's count of a session's consecutive
// blocks: of its main agent, or with agent set, of that subagent.
func (h Home) GateBlocksPath(session, agent string) string {
	name := session
	if agent != "" {
		name += ".agent-" + agent
	}
	return filepath.Join(h.RunDir(), "gate", name+".blocks")
}

// LedgerPath is the ledger file of one session.
func (h Home) LedgerPath(session string) string {
	return filepath.Join(h.LedgerDir(), session+".jsonl")
}

// SessionArtifactsDir holds the raw artifacts of one session.
func (h Home) SessionArtifactsDir(session string) string {
	return filepath.Join(h.ArtifactsDir(), session)
}

// Contains reports whether path lies inside the state root. path must be
// absolute and clean for the answer to mean anything.
func (h Home) Contains(path string) bool {
	rel, err := filepath.Rel(h.Root, path)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}

// ValidSessionID reports whether id can name files under the state root:
// 1 to 128 characters from [A-Za-z0-9._-], not starting with a dot.
func ValidSessionID(id string) bool {
	if id == "" || len(id) > 128 || id[0] == '.' {
		return false
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
