package eventcontract

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/docket/docket/internal/canonjson"
)

// Bundle is a replay bundle: everything imported for one session, to
// import into another state root. Raw bytes travel base64-encoded so they
// arrive byte for byte; the JSON views beside them are for people and are
// checked against the bytes on import.
type Bundle struct {
	BundleKind      string `json:"bundle_kind"`
	BundleVersion   string `json:"bundle_version"`
	ContractName    string `json:"contract_name"`
	ContractVersion string `json:"contract_version"`
	SessionID       string `json:"session_id"`
	Workspace       string `json:"workspace_id,omitempty"`
	// SourceArtifact is the operator session artifact the session was
	// imported from, if any (the first such source).
	SourceArtifact   json.RawMessage     `json:"source_artifact"`
	Sources          []BundleSource      `json:"sources"`
	SessionReport    *Report             `json:"session_report"`
	Handoff          Handoff             `json:"handoff"`
	Envelopes        []BundleEnvelope    `json:"envelopes"`
	ProjectedRecords []ProjectedFeedback `json:"projected_records"`
}

// BundleSource is one source document.
type BundleSource struct {
	Digest string          `json:"digest"`
	Raw    string          `json:"raw_base64"`
	JSON   json.RawMessage `json:"json"`
}

// BundleEnvelope is one stored envelope.
type BundleEnvelope struct {
	EnvelopeID string            `json:"envelope_id"`
	EventID    string            `json:"event_id"`
	Form       string            `json:"form"`
	Adapted    bool              `json:"adapted,omitempty"`
	Source     string            `json:"source_digest,omitempty"`
	Generated  map[string]string `json:"generated,omitempty"`
	Raw        string            `json:"raw_base64"`
	Envelope   Envelope          `json:"envelope"`
}

// Export builds a session's replay bundle.
func Export(s *Session) (*Bundle, error) {
	if len(s.Envelopes) == 0 {
		return nil, fmt.Errorf("export %s: no runtime events stored for this session", s.SessionID)
	}
	b := &Bundle{BundleKind: BundleKind, BundleVersion: BundleVersion, ContractName: ContractName, ContractVersion: ContractVersion,
		SessionID: s.SessionID, SourceArtifact: json.RawMessage("null"), Sources: []BundleSource{}, ProjectedRecords: []ProjectedFeedback{}}
	seen := map[string]bool{}
	for _, se := range s.Envelopes {
		b.Envelopes = append(b.Envelopes, BundleEnvelope{EnvelopeID: se.Body.EnvelopeID, EventID: se.Body.EventID, Form: se.Body.Form,
			Adapted: se.Body.Adapted, Source: se.Body.SourceDigest, Generated: se.Body.Generated,
			Raw: base64.StdEncoding.EncodeToString(se.Raw), Envelope: se.Env})
		if d := se.Body.SourceDigest; d != "" && !seen[d] {
			src, ok := s.Sources[d]
			if !ok {
				return nil, fmt.Errorf("export %s: source document %s of envelope %s is missing", s.SessionID, d, se.Body.EnvelopeID)
			}
			seen[d] = true
			view, err := canonjson.Canonical(src)
			if err != nil {
				return nil, fmt.Errorf("export %s: source document %s: %w", s.SessionID, d, err)
			}
			b.Sources = append(b.Sources, BundleSource{Digest: d, Raw: base64.StdEncoding.EncodeToString(src), JSON: view})
			if se.Body.Form == FormOperator && string(b.SourceArtifact) == "null" {
				b.SourceArtifact = view
			}
		}
		if se.Projection != nil {
			b.ProjectedRecords = append(b.ProjectedRecords, *se.Projection)
			if b.Workspace == "" {
				b.Workspace = se.Projection.Workspace
			}
		}
	}
	b.SessionReport = BuildReport(s)
	b.Handoff = b.SessionReport.Handoff
	return b, nil
}

var bundleKeys = []string{"bundle_kind", "bundle_version", "contract_name", "contract_version", "session_id", "workspace_id",
	"source_artifact", "sources", "session_report", "handoff", "envelopes", "projected_records"}

// parseBundle reads a replay bundle: each envelope's raw bytes with the
// values generated when it was first imported, so the same ids come back.
// The session report and handoff are derived again on import and are not
// read.
func parseBundle(in *Input, o object, errs *errList) {
	o.only(bundleKeys)
	if k := o.str("bundle_kind", true, 64); k != "" && k != BundleKind {
		errs.add("bundle_kind", "must be %q, got %q", BundleKind, k)
	}
	if v := o.str("bundle_version", true, 16); v != "" && v != BundleVersion {
		errs.add("bundle_version", "unsupported bundle version %q (this docket reads %s)", v, BundleVersion)
	}
	header(o)
	session := o.str("session_id", true, maxIDLen)
	in.Workspace = o.str("workspace_id", false, maxIDLen)
	var sources []BundleSource
	if o.has("sources") {
		if err := json.Unmarshal(o.m["sources"], &sources); err != nil {
			errs.add("sources", "must be a list of {digest, raw_base64}")
		}
	}
	srcIdx := map[string]int{}
	for i, s := range sources {
		p := "sources[" + strconv.Itoa(i) + "]"
		raw, err := base64.StdEncoding.DecodeString(s.Raw)
		if err != nil {
			errs.add(join(p, "raw_base64"), "not base64")
			continue
		}
		if canonjson.SHA256(raw) != s.Digest {
			errs.add(join(p, "digest"), "is not the SHA-256 of raw_base64")
			continue
		}
		srcIdx[s.Digest] = len(in.Sources)
		in.Sources = append(in.Sources, raw)
	}
	var envs []BundleEnvelope
	if err := json.Unmarshal(o.m["envelopes"], &envs); err != nil || len(envs) == 0 {
		errs.add("envelopes", "required: a non-empty list of envelopes")
		return
	}
	for i, be := range envs {
		p := "envelopes[" + strconv.Itoa(i) + "]"
		raw, err := base64.StdEncoding.DecodeString(be.Raw)
		if err != nil {
			errs.add(join(p, "raw_base64"), "not base64")
			continue
		}
		n := len(errs.errs)
		if err := checkJSON(raw, p); err != nil {
			errs.errs = append(errs.errs, err.(*FieldError))
			continue
		}
		env, ok := decodeEnvelope(raw, p, errs)
		if !ok {
			continue
		}
		it := &Item{Raw: raw, Env: env, Adapted: be.Adapted, Form: be.Form, Source: -1, Path: p, Generated: map[string]string{}}
		if !slices.Contains([]string{FormEnvelope, FormList, FormBatch, FormOperator}, be.Form) {
			errs.add(join(p, "form"), "unknown form %q", be.Form)
		}
		for k, v := range be.Generated {
			switch {
			case k == GenEnvelopeID && env.EnvelopeID == "", k == GenEventID && env.Event.EventID == "":
				if v == "" || len(v) > maxIDLen {
					errs.add(join(p, "generated."+k), "must be a non-empty id")
				}
			case k == GenOccurredAt && env.Event.OccurredAt == "":
				if _, err := ParseTime(v); err != nil {
					errs.add(join(p, "generated."+k), "not an ISO 8601 timestamp with a UTC offset: %q", v)
				}
			default:
				errs.add(join(p, "generated."+k), "the envelope has this field itself, or docket does not generate it")
			}
			it.Generated[k] = v
		}
		if be.Source != "" {
			idx, ok := srcIdx[be.Source]
			if !ok {
				errs.add(join(p, "source_digest"), "names no document in sources")
			}
			it.Source = idx
		}
		if env.Event.SessionID != session && session != "" {
			errs.add(join(p, "event.session_id"), "%q is not the bundle's session %q", env.Event.SessionID, session)
		}
		if len(errs.errs) != n {
			continue
		}
		// The readable view must say what the bytes say.
		if err := it.normalize(""); err != nil {
			errs.add(p, "%v", err)
			continue
		}
		if be.EnvelopeID != it.Env.EnvelopeID || be.EventID != it.Env.Event.EventID || !sameEnvelope(be.Envelope, it.Env) {
			errs.add(join(p, "envelope"), "does not match raw_base64 and generated")
			continue
		}
		in.Items = append(in.Items, it)
	}
	var recs []ProjectedFeedback
	if o.has("projected_records") {
		if err := json.Unmarshal(o.m["projected_records"], &recs); err != nil {
			errs.add("projected_records", "must be a list of projected feedback records")
		}
	}
	in.Projected = map[string]ProjectedFeedback{}
	for i, r := range recs {
		p := "projected_records[" + strconv.Itoa(i) + "]"
		if _, err := ParseTime(r.ProjectedAt); err != nil {
			errs.add(join(p, "projected_at"), "not an ISO 8601 timestamp with a UTC offset: %q", r.ProjectedAt)
			continue
		}
		in.Projected[r.SourceEnvelopeID] = r
	}
}

// sameEnvelope compares two envelopes by their JSON.
func sameEnvelope(a, b Envelope) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	cx, err1 := canonjson.Canonical(x)
	cy, err2 := canonjson.Canonical(y)
	return err1 == nil && err2 == nil && string(cx) == string(cy)
}
