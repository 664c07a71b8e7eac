package eventcontract

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Report is a session's evidence summary, derived from its stored
// envelopes and projections without any model.
type Report struct {
	SessionID           string          `json:"session_id"`
	LedgerSession       string          `json:"ledger_session"`
	Task                string          `json:"task"`
	Outcome             Outcome         `json:"outcome"`
	SelectedSkills      []string        `json:"selected_skills"`
	MissingCapabilities []string        `json:"missing_capabilities"`
	Steps               []string        `json:"steps"`
	Handoff             Handoff         `json:"handoff"`
	LastCheckpoint      json.RawMessage `json:"last_checkpoint"`
	NextAction          string          `json:"next_action"`
	// NextActionSource says where NextAction came from: "handoff" (the
	// operator's note) or "derived" (docket's rule).
	NextActionSource string        `json:"next_action_source"`
	ProjectedSignals []Signal      `json:"projected_signals"`
	Envelopes        []EnvelopeRef `json:"envelopes"`
	Operator         string        `json:"operator,omitempty"`
	Notes            []string      `json:"notes"`
}

// Outcome is the session's last reported outcome.
type Outcome struct {
	Reported   bool     `json:"reported"`
	Status     string   `json:"status,omitempty"`
	Score      *float64 `json:"score,omitempty"`
	Comment    string   `json:"comment,omitempty"`
	OccurredAt string   `json:"occurred_at,omitempty"`
	EnvelopeID string   `json:"envelope_id,omitempty"`
}

// Handoff is the operator handoff state.
type Handoff struct {
	// State is "none" (no handoff notes), "open" (a next action is
	// named) or "closed" (notes without a next action).
	State      string `json:"state"`
	Summary    string `json:"summary,omitempty"`
	NextAction string `json:"next_action,omitempty"`
}

// Signal is one projected feedback record.
type Signal struct {
	RecordID         string  `json:"record_id"`
	Status           string  `json:"status"`
	Score            float64 `json:"score"`
	SourceEnvelopeID string  `json:"source_envelope_id"`
	SourceEventID    string  `json:"source_event_id"`
	ProjectedAt      string  `json:"projected_at"`
	MemoryID         string  `json:"memory_id,omitempty"`
	LedgerEntry      string  `json:"ledger_entry"`
}

// EnvelopeRef is one stored envelope in the report.
type EnvelopeRef struct {
	EnvelopeID  string   `json:"envelope_id"`
	EventID     string   `json:"event_id"`
	EventKind   string   `json:"event_kind"`
	OccurredAt  string   `json:"occurred_at"`
	LedgerEntry string   `json:"ledger_entry"`
	Generated   []string `json:"generated,omitempty"`
	Adapted     bool     `json:"adapted,omitempty"`
}

// BuildReport summarizes a loaded session. Events count in their
// occurred_at order (ledger order on ties); the last feedback is the
// outcome.
func BuildReport(s *Session) *Report {
	r := &Report{SessionID: s.SessionID, LedgerSession: s.LedgerSession, SelectedSkills: []string{}, MissingCapabilities: []string{},
		Steps: []string{}, ProjectedSignals: []Signal{}, Envelopes: []EnvelopeRef{}, Notes: []string{}, Handoff: Handoff{State: "none"}}
	envs := slices.Clone(s.Envelopes)
	slices.SortStableFunc(envs, func(a, b *StoredEnvelope) int {
		ta, ea := ParseTime(a.Env.Event.OccurredAt)
		tb, eb := ParseTime(b.Env.Event.OccurredAt)
		if ea != nil || eb != nil {
			return 0
		}
		return ta.Compare(tb)
	})
	addAll := func(dst *[]string, src []string) {
		for _, v := range src {
			if !slices.Contains(*dst, v) {
				*dst = append(*dst, v)
			}
		}
	}
	for _, se := range envs {
		ev := se.Env.Event
		r.Task = ev.Task
		addAll(&r.SelectedSkills, ev.SelectedSkillIDs)
		addAll(&r.MissingCapabilities, ev.MissingCapabilities)
		if ev.EventKind == SessionStarted && len(ev.Steps) > 0 {
			r.Steps = slices.Clone(ev.Steps)
		}
		r.Envelopes = append(r.Envelopes, EnvelopeRef{EnvelopeID: se.Body.EnvelopeID, EventID: se.Body.EventID, EventKind: ev.EventKind,
			OccurredAt: ev.OccurredAt, LedgerEntry: fmt.Sprintf("%s#%d", se.Entry.Session, se.Entry.Seq), Generated: sortedKeys(se.Body.Generated), Adapted: se.Body.Adapted})
		var meta struct {
			Operator       string          `json:"operator"`
			LastCheckpoint json.RawMessage `json:"last_checkpoint"`
			Handoff        *struct {
				Summary    string `json:"summary"`
				NextAction string `json:"next_action"`
			} `json:"handoff"`
		}
		if len(se.Env.Metadata) > 0 && json.Unmarshal(se.Env.Metadata, &meta) == nil {
			if meta.Operator != "" {
				r.Operator = meta.Operator
			}
			if len(meta.LastCheckpoint) > 0 {
				r.LastCheckpoint = meta.LastCheckpoint
			}
			if meta.Handoff != nil {
				r.Handoff = Handoff{State: "closed", Summary: meta.Handoff.Summary, NextAction: meta.Handoff.NextAction}
				if strings.TrimSpace(meta.Handoff.NextAction) != "" {
					r.Handoff.State = "open"
				}
			}
		}
		if ev.EventKind == SessionFeedback {
			r.Outcome = Outcome{Reported: true, Status: ev.Status, Score: ev.Score, Comment: ev.Comment, OccurredAt: ev.OccurredAt, EnvelopeID: se.Body.EnvelopeID}
			if p := se.Projection; p != nil {
				r.ProjectedSignals = append(r.ProjectedSignals, Signal{RecordID: p.RecordID, Status: p.Status, Score: p.Score,
					SourceEnvelopeID: p.SourceEnvelopeID, SourceEventID: p.SourceEventID, ProjectedAt: p.ProjectedAt, MemoryID: p.MemoryID,
					LedgerEntry: fmt.Sprintf("%s#%d", se.ProjectionEntry.Session, se.ProjectionEntry.Seq)})
			} else {
				r.Notes = append(r.Notes, fmt.Sprintf("feedback envelope %s is not projected yet: import it again to complete", se.Body.EnvelopeID))
			}
		}
	}
	if len(r.LastCheckpoint) == 0 {
		r.LastCheckpoint = json.RawMessage("null")
	}
	r.NextAction, r.NextActionSource = r.Handoff.NextAction, "handoff"
	if strings.TrimSpace(r.NextAction) == "" {
		r.NextAction, r.NextActionSource = deriveNext(r), "derived"
	}
	if len(envs) == 0 {
		r.Notes = append(r.Notes, "no runtime events stored for this session")
	} else if !r.Outcome.Reported {
		r.Notes = append(r.Notes, "no session_feedback: the session is raw evidence only, with no projected signal")
	}
	return r
}

// deriveNext is the next action when the operator named none.
func deriveNext(r *Report) string {
	switch {
	case len(r.Envelopes) == 0:
		return "import the session's runtime events"
	case !r.Outcome.Reported:
		return "wait for the session's outcome (session_feedback)"
	case r.Outcome.Status == "success":
		return "none: the session reported success"
	case len(r.MissingCapabilities) > 0:
		return "provide the missing capabilities (" + strings.Join(r.MissingCapabilities, ", ") + ") and re-run the task"
	default:
		return "review the " + r.Outcome.Status + " outcome before re-running the task"
	}
}

// WriteMarkdown renders the report for a person.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Runtime session %s\n\n", r.SessionID)
	fmt.Fprintf(&b, "- task: %s\n", orNone(r.Task))
	if r.Outcome.Reported {
		score := "-"
		if r.Outcome.Score != nil {
			score = fmt.Sprintf("%.2f", *r.Outcome.Score)
		}
		fmt.Fprintf(&b, "- outcome: %s (score %s) at %s\n", r.Outcome.Status, score, r.Outcome.OccurredAt)
		if r.Outcome.Comment != "" {
			fmt.Fprintf(&b, "- comment: %s\n", r.Outcome.Comment)
		}
	} else {
		b.WriteString("- outcome: none reported\n")
	}
	if r.Operator != "" {
		fmt.Fprintf(&b, "- operator: %s\n", r.Operator)
	}
	fmt.Fprintf(&b, "- selected skills: %s\n", orNone(strings.Join(r.SelectedSkills, ", ")))
	fmt.Fprintf(&b, "- missing capabilities: %s\n", orNone(strings.Join(r.MissingCapabilities, ", ")))
	fmt.Fprintf(&b, "- ledger: %s (docket verify --session %s)\n", r.LedgerSession, r.LedgerSession)
	b.WriteString("\n## Handoff\n\n")
	fmt.Fprintf(&b, "- state: %s\n", r.Handoff.State)
	if r.Handoff.Summary != "" {
		fmt.Fprintf(&b, "- summary: %s\n", r.Handoff.Summary)
	}
	fmt.Fprintf(&b, "- next action (%s): %s\n", r.NextActionSource, r.NextAction)
	fmt.Fprintf(&b, "- last checkpoint: %s\n", string(r.LastCheckpoint))
	if len(r.Steps) > 0 {
		b.WriteString("\n## Steps\n\n")
		for i, s := range r.Steps {
			fmt.Fprintf(&b, "%d. %s\n", i+1, s)
		}
	}
	b.WriteString("\n## Projected signals\n\n")
	if len(r.ProjectedSignals) == 0 {
		b.WriteString("none\n")
	}
	for _, s := range r.ProjectedSignals {
		fmt.Fprintf(&b, "- %s: %s score %.2f from envelope %s / event %s, projected %s, memory %s (ledger %s)\n",
			s.RecordID, s.Status, s.Score, s.SourceEnvelopeID, s.SourceEventID, s.ProjectedAt, orNone(s.MemoryID), s.LedgerEntry)
	}
	b.WriteString("\n## Envelopes\n\n")
	for _, e := range r.Envelopes {
		gen := ""
		if len(e.Generated) > 0 {
			gen = ", generated: " + strings.Join(e.Generated, ", ")
		}
		fmt.Fprintf(&b, "- %s %s at %s (ledger %s%s)\n", e.EventKind, e.EnvelopeID, e.OccurredAt, e.LedgerEntry, gen)
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "none"
	}
	return s
}
