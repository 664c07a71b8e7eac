package eventcontract

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var fixedNow = func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }

func TestParseForms(t *testing.T) {
	tests := []struct {
		file      string
		form      string
		kinds     []string
		sources   int
		generated [][]string // per item, sorted
		adapted   bool
	}{
		{"envelope.json", FormEnvelope, []string{SessionFeedback}, 0, [][]string{nil}, false},
		{"list.json", FormList, []string{SessionStarted, SessionFeedback}, 0, [][]string{{GenEventID}, {GenEnvelopeID, GenEventID}}, false},
		{"batch.json", FormBatch, []string{SessionStarted, SessionFeedback}, 1,
			[][]string{{GenEnvelopeID, GenEventID, GenOccurredAt}, {GenEnvelopeID, GenEventID, GenOccurredAt}}, true},
		{"operator.json", FormOperator, []string{SessionStarted, SessionFeedback}, 1, [][]string{{GenEnvelopeID, GenEventID}, {GenEnvelopeID, GenEventID}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data := readTestdata(t, tc.file)
			in, err := Parse(data, Options{Now: fixedNow})
			if err != nil {
				t.Fatal(err)
			}
			if in.Form != tc.form || len(in.Items) != len(tc.kinds) || len(in.Sources) != tc.sources {
				t.Fatalf("form %s, %d items, %d sources", in.Form, len(in.Items), len(in.Sources))
			}
			for i, it := range in.Items {
				if it.Env.Event.EventKind != tc.kinds[i] || it.Adapted != tc.adapted {
					t.Errorf("item %d: kind %s adapted %v", i, it.Env.Event.EventKind, it.Adapted)
				}
				if got := strings.Join(sortedKeys(it.Generated), ","); got != strings.Join(tc.generated[i], ",") {
					t.Errorf("item %d: generated %q, want %q", i, got, strings.Join(tc.generated[i], ","))
				}
				if it.Env.EnvelopeID == "" || it.Env.Event.EventID == "" || it.Env.Event.OccurredAt == "" || it.Digest == "" {
					t.Errorf("item %d not normalized: %+v", i, it.Env)
				}
				if _, err := ParseTime(it.Env.Event.OccurredAt); err != nil {
					t.Errorf("item %d: occurred_at %q", i, it.Env.Event.OccurredAt)
				}
			}
			if tc.form == FormEnvelope && string(in.Items[0].Raw) != string(data) {
				t.Error("a single envelope is not kept byte for byte")
			}
		})
	}
}

func TestParseListKeepsElementBytes(t *testing.T) {
	data := readTestdata(t, "list.json")
	in, err := Parse(data, Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range in.Items {
		if !strings.Contains(string(data), string(it.Raw)) || !strings.HasPrefix(string(it.Raw), "{\"contract_name\": ") {
			t.Errorf("element %d is not the input's bytes: %s", i, it.Raw)
		}
	}
}

// TestOperatorAdaptation checks the adapted envelopes field by field.
func TestOperatorAdaptation(t *testing.T) {
	in, err := Parse(readTestdata(t, "operator.json"), Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	st, fb := in.Items[0].Env, in.Items[1].Env
	if st.Event.OccurredAt != "2026-03-13T18:20:00+00:00" || strings.Join(st.Event.Steps, "|") != "inspect rollback risk" ||
		st.Event.SessionID != "demo-openclaw-session-001" || st.Source != "openclaw-local" || st.RecordedAt != "2026-03-13T18:30:00+00:00" {
		t.Errorf("session_started: %+v", st)
	}
	if fb.Event.Status != "failure" || fb.Event.Score == nil || *fb.Event.Score != 0.2 || fb.Event.OccurredAt != "2026-03-13T18:28:00+00:00" ||
		strings.Join(fb.Event.MissingCapabilities, ",") != "database migrations" || strings.Join(fb.Event.SelectedSkillIDs, ",") != "code_review" {
		t.Errorf("session_feedback: %+v", fb.Event)
	}
	var meta struct {
		Operator       string            `json:"operator"`
		Timeline       []json.RawMessage `json:"timeline"`
		LastCheckpoint struct {
			ID string `json:"checkpoint_id"`
		} `json:"last_checkpoint"`
		Handoff struct {
			NextAction string `json:"next_action"`
		} `json:"handoff"`
	}
	for _, env := range []Envelope{st, fb} {
		if err := json.Unmarshal(env.Metadata, &meta); err != nil {
			t.Fatal(err)
		}
		if meta.Operator != "local-demo" || len(meta.Timeline) != 1 || meta.LastCheckpoint.ID != "cp-risk" || meta.Handoff.NextAction != "Verify lock-time risk before promotion." {
			t.Errorf("metadata lost: %s", env.Metadata)
		}
	}
	// No outcome: only session_started.
	noOutcome := strings.Replace(string(readTestdata(t, "operator.json")), `"outcome"`, `"outcome_not"`, 1)
	in, err = Parse([]byte(noOutcome), Options{Now: fixedNow})
	if err != nil || len(in.Items) != 1 || in.Items[0].Env.Event.EventKind != SessionStarted {
		t.Fatalf("artifact without outcome: %v %+v", err, in)
	}
}

// TestGeneratedIDsDeterministic: generated ids depend on content only, so
// the same input at another time gets the same ids; another content gets
// others; white space does not count.
func TestGeneratedIDsDeterministic(t *testing.T) {
	data := readTestdata(t, "batch.json")
	a, err := Parse(data, Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Parse([]byte(strings.ReplaceAll(string(data), "\n", "\n  ")), Options{Now: func() time.Time { return fixedNow().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Items {
		if a.Items[i].Env.EnvelopeID != b.Items[i].Env.EnvelopeID || a.Items[i].Env.Event.EventID != b.Items[i].Env.Event.EventID || a.Items[i].Digest != b.Items[i].Digest {
			t.Errorf("item %d: ids differ across parses", i)
		}
		if a.Items[i].Env.Event.OccurredAt != "2026-11-23T12:00:00Z" {
			t.Errorf("occurred_at = %q, want the import time", a.Items[i].Env.Event.OccurredAt)
		}
	}
	if a.Items[0].Env.EnvelopeID == a.Items[1].Env.EnvelopeID {
		t.Error("two events got one envelope id")
	}
	c, err := Parse([]byte(strings.Replace(string(data), `"score": 0.2`, `"score": 0.3`, 1)), Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if c.Items[1].Env.EnvelopeID == a.Items[1].Env.EnvelopeID {
		t.Error("other content, same generated id")
	}
	// recorded_at is the generated occurred_at when there is one
	withRec := strings.Replace(string(data), `"source": "openclaw-local",`, `"source": "openclaw-local", "recorded_at": "2026-03-13T18:00:00Z",`, 1)
	d, err := Parse([]byte(withRec), Options{Now: fixedNow})
	if err != nil || d.Items[0].Env.Event.OccurredAt != "2026-03-13T18:00:00Z" || d.Items[0].Generated[GenOccurredAt] == "" {
		t.Fatalf("occurred_at from recorded_at: %v %+v", err, d)
	}
}

func TestParseRepeats(t *testing.T) {
	env := string(readTestdata(t, "envelope.json"))
	in, err := Parse([]byte("["+env+","+env+"]"), Options{Now: fixedNow})
	if err != nil || !in.Items[1].Dup || in.Items[0].Dup {
		t.Fatalf("a repeated envelope is a duplicate: %v", err)
	}
	other := strings.Replace(env, `"score": 0.2`, `"score": 0.9`, 1)
	_, err = Parse([]byte("["+env+","+other+"]"), Options{Now: fixedNow})
	if !hasField(err, "[1].envelope_id") {
		t.Errorf("same envelope id, other content: %v", err)
	}
	sameEvent := strings.Replace(other, "9b1f66ae-5f44-47f8-a1a9-bd5f84d22b70", "another-envelope", 1)
	_, err = Parse([]byte("["+env+","+sameEvent+"]"), Options{Now: fixedNow})
	if !hasField(err, "[1].event.event_id") {
		t.Errorf("one event in two envelopes: %v", err)
	}
}

func hasField(err error, field string) bool {
	var ie *InvalidError
	return errors.As(err, &ie) && ie.Has(field)
}

// TestValidationErrors: each invalid input names its field, and nothing is
// returned.
func TestValidationErrors(t *testing.T) {
	env := string(readTestdata(t, "envelope.json"))
	batch := string(readTestdata(t, "batch.json"))
	op := string(readTestdata(t, "operator.json"))
	rep := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	tests := []struct {
		name, input, field string
	}{
		{"missing session_id", rep(env, `"session_id": "demo-session-001",`, ``), "event.session_id"},
		{"empty session_id", rep(env, `"session_id": "demo-session-001"`, `"session_id": "  "`), "event.session_id"},
		{"session_id not a string", rep(env, `"session_id": "demo-session-001"`, `"session_id": 7`), "event.session_id"},
		{"missing task", rep(env, `"task": "review postgres migration rollback safety",`, ``), "event.task"},
		{"null task", rep(env, `"task": "review postgres migration rollback safety"`, `"task": null`), "event.task"},
		{"status not in enum", rep(env, `"status": "failure"`, `"status": "failed"`), "event.status"},
		{"status empty", rep(env, `"status": "failure"`, `"status": ""`), "event.status"},
		{"status missing on feedback", rep(env, `"status": "failure",`, ``), "event.status"},
		{"status on session_started", rep(rep(env, `"session_feedback"`, `"session_started"`), `"comment": "missed rollback coverage",`, ``), "event.status"},
		{"score above 1", rep(env, `"score": 0.2`, `"score": 1.5`), "event.score"},
		{"score below 0", rep(env, `"score": 0.2`, `"score": -0.1`), "event.score"},
		{"score a string", rep(env, `"score": 0.2`, `"score": "0.2"`), "event.score"},
		{"score a bool", rep(env, `"score": 0.2`, `"score": true`), "event.score"},
		{"score missing on feedback", rep(env, `"score": 0.2,`, ``), "event.score"},
		{"occurred_at not ISO 8601", rep(env, `"2026-03-13T18:22:39+00:00"`, `"13/03/2026 18:22"`), "event.occurred_at"},
		{"occurred_at without offset", rep(env, `"2026-03-13T18:22:39+00:00"`, `"2026-03-13T18:22:39"`), "event.occurred_at"},
		{"occurred_at a date only", rep(env, `"2026-03-13T18:22:39+00:00"`, `"2026-03-13"`), "event.occurred_at"},
		{"recorded_at not ISO 8601", rep(env, `"2026-03-13T18:22:41+00:00"`, `"yesterday"`), "recorded_at"},
		{"unknown event_kind", rep(env, `"session_feedback"`, `"session_ended"`), "event.event_kind"},
		{"missing event_kind", rep(env, `"event_kind": "session_feedback",`, ``), "event.event_kind"},
		{"unknown event field", rep(env, `"comment":`, `"rating": 3, "comment":`), "event.rating"},
		{"unknown envelope field", rep(env, `"source":`, `"sender": "x", "source":`), "sender"},
		{"wrong contract_name", rep(env, `"openclaw_appleseed.runtime_event"`, `"openclaw.runtime_event"`), "contract_name"},
		{"missing contract_name", rep(env, `"contract_name": "openclaw_appleseed.runtime_event",`, ``), "contract_name"},
		{"unsupported contract_version", rep(env, `"contract_version": "1.0"`, `"contract_version": "2.0"`), "contract_version"},
		{"unsupported schema_version", rep(env, `"schema_version": "1.1"`, `"schema_version": "9"`), "event.schema_version"},
		{"metadata not an object", rep(env, `"metadata": {
    "operator": "local-demo"
  }`, `"metadata": ["x"]`), "metadata"},
		{"steps not strings", rep(env, `"comment":`, `"steps": [1], "comment":`), "event.steps[0]"},
		{"event not an object", `{"contract_name":"openclaw_appleseed.runtime_event","contract_version":"1.0","event":[]}`, "event"},
		{"duplicate key", rep(env, `"score": 0.2`, `"score": 0.2, "score": 1.0`), "event.score"},
		{"invalid UTF-8", rep(env, "missed rollback", "missed \xff rollback"), "input"},
		{"trailing data", env + "{}", "input"},
		{"not JSON", `{"event": `, "input"},
		{"empty input", "  \n", "input"},
		{"a scalar", `42`, "input"},
		{"an object of no form", `{"hello": "world"}`, "input"},
		{"empty list", `[]`, "input"},
		{"list element invalid", "[" + env + "," + rep(env, `"status": "failure"`, `"status": "meh"`) + "]", "[1].event.status"},
		{"batch event missing task", rep(batch, `"task": "review postgres migration rollback safety",
      "status"`, `"status"`), "events[1].task"},
		{"batch event bad score", rep(batch, `"score": 0.2`, `"score": 2`), "events[1].score"},
		{"batch empty events", `{"contract_name":"openclaw_appleseed.runtime_event","contract_version":"1.0","events":[]}`, "events"},
		{"batch without contract_version", rep(batch, `"contract_version": "1.0",`, ``), "contract_version"},
		{"batch recorded_at bad", rep(batch, `"source": "openclaw-local",`, `"source": "openclaw-local", "recorded_at": "noon",`), "recorded_at"},
		{"operator wrong kind", rep(op, `"openclaw_operator_session"`, `"openclaw_session"`), "artifact_kind"},
		{"operator missing session_id", rep(op, `"session_id": "demo-openclaw-session-001",`, ``), "session.session_id"},
		{"operator missing task", rep(op, `"task": "review postgres migration rollback safety",
    "started_at"`, `"started_at"`), "session.task"},
		{"operator missing session", rep(op, `"session": {`, `"session_x": {`), "session"},
		{"operator started_at bad", rep(op, `"2026-03-13T18:20:00+00:00"`, `"18:20"`), "session.started_at"},
		{"operator checkpoint occurred_at bad", rep(op, `"2026-03-13T18:24:00+00:00"`, `"later"`), "timeline[0].occurred_at"},
		{"operator checkpoint without step", rep(rep(op, `"step": "inspect rollback risk",`, ``), `"checkpoint_id": "cp-risk",`, ``), "timeline[0].step"},
		{"operator outcome status", rep(op, `"status": "failure"`, `"status": "fail"`), "outcome.status"},
		{"operator outcome score", rep(op, `"score": 0.2`, `"score": 3`), "outcome.score"},
		{"operator outcome without score", rep(op, `"status": "failure",
    "score": 0.2`, `"status": "failure"`), "outcome.score"},
		{"operator unsupported schema", rep(op, `"schema_version": "1.0"`, `"schema_version": "2.0"`), "schema_version"},
		{"nested too deep", `{"contract_name":"openclaw_appleseed.runtime_event","contract_version":"1.0","metadata":` + strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70) + `,"event":{}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Parse([]byte(tc.input), Options{Now: fixedNow})
			if err == nil || in != nil {
				t.Fatalf("accepted: %+v", in)
			}
			var ie *InvalidError
			if !errors.As(err, &ie) {
				t.Fatalf("error %T %v is not an *InvalidError", err, err)
			}
			if tc.field != "" && !ie.Has(tc.field) {
				t.Errorf("error does not name %q: %v", tc.field, err)
			}
		})
	}
}

func TestLedgerSession(t *testing.T) {
	tests := []struct{ in, prefix string }{
		{"demo-session-001", "demo-session-001"},
		{"agent:main:main", "oc-agent-main-main-"},
		{"../../etc/passwd", "oc-etc-passwd-"},
		{".hidden", "oc-hidden-"},
		{strings.Repeat("x", 300), "oc-" + strings.Repeat("x", 64) + "-"},
	}
	for _, tc := range tests {
		got := LedgerSession(tc.in)
		if !strings.HasPrefix(got, tc.prefix) || strings.ContainsAny(got, "/:") || len(got) > 128 {
			t.Errorf("LedgerSession(%q) = %q", tc.in, got)
		}
	}
	if LedgerSession("a:b") == LedgerSession("a;b") {
		t.Error("two session ids share a ledger name")
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range []string{"envelope.json", "list.json", "batch.json", "operator.json"} {
		f.Add(readTestdata(f, n))
	}
	f.Add([]byte(`{"events":[{}]}`))
	f.Add([]byte(`[{"event":{"score":1e400}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := Parse(data, Options{Now: fixedNow})
		if err != nil {
			var ie *InvalidError
			if in != nil || !errors.As(err, &ie) || len(ie.Errs) == 0 {
				t.Fatalf("error %v with input %v", err, in)
			}
			return
		}
		// The normalized envelopes, as a list, parse to the same ids and
		// kinds with nothing generated.
		var envs []Envelope
		for _, it := range in.Items {
			if it.Env.Event.Score != nil && (*it.Env.Event.Score < 0 || *it.Env.Event.Score > 1) {
				t.Fatalf("score %v accepted", *it.Env.Event.Score)
			}
			if it.Env.Event.SessionID == "" || it.Env.Event.Task == "" {
				t.Fatal("required field empty")
			}
			envs = append(envs, it.Env)
		}
		b, err := json.Marshal(envs)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b, Options{Now: fixedNow})
		if err != nil {
			t.Fatalf("normalized envelopes do not parse: %v\n%s", err, b)
		}
		for i, it := range again.Items {
			if len(it.Generated) != 0 || it.Env.EnvelopeID != envs[i].EnvelopeID || it.Env.Event.EventID != envs[i].Event.EventID || it.Env.Event.EventKind != envs[i].Event.EventKind {
				t.Fatalf("round trip changed envelope %d: %+v", i, it.Env)
			}
		}
	})
}
