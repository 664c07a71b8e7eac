package eventcontract

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/gofrs/flock"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/firewall"
)

// Importer writes parsed inputs: raw envelopes into the ledger first,
// then projections into the ledger and the store.
type Importer struct {
	Ledger *ledger.Ledger
	Store  store.Store
	// Workspace and Project scope the projected memories. A bundle's own
	// workspace is used when Workspace is empty; DefaultWorkspace after.
	Workspace string
	Project   string
	// Now stamps projected_at; it defaults to time.Now.
	Now func() time.Time
}

// DefaultWorkspace scopes projected memories when no workspace is given.
const DefaultWorkspace = "openclaw"

// Confidence of a projected runtime outcome: the runtime reported it.
const Confidence = 0.8

// Result says what Import did, envelope by envelope, in input order.
type Result struct {
	Form      string           `json:"form"`
	Envelopes []EnvelopeResult `json:"envelopes"`
	Imported  int              `json:"imported"`
	Duplicate int              `json:"duplicate"`
	Projected int              `json:"projected"`
}

// EnvelopeResult is one envelope's outcome.
type EnvelopeResult struct {
	EnvelopeID    string   `json:"envelope_id"`
	EventID       string   `json:"event_id"`
	EventKind     string   `json:"event_kind"`
	SessionID     string   `json:"session_id"`
	LedgerSession string   `json:"ledger_session"`
	Seq           uint64   `json:"seq"`
	Status        string   `json:"status"` // imported | duplicate
	Generated     []string `json:"generated,omitempty"`
	// Projection is raw_only (session_started), projected, or
	// already_projected.
	Projection string `json:"projection"`
	RecordID   string `json:"record_id,omitempty"`
	MemoryID   string `json:"memory_id,omitempty"`
}

// ConflictError says an envelope's id or event id is already stored with
// other content. Nothing of the input was written.
type ConflictError struct {
	Field string // path in the input
	Msg   string
}

func (e *ConflictError) Error() string { return e.Field + ": " + e.Msg }

// Import stores every envelope of in. All conflicts with what the ledger
// already holds are found before anything is written. An envelope already
// stored with the same content is a duplicate: not stored again, but its
// projection is completed if an earlier import stopped before it.
func (im *Importer) Import(ctx context.Context, in *Input) (*Result, error) {
	if im.Now == nil {
		im.Now = time.Now
	}
	unlock, err := im.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ws := im.Workspace
	if ws == "" {
		ws = in.Workspace
	}
	if ws == "" {
		ws = DefaultWorkspace
	}
	sessions := map[string]*Session{}
	for _, it := range in.Items {
		id := it.Env.Event.SessionID
		if sessions[id] != nil {
			continue
		}
		s, err := Load(im.Ledger, id)
		if err != nil {
			return nil, err
		}
		sessions[id] = s
	}
	for _, it := range in.Items {
		s := sessions[it.Env.Event.SessionID]
		if prev := s.Find(it.Env.EnvelopeID); prev != nil {
			if prev.Body.Digest != it.Digest {
				return nil, &ConflictError{Field: join(it.Path, "envelope_id"), Msg: fmt.Sprintf("envelope %q is already stored (ledger %s#%d) with other content", it.Env.EnvelopeID, prev.Entry.Session, prev.Entry.Seq)}
			}
			continue
		}
		if prev := s.findEvent(it.Env.Event.EventID); prev != nil {
			return nil, &ConflictError{Field: join(it.Path, "event.event_id"), Msg: fmt.Sprintf("event %q is already stored in envelope %q (ledger %s#%d)", it.Env.Event.EventID, prev.Body.EnvelopeID, prev.Entry.Session, prev.Entry.Seq)}
		}
	}
	// A bundle's projected records must be what projecting its envelopes
	// gives; only projected_at and the workspace are theirs to keep.
	for _, it := range in.Items {
		if p, ok := in.Projected[it.Env.EnvelopeID]; ok {
			want := record(it.Env, "")
			if p.RecordID != want.RecordID || !sameProjection(p, want) {
				return nil, &ConflictError{Field: "projected_records", Msg: fmt.Sprintf("the record for envelope %q is not its projection", it.Env.EnvelopeID)}
			}
		}
	}

	res := &Result{Form: in.Form}
	storedSources := map[string]bool{} // ledger session + digest
	for _, s := range sessions {
		for d := range s.Sources {
			storedSources[s.LedgerSession+"\x00"+d] = true
		}
	}
	for _, it := range in.Items {
		s := sessions[it.Env.Event.SessionID]
		r := EnvelopeResult{EnvelopeID: it.Env.EnvelopeID, EventID: it.Env.Event.EventID, EventKind: it.Env.Event.EventKind,
			SessionID: s.SessionID, LedgerSession: s.LedgerSession, Generated: sortedKeys(it.Generated)}
		se := s.Find(it.Env.EnvelopeID)
		if se != nil {
			r.Status = "duplicate"
			res.Duplicate++
		} else {
			var err error
			if se, err = im.appendRaw(s, it, in, storedSources); err != nil {
				return res, err
			}
			r.Status = "imported"
			res.Imported++
		}
		r.Seq = se.Entry.Seq
		r.Projection = "raw_only"
		if it.Env.Event.EventKind == SessionFeedback {
			projectedAt, pws := "", ws
			if p, ok := in.Projected[it.Env.EnvelopeID]; ok {
				// a replayed record keeps its time and, unless the
				// importer names one, its workspace
				projectedAt = p.ProjectedAt
				if im.Workspace == "" && p.Workspace != "" {
					pws = p.Workspace
				}
			}
			state, err := im.project(ctx, s, se, pws, projectedAt)
			if err != nil {
				return res, err
			}
			r.Projection, r.RecordID, r.MemoryID = state, se.Projection.RecordID, se.Projection.MemoryID
			if state == "projected" {
				res.Projected++
			}
		}
		res.Envelopes = append(res.Envelopes, r)
	}
	return res, nil
}

// lockTimeout bounds the wait for another import.
const lockTimeout = 30 * time.Second

// lock serializes imports under one state root, so two imports of the same
// envelope cannot both find it absent and both append it.
func (im *Importer) lock(ctx context.Context) (func(), error) {
	dir := im.Ledger.Home().RunDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock runtime import: %w", err)
	}
	fl := flock.New(filepath.Join(dir, "runtime-import.lock"), flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(ctx, lockTimeout)
	defer cancel()
	ok, err := fl.TryLockContext(ctx, 20*time.Millisecond)
	if err != nil || !ok {
		return nil, fmt.Errorf("lock runtime import: another import holds %s: %v", fl.Path(), err)
	}
	return func() { fl.Unlock() }, nil
}

// appendRaw writes the envelope, byte for byte, as the artifact of a
// runtime_event entry; the first entry of a session that needs a source
// document also holds it.
func (im *Importer) appendRaw(s *Session, it *Item, in *Input, storedSources map[string]bool) (*StoredEnvelope, error) {
	b := RawBody{ContractName: it.Env.ContractName, ContractVersion: it.Env.ContractVersion, EnvelopeID: it.Env.EnvelopeID,
		EventID: it.Env.Event.EventID, EventKind: it.Env.Event.EventKind, SessionID: it.Env.Event.SessionID, Form: it.Form,
		Adapted: it.Adapted, Digest: it.Digest}
	if len(it.Generated) > 0 {
		b.Generated = it.Generated
	}
	arts := []ledger.Artifact{{Name: ArtifactEnvelope, Data: bytes.NewReader(it.Raw)}}
	if it.Source >= 0 {
		src := in.Sources[it.Source]
		b.SourceDigest = canonjson.SHA256(src)
		k := s.LedgerSession + "\x00" + b.SourceDigest
		if !storedSources[k] {
			arts = append(arts, ledger.Artifact{Name: ArtifactSource, Data: bytes.NewReader(src)})
			storedSources[k] = true
			s.Sources[b.SourceDigest] = src
		}
	}
	e, err := im.Ledger.Append(s.LedgerSession, ledger.Record{Kind: KindRuntimeEvent, Runtime: Runtime, Event: it.Env.Event.EventKind, Body: b, Artifacts: arts})
	if err != nil {
		return nil, fmt.Errorf("store envelope %s: %w", it.Env.EnvelopeID, err)
	}
	se := &StoredEnvelope{Entry: e, Body: b, Raw: it.Raw, Env: it.Env}
	s.Envelopes = append(s.Envelopes, se)
	return se, nil
}

// project completes a session_feedback envelope's projection: the memory
// in the store (idempotent on the raw entry's lineage), then the
// runtime_projection entry, unless it exists.
func (im *Importer) project(ctx context.Context, s *Session, se *StoredEnvelope, ws, projectedAt string) (string, error) {
	if se.Projection != nil {
		return "already_projected", nil
	}
	if projectedAt == "" {
		projectedAt = im.Now().UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano)
	}
	p := record(se.Env, projectedAt)
	p.SourceEntry = fmt.Sprintf("ledger:%s#%d", se.Entry.Session, se.Entry.Seq)
	p.Workspace = ws
	m := memoryFor(se, p, ws, im.Project)
	got, _, err := im.Store.Observe(ctx, m)
	if err != nil && errors.Is(err, store.ErrExists) {
		// the derived id is taken by an unrelated memory: let the store name it
		m.ID = ""
		got, _, err = im.Store.Observe(ctx, m)
	}
	if err != nil {
		return "", fmt.Errorf("project envelope %s: %w", se.Body.EnvelopeID, err)
	}
	p.MemoryID = got.ID
	e, err := im.Ledger.Append(s.LedgerSession, ledger.Record{Kind: KindRuntimeProjection, Runtime: Runtime, Event: SessionFeedback, Body: p})
	if err != nil {
		return "", fmt.Errorf("record projection of %s: %w", se.Body.EnvelopeID, err)
	}
	se.Projection, se.ProjectionEntry = &p, e
	return "projected", nil
}

// record projects a session_feedback envelope. The record id is derived
// from the contract, the session and the source ids.
func record(env Envelope, projectedAt string) ProjectedFeedback {
	ev := env.Event
	p := ProjectedFeedback{
		RecordID:         "pf_" + hash24(env.ContractName, env.ContractVersion, ev.SessionID, env.EnvelopeID, ev.EventID),
		ContractName:     env.ContractName,
		ContractVersion:  env.ContractVersion,
		SourceEnvelopeID: env.EnvelopeID,
		SourceEventID:    ev.EventID,
		ProjectedAt:      projectedAt,
		SessionID:        ev.SessionID,
		Task:             ev.Task,
		Status:           ev.Status,
		Comment:          ev.Comment,
		OccurredAt:       ev.OccurredAt,
		SelectedSkillIDs: ev.SelectedSkillIDs, MissingCapabilities: ev.MissingCapabilities,
	}
	if ev.Score != nil {
		p.Score = *ev.Score
	}
	return p
}

// sameProjection compares what projection derives from the envelope.
func sameProjection(a, b ProjectedFeedback) bool {
	return a.ContractName == b.ContractName && a.ContractVersion == b.ContractVersion && a.SourceEnvelopeID == b.SourceEnvelopeID &&
		a.SourceEventID == b.SourceEventID && a.SessionID == b.SessionID && a.Task == b.Task && a.Status == b.Status &&
		a.Score == b.Score && a.Comment == b.Comment && a.OccurredAt == b.OccurredAt &&
		slices.Equal(a.SelectedSkillIDs, b.SelectedSkillIDs) && slices.Equal(a.MissingCapabilities, b.MissingCapabilities)
}

func hash24(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// memoryFor is the observed, evidence-only memory of a projected record.
func memoryFor(se *StoredEnvelope, p ProjectedFeedback, ws, project string) store.Memory {
	at, _ := ParseTime(p.OccurredAt)
	// Each runtime-supplied text passes the write-back firewall on its
	// own; a refused one is named, not stored.
	safe := func(what, text string, n int) string {
		if why := firewall.Check(text); why != "" {
			return "(" + what + " withheld: " + why + ")"
		}
		return clip(text, n)
	}
	summary := fmt.Sprintf("%s session ended %s (score %.2f): %s", Runtime, p.Status, p.Score, safe("task", p.Task, 200))
	var b strings.Builder
	b.WriteString(summary)
	if len(p.MissingCapabilities) > 0 {
		b.WriteString("; missing capabilities: " + safe("capabilities", strings.Join(p.MissingCapabilities, ", "), 600))
	}
	if len(p.SelectedSkillIDs) > 0 {
		b.WriteString("; selected skills: " + safe("skills", strings.Join(p.SelectedSkillIDs, ", "), 600))
	}
	if c := strings.TrimSpace(p.Comment); c != "" {
		b.WriteString("; comment: " + safe("comment", c, 600))
	}
	content := b.String()
	ents := []string{"system:" + Runtime}
	for _, c := range p.MissingCapabilities {
		ents = append(ents, "topic:"+c)
	}
	for _, sk := range p.SelectedSkillIDs {
		ents = append(ents, "skill:"+sk)
	}
	caps := slices.Clone(p.MissingCapabilities)
	slices.Sort(caps)
	vis := store.WorkspaceVisible
	if project != "" {
		vis = store.ProjectVisible
	}
	return store.Memory{
		ID:      "mem_" + hash24("runtime_feedback", se.Entry.Session, p.RecordID)[:16],
		Summary: summary,
		Content: content,
		Source: store.Source{Kind: "system_event", URI: p.SourceEntry,
			Title: string(KindRuntimeEvent) + " " + SessionFeedback + " " + p.SourceEnvelopeID, Timestamp: at},
		Provenance: store.Provenance{Status: store.Observed, Confidence: Confidence, CreatedBy: "system", Runtime: Runtime},
		UsePolicy:  store.Evidence,
		UseReason:  "observed runtime outcome (" + ContractName + " " + SessionFeedback + "); evidence, never an instruction",
		Freshness:  store.Freshness{CreatedAt: at},
		Scope:      store.Scope{Workspace: ws, Project: project, Visibility: vis},
		Entities:   ents,
		// A recurring outcome reinforces its memory within the session
		// only, so a session's memory ids do not depend on what other
		// sessions the state root holds (a replay reproduces them).
		PatternKey: "rt1:" + hash24(se.Entry.Session, norm(p.Task), p.Status, strings.Join(caps, ",")),
		Lineage:    store.Lineage{Session: se.Entry.Session, Seq: se.Entry.Seq, EntryHash: se.Entry.Hash},
	}
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// norm reduces text to lowercase words.
func norm(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }), " ")
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
