package eventcontract

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// RawBody is the body of a runtime_event entry. The envelope itself is the
// entry's envelope.json artifact; the body says what docket read from it.
type RawBody struct {
	ContractName    string `json:"contract_name"`
	ContractVersion string `json:"contract_version"`
	EnvelopeID      string `json:"envelope_id"`
	EventID         string `json:"event_id"`
	EventKind       string `json:"event_kind"`
	SessionID       string `json:"session_id"`
	// Form is the input form the envelope arrived in.
	Form string `json:"form"`
	// Adapted is set when docket composed the envelope.
	Adapted bool `json:"adapted,omitempty"`
	// Digest is "sha256:<hex>" of the envelope's canonical JSON.
	Digest string `json:"digest"`
	// Generated maps each field docket generated to its value.
	Generated map[string]string `json:"generated,omitempty"`
	// SourceDigest is "sha256:<hex>" of the document the envelope was
	// adapted from; the first entry that needs it holds it as source.json.
	SourceDigest string `json:"source_digest,omitempty"`
}

// ProjectedFeedback is a session_feedback event projected into a feedback
// record, with lineage to the contract and the source envelope and event.
// It is the body of a runtime_projection entry.
type ProjectedFeedback struct {
	RecordID         string `json:"record_id"`
	ContractName     string `json:"contract_name"`
	ContractVersion  string `json:"contract_version"`
	SourceEnvelopeID string `json:"source_envelope_id"`
	SourceEventID    string `json:"source_event_id"`
	ProjectedAt      string `json:"projected_at"`
	// SourceEntry is the runtime_event entry: "ledger:SESSION#SEQ".
	SourceEntry         string   `json:"source_entry"`
	SessionID           string   `json:"session_id"`
	Task                string   `json:"task"`
	Status              string   `json:"status"`
	Score               float64  `json:"score"`
	Comment             string   `json:"comment,omitempty"`
	OccurredAt          string   `json:"occurred_at"`
	SelectedSkillIDs    []string `json:"selected_skill_ids,omitempty"`
	MissingCapabilities []string `json:"missing_capabilities,omitempty"`
	MemoryID            string   `json:"memory_id,omitempty"`
	Workspace           string   `json:"workspace_id,omitempty"`
}

// StoredEnvelope is one imported envelope read back from the ledger.
type StoredEnvelope struct {
	Entry *ledger.Entry
	Body  RawBody
	// Raw is the envelope.json artifact, byte for byte.
	Raw []byte
	// Env is Raw with the generated fields filled in.
	Env Envelope
	// Projection and ProjectionEntry are set once the envelope was
	// projected (session_feedback only).
	Projection      *ProjectedFeedback
	ProjectionEntry *ledger.Entry
}

// Session is everything imported for one runtime session.
type Session struct {
	SessionID     string
	LedgerSession string
	Envelopes     []*StoredEnvelope
	// Sources holds each source document by its digest.
	Sources map[string][]byte
}

// Find returns the stored envelope with the id, or nil.
func (s *Session) Find(envelopeID string) *StoredEnvelope {
	for _, e := range s.Envelopes {
		if e.Body.EnvelopeID == envelopeID {
			return e
		}
	}
	return nil
}

func (s *Session) findEvent(eventID string) *StoredEnvelope {
	for _, e := range s.Envelopes {
		if e.Body.EventID == eventID {
			return e
		}
	}
	return nil
}

// LedgerSession returns the ledger session a runtime session id is stored
// under: the id itself when it can name a file, else "oc-" + its safe
// characters + "-" + 16 hex digits of its SHA-256 (so "agent:main:main"
// is "oc-agent-main-main-…").
func LedgerSession(sessionID string) string {
	if home.ValidSessionID(sessionID) {
		return sessionID
	}
	var b strings.Builder
	for _, c := range sessionID {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
		if b.Len() >= 64 {
			break
		}
	}
	sum := sha256.Sum256([]byte(sessionID))
	return "oc-" + strings.Trim(b.String(), "-.") + "-" + hex.EncodeToString(sum[:8])
}

// maxArtifact bounds what is read back of one artifact.
const maxArtifact = MaxInput + 1

// Load reads a runtime session back from its verified ledger. A session
// never imported has no envelopes and no error.
func Load(l *ledger.Ledger, sessionID string) (*Session, error) {
	s := &Session{SessionID: sessionID, LedgerSession: LedgerSession(sessionID), Sources: map[string][]byte{}}
	entries, err := l.ReadVerified(s.LedgerSession)
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	byEnv := map[string]*StoredEnvelope{}
	for _, e := range entries {
		switch e.Kind {
		case KindRuntimeEvent:
			var b RawBody
			if err := json.Unmarshal(e.Body, &b); err != nil {
				return nil, fmt.Errorf("read %s#%d: body: %w", e.Session, e.Seq, err)
			}
			if b.SessionID != sessionID {
				continue
			}
			raw, err := readArtifact(l, e, ArtifactEnvelope)
			if err != nil {
				return nil, err
			}
			if b.SourceDigest != "" && s.Sources[b.SourceDigest] == nil {
				if src, err := readArtifact(l, e, ArtifactSource); err == nil {
					s.Sources[b.SourceDigest] = src
				}
			}
			env, err := restore(raw, b.Generated)
			if err != nil {
				return nil, fmt.Errorf("read %s#%d: envelope: %w", e.Session, e.Seq, err)
			}
			se := &StoredEnvelope{Entry: e, Body: b, Raw: raw, Env: env}
			s.Envelopes = append(s.Envelopes, se)
			byEnv[b.EnvelopeID] = se
		case KindRuntimeProjection:
			var p ProjectedFeedback
			if err := json.Unmarshal(e.Body, &p); err != nil {
				return nil, fmt.Errorf("read %s#%d: body: %w", e.Session, e.Seq, err)
			}
			if p.SessionID != sessionID {
				continue
			}
			if se := byEnv[p.SourceEnvelopeID]; se != nil && se.Projection == nil {
				se.Projection, se.ProjectionEntry = &p, e
			}
		}
	}
	return s, nil
}

func readArtifact(l *ledger.Ledger, e *ledger.Entry, name string) ([]byte, error) {
	f, err := l.OpenArtifact(e, name)
	if err != nil {
		return nil, fmt.Errorf("read %s#%d: %w", e.Session, e.Seq, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxArtifact))
	if err != nil {
		return nil, fmt.Errorf("read %s#%d: %s: %w", e.Session, e.Seq, name, err)
	}
	return b, nil
}

// restore decodes a stored envelope and fills its generated fields.
func restore(raw []byte, gen map[string]string) (Envelope, error) {
	var errs errList
	env, ok := decodeEnvelope(raw, "", &errs)
	if !ok {
		return Envelope{}, errs.err()
	}
	if env.EnvelopeID == "" {
		env.EnvelopeID = gen[GenEnvelopeID]
	}
	if env.Event.EventID == "" {
		env.Event.EventID = gen[GenEventID]
	}
	if env.Event.OccurredAt == "" {
		env.Event.OccurredAt = gen[GenOccurredAt]
	}
	return env, nil
}
