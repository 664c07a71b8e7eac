// Package eventcontract imports runtime events under the
// openclaw_appleseed.runtime_event contract (version 1.0): a single
// envelope, a list of envelopes, a batch object with "events", an
// openclaw_operator_session artifact (adapted deterministically into
// envelopes), or a replay bundle written by Export.
//
// Raw first: each envelope is appended to its session's ledger as the
// artifact of a runtime_event entry before anything is derived from it.
// Projection is conservative: session_started stays raw evidence;
// session_feedback becomes a ProjectedFeedback record (a
// runtime_projection ledger entry, with lineage to the contract and the
// source envelope and event) and an observed, evidence-only memory in the
// store. Every id docket generates is derived from content, so importing
// the same input again, or a replay bundle into a fresh state root,
// reproduces the same ids and adds nothing twice.
package eventcontract

import (
	"fmt"
	"strings"

	"github.com/docket/docket/ledger"
)

// The contract this package implements.
const (
	ContractName       = "openclaw_appleseed.runtime_event"
	ContractVersion    = "1.0"
	EventSchemaVersion = "1.1"

	// OperatorArtifactKind is the artifact_kind of an OpenClaw operator
	// session artifact.
	OperatorArtifactKind = "openclaw_operator_session"
	// BundleKind is the bundle_kind of a replay bundle written by Export.
	BundleKind = "docket.openclaw_replay_bundle"
	// BundleVersion is the replay bundle format version.
	BundleVersion = "1"
)

// Event kinds.
const (
	SessionStarted  = "session_started"
	SessionFeedback = "session_feedback"
)

// Ledger entry kinds this package writes.
const (
	KindRuntimeEvent      ledger.Kind = "runtime_event"
	KindRuntimeProjection ledger.Kind = "runtime_projection"
)

// Runtime is the runtime name recorded in the entries and memories.
const Runtime = "openclaw"

// Artifact names of a runtime_event entry.
const (
	ArtifactEnvelope = "envelope.json" // the envelope, byte for byte as received (or as adapted)
	ArtifactSource   = "source.json"   // the input document an adapted envelope came from
)

// Input forms.
const (
	FormEnvelope = "envelope"
	FormList     = "list"
	FormBatch    = "batch"
	FormOperator = "operator_session"
	FormBundle   = "bundle"
)

// Statuses are the session_feedback status values.
var Statuses = []string{"success", "failure", "partial", "cancelled", "unknown"}

// Limits on input.
const (
	MaxInput      = 8 << 20 // bytes of one input document
	MaxEnvelopes  = 10000   // envelopes in one input
	maxDepth      = 64      // JSON nesting
	maxIDLen      = 256     // session_id, event_id, envelope_id
	maxTaskLen    = 4000
	maxCommentLen = 16000
)

// FieldError is one invalid field. Field is a path into the input, such
// as "event.score", "[2].event.task" or "events[1].status".
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// InvalidError lists every invalid field of an input; nothing was written.
type InvalidError struct {
	Errs []*FieldError
}

func (e *InvalidError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid runtime events (%d problem", len(e.Errs))
	if len(e.Errs) != 1 {
		b.WriteString("s")
	}
	b.WriteString("): ")
	for i, fe := range e.Errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Has reports whether the error names field.
func (e *InvalidError) Has(field string) bool {
	for _, fe := range e.Errs {
		if fe.Field == field {
			return true
		}
	}
	return false
}

// maxErrs bounds how many problems one input reports.
const maxErrs = 50

type errList struct{ errs []*FieldError }

func (l *errList) add(field, format string, a ...any) {
	if len(l.errs) < maxErrs {
		l.errs = append(l.errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)})
	}
}

func (l *errList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	return &InvalidError{Errs: l.errs}
}

// join builds a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
