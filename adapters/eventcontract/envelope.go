package eventcontract

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Envelope is one runtime event envelope, with the event inside it.
type Envelope struct {
	ContractName    string          `json:"contract_name"`
	ContractVersion string          `json:"contract_version"`
	EnvelopeID      string          `json:"envelope_id"`
	RecordedAt      string          `json:"recorded_at,omitempty"`
	Source          string          `json:"source,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	Event           Event           `json:"event"`
}

// Event is the event body of an envelope.
type Event struct {
	SchemaVersion       string          `json:"schema_version,omitempty"`
	EventID             string          `json:"event_id"`
	EventKind           string          `json:"event_kind"`
	OccurredAt          string          `json:"occurred_at"`
	SessionID           string          `json:"session_id"`
	Task                string          `json:"task"`
	Steps               []string        `json:"steps,omitempty"`
	SelectedSkillIDs    []string        `json:"selected_skill_ids,omitempty"`
	MissingCapabilities []string        `json:"missing_capabilities,omitempty"`
	Metadata            json.RawMessage `json:"metadata,omitempty"`
	Status              string          `json:"status,omitempty"`
	Score               *float64        `json:"score,omitempty"`
	Comment             string          `json:"comment,omitempty"`
}

// Generated field names, as recorded in a runtime_event entry.
const (
	GenEnvelopeID = "envelope_id"
	GenEventID    = "event.event_id"
	GenOccurredAt = "event.occurred_at"
)

// envelopeKeys and eventKeys are the fields the contract defines; any
// other key is refused (extensions go in metadata).
var (
	envelopeKeys = []string{"contract_name", "contract_version", "envelope_id", "recorded_at", "source", "metadata", "event"}
	batchKeys    = []string{"contract_name", "contract_version", "recorded_at", "source", "metadata", "events"}
	eventKeys    = []string{"schema_version", "event_id", "event_kind", "occurred_at", "session_id", "task", "steps",
		"selected_skill_ids", "missing_capabilities", "metadata", "status", "score", "comment"}
)

// checkJSON refuses what a strict parser must: invalid UTF-8, nesting
// deeper than maxDepth, duplicate object keys (two parsers could read two
// different values), and trailing data.
func checkJSON(raw []byte, path string) error {
	if !utf8.Valid(raw) {
		return &FieldError{Field: orInput(path), Msg: "not valid UTF-8"}
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return &FieldError{Field: orInput(path), Msg: "empty"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		obj  bool
		key  bool
		seen map[string]bool
		at   string
	}
	var stack []*frame
	cur := path
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			if len(stack) != 0 {
				return &FieldError{Field: orInput(path), Msg: "truncated JSON"}
			}
			return nil
		}
		if err != nil {
			return &FieldError{Field: orInput(path), Msg: "not JSON: " + err.Error()}
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
			} else {
				k, _ := tok.(string)
				if top.seen[k] {
					return &FieldError{Field: join(top.at, k), Msg: "duplicate key"}
				}
				top.seen[k] = true
				top.key = false
				cur = join(top.at, k)
				continue
			}
		} else if d, ok := tok.(json.Delim); ok {
			if top != nil && top.obj {
				top.key = true
			}
			switch d {
			case '{', '[':
				if len(stack) >= maxDepth {
					return &FieldError{Field: orInput(cur), Msg: "nested more than " + strconv.Itoa(maxDepth) + " deep"}
				}
				stack = append(stack, &frame{obj: d == '{', key: true, seen: map[string]bool{}, at: cur})
			default:
				stack = stack[:len(stack)-1]
			}
		} else if top != nil && top.obj {
			top.key = true
		}
		if len(stack) == 0 {
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				return &FieldError{Field: orInput(path), Msg: "trailing data after the JSON value"}
			}
			return nil
		}
	}
}

func orInput(path string) string {
	if path == "" {
		return "input"
	}
	return path
}

// object is one decoded JSON object being read field by field; every
// problem is added to errs under the field's path.
type object struct {
	m    map[string]json.RawMessage
	path string
	errs *errList
}

func decodeObject(raw json.RawMessage, path string, errs *errList) (object, bool) {
	o := object{path: path, errs: errs}
	if len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' {
		errs.add(orInput(path), "must be a JSON object")
		return o, false
	}
	if err := json.Unmarshal(raw, &o.m); err != nil {
		errs.add(orInput(path), "not a JSON object: %v", err)
		return o, false
	}
	return o, true
}

func (o object) has(key string) bool {
	v, ok := o.m[key]
	return ok && string(bytes.TrimSpace(v)) != "null"
}

// only refuses keys outside allowed.
func (o object) only(allowed []string) {
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		if !slices.Contains(allowed, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		o.errs.add(join(o.path, k), "unknown field (put extensions in metadata)")
	}
}

// str reads an optional string; required makes absence (or blank) an error.
func (o object) str(key string, required bool, maxLen int) string {
	f := join(o.path, key)
	if !o.has(key) {
		if required {
			o.errs.add(f, "required")
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(o.m[key], &s); err != nil {
		o.errs.add(f, "must be a string")
		return ""
	}
	if required && strings.TrimSpace(s) == "" {
		o.errs.add(f, "required (empty)")
		return ""
	}
	if maxLen > 0 && len(s) > maxLen {
		o.errs.add(f, "longer than %d bytes", maxLen)
		return ""
	}
	return s
}

func (o object) strs(key string) []string {
	if !o.has(key) {
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(o.m[key], &raw); err != nil {
		o.errs.add(join(o.path, key), "must be a list of strings")
		return nil
	}
	out := make([]string, 0, len(raw))
	for i, r := range raw {
		var s string
		if json.Unmarshal(r, &s) != nil {
			o.errs.add(join(o.path, key)+"["+strconv.Itoa(i)+"]", "must be a string")
			continue
		}
		out = append(out, s)
	}
	return out
}

// meta reads an optional object, kept as its raw bytes.
func (o object) meta(key string) json.RawMessage {
	if !o.has(key) {
		return nil
	}
	v := bytes.TrimSpace(o.m[key])
	if v[0] != '{' {
		o.errs.add(join(o.path, key), "must be a JSON object")
		return nil
	}
	return append(json.RawMessage(nil), v...)
}

// timestamp reads an optional ISO 8601 timestamp (RFC 3339: date, "T",
// time, and a UTC offset or "Z").
func (o object) timestamp(key string) string {
	s := o.str(key, false, 64)
	if s != "" {
		if _, err := ParseTime(s); err != nil {
			o.errs.add(join(o.path, key), "not an ISO 8601 timestamp with a UTC offset (like 2026-03-13T18:22:41+00:00): %q", s)
			return ""
		}
	}
	return s
}

// ParseTime parses an ISO 8601 timestamp in its RFC 3339 profile.
func ParseTime(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, s)
}

// score reads score: a JSON number in [0, 1].
func (o object) score(key string) *float64 {
	if !o.has(key) {
		return nil
	}
	f := join(o.path, key)
	v := bytes.TrimSpace(o.m[key])
	if v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		o.errs.add(f, "must be a number in [0, 1]")
		return nil
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil || x < 0 || x > 1 {
		o.errs.add(f, "must be a number in [0, 1], got %s", v)
		return nil
	}
	return &x
}

// decodeEnvelope reads one envelope object strictly. It returns the
// envelope with omitted ids and timestamps left empty.
func decodeEnvelope(raw json.RawMessage, path string, errs *errList) (Envelope, bool) {
	n := len(errs.errs)
	o, ok := decodeObject(raw, path, errs)
	if !ok {
		return Envelope{}, false
	}
	o.only(envelopeKeys)
	var env Envelope
	env.ContractName, env.ContractVersion = header(o)
	env.EnvelopeID = o.str("envelope_id", false, maxIDLen)
	env.RecordedAt = o.timestamp("recorded_at")
	env.Source = o.str("source", false, maxIDLen)
	env.Metadata = o.meta("metadata")
	if !o.has("event") {
		errs.add(join(path, "event"), "required")
	} else {
		env.Event = decodeEvent(o.m["event"], join(path, "event"), errs)
	}
	return env, len(errs.errs) == n
}

// header reads and checks contract_name and contract_version.
func header(o object) (string, string) {
	name := o.str("contract_name", true, 128)
	if name != "" && name != ContractName {
		o.errs.add(join(o.path, "contract_name"), "must be %q, got %q", ContractName, name)
	}
	ver := o.str("contract_version", true, 32)
	if ver != "" && ver != ContractVersion {
		o.errs.add(join(o.path, "contract_version"), "unsupported version %q (this docket reads %s)", ver, ContractVersion)
	}
	return name, ver
}

func decodeEvent(raw json.RawMessage, path string, errs *errList) Event {
	o, ok := decodeObject(raw, path, errs)
	if !ok {
		return Event{}
	}
	o.only(eventKeys)
	var ev Event
	ev.SchemaVersion = o.str("schema_version", false, 32)
	if ev.SchemaVersion != "" && ev.SchemaVersion != EventSchemaVersion {
		errs.add(join(path, "schema_version"), "unsupported event schema %q (this docket reads %s)", ev.SchemaVersion, EventSchemaVersion)
	}
	ev.EventID = o.str("event_id", false, maxIDLen)
	ev.EventKind = o.str("event_kind", true, 64)
	if ev.EventKind != "" && ev.EventKind != SessionStarted && ev.EventKind != SessionFeedback {
		errs.add(join(path, "event_kind"), "must be %s or %s, got %q", SessionStarted, SessionFeedback, ev.EventKind)
	}
	ev.OccurredAt = o.timestamp("occurred_at")
	ev.SessionID = o.str("session_id", true, maxIDLen)
	ev.Task = o.str("task", true, maxTaskLen)
	ev.Steps = o.strs("steps")
	ev.SelectedSkillIDs = o.strs("selected_skill_ids")
	ev.MissingCapabilities = o.strs("missing_capabilities")
	ev.Metadata = o.meta("metadata")
	ev.Status = o.str("status", false, 32)
	ev.Score = o.score("score")
	ev.Comment = o.str("comment", false, maxCommentLen)
	if ev.EventKind == SessionFeedback {
		switch {
		case !o.has("status"):
			errs.add(join(path, "status"), "required for %s (one of %s)", SessionFeedback, strings.Join(Statuses, ", "))
		case !slices.Contains(Statuses, ev.Status):
			errs.add(join(path, "status"), "must be one of %s, got %q", strings.Join(Statuses, ", "), ev.Status)
		}
		if !o.has("score") {
			errs.add(join(path, "score"), "required for %s (a number in [0, 1])", SessionFeedback)
		}
	}
	if ev.EventKind == SessionStarted {
		for _, k := range []string{"status", "score", "comment"} {
			if o.has(k) {
				errs.add(join(path, k), "only %s carries %s", SessionFeedback, k)
			}
		}
	}
	return ev
}
