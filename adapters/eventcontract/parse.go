package eventcontract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/docket/docket/internal/canonjson"
)

// Input is a parsed, validated input document.
type Input struct {
	Form string
	// Sources are the documents adapted envelopes came from (a batch, an
	// operator session artifact), byte for byte.
	Sources [][]byte
	Items   []*Item
	// Projected are a replay bundle's projected records, by source
	// envelope id; Workspace is the bundle's workspace.
	Projected map[string]ProjectedFeedback
	Workspace string
}

// Item is one envelope of an input.
type Item struct {
	// Raw is what is stored byte for byte: the envelope as received, or,
	// for an adapted envelope, its canonical JSON.
	Raw []byte
	// Env is the envelope with generated ids and timestamps filled in.
	Env Envelope
	// Generated maps each field docket generated (GenEnvelopeID,
	// GenEventID, GenOccurredAt) to its value.
	Generated map[string]string
	// Adapted is set when docket composed the envelope (batch, operator
	// session) rather than receiving it whole.
	Adapted bool
	// Form is the input form the envelope arrived in (for a bundle, the
	// form it was first imported from).
	Form string
	// Source indexes Input.Sources, or is -1.
	Source int
	// Digest is "sha256:<hex>" of the canonical JSON of Raw: the
	// envelope's identity beside its id.
	Digest string
	// Path locates the envelope in the input, for messages.
	Path string
	// Dup is set for a repeat of an earlier envelope of the same input.
	Dup bool
}

// Options tune Parse.
type Options struct {
	// Now supplies occurred_at for an event that has none and whose
	// envelope has no recorded_at; it defaults to time.Now.
	Now func() time.Time
}

// Parse reads one input document in any of the contract's forms and
// validates all of it. On any invalid field it returns an *InvalidError
// listing each one and no input.
func Parse(data []byte, opt Options) (*Input, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	var errs errList
	if len(data) > MaxInput {
		errs.add("input", "larger than %d bytes", MaxInput)
		return nil, errs.err()
	}
	if err := checkJSON(data, ""); err != nil {
		errs.errs = append(errs.errs, err.(*FieldError))
		return nil, errs.err()
	}
	in := &Input{}
	t := bytes.TrimSpace(data)
	switch t[0] {
	case '[':
		in.Form = FormList
		var elems []json.RawMessage
		if err := json.Unmarshal(t, &elems); err != nil {
			errs.add("input", "not a list: %v", err)
			break
		}
		if len(elems) == 0 {
			errs.add("input", "empty list")
		}
		if len(elems) > MaxEnvelopes {
			errs.add("input", "more than %d envelopes", MaxEnvelopes)
			break
		}
		for i, e := range elems {
			p := "[" + strconv.Itoa(i) + "]"
			if env, ok := decodeEnvelope(e, p, &errs); ok {
				in.Items = append(in.Items, &Item{Raw: e, Env: env, Form: FormList, Source: -1, Path: p})
			}
		}
	case '{':
		o, ok := decodeObject(t, "", &errs)
		if !ok {
			break
		}
		switch {
		case o.has("artifact_kind"):
			in.Form = FormOperator
			parseOperator(in, data, o, &errs)
		case o.has("bundle_kind"):
			in.Form = FormBundle
			parseBundle(in, o, &errs)
		case o.has("events"):
			in.Form = FormBatch
			parseBatch(in, data, o, &errs)
		case o.has("event"):
			in.Form = FormEnvelope
			if env, ok := decodeEnvelope(t, "", &errs); ok {
				in.Items = append(in.Items, &Item{Raw: data, Env: env, Form: FormEnvelope, Source: -1})
			}
		default:
			errs.add("input", "not a runtime event envelope (no \"event\"), a batch (no \"events\"), an operator session artifact (no \"artifact_kind\") or a replay bundle (no \"bundle_kind\")")
		}
	default:
		errs.add("input", "must be a JSON object or a list of envelopes")
	}
	if err := errs.err(); err != nil {
		return nil, err
	}
	now := opt.Now().UTC().Truncate(time.Second).Format(time.RFC3339)
	for _, it := range in.Items {
		if err := it.normalize(now); err != nil {
			errs.add(it.Path, "%v", err)
		}
	}
	checkRepeats(in.Items, &errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return in, nil
}

// normalize fills the envelope's omitted ids and occurred_at, recording
// each as generated, and computes the digest. Values a bundle recorded as
// generated are kept (Generated set before).
func (it *Item) normalize(now string) error {
	canon, err := canonjson.Canonical(it.Raw)
	if err != nil {
		return err
	}
	it.Digest = canonjson.SHA256(canon)
	if it.Generated == nil {
		it.Generated = map[string]string{}
	}
	env := &it.Env
	if env.EnvelopeID == "" {
		if v := it.Generated[GenEnvelopeID]; v != "" {
			env.EnvelopeID = v
		} else {
			env.EnvelopeID = DeriveID("envelope", string(canon))
			it.Generated[GenEnvelopeID] = env.EnvelopeID
		}
	}
	if env.Event.EventID == "" {
		if v := it.Generated[GenEventID]; v != "" {
			env.Event.EventID = v
		} else {
			env.Event.EventID = DeriveID("event", env.EnvelopeID+"\x00"+string(canon))
			it.Generated[GenEventID] = env.Event.EventID
		}
	}
	if env.Event.OccurredAt == "" {
		switch {
		case it.Generated[GenOccurredAt] != "":
			env.Event.OccurredAt = it.Generated[GenOccurredAt]
		case env.RecordedAt != "":
			env.Event.OccurredAt = env.RecordedAt
			it.Generated[GenOccurredAt] = env.RecordedAt
		default:
			env.Event.OccurredAt = now
			it.Generated[GenOccurredAt] = now
		}
	}
	return nil
}

// checkRepeats marks an envelope repeated within the input (same id, same
// content) as a duplicate and refuses one whose id or event id another
// envelope of the input uses with other content.
func checkRepeats(items []*Item, errs *errList) {
	byEnv := map[string]*Item{}
	byEvent := map[string]*Item{}
	for _, it := range items {
		sess := it.Env.Event.SessionID
		k := sess + "\x00" + it.Env.EnvelopeID
		if prev, ok := byEnv[k]; ok {
			if prev.Digest != it.Digest {
				errs.add(join(it.Path, "envelope_id"), "%q is also used by %s with other content", it.Env.EnvelopeID, orInput(prev.Path))
			}
			it.Dup = true
			continue
		}
		byEnv[k] = it
		ek := sess + "\x00" + it.Env.Event.EventID
		if prev, ok := byEvent[ek]; ok {
			errs.add(join(it.Path, "event.event_id"), "%q is also the event of envelope %q", it.Env.Event.EventID, prev.Env.EnvelopeID)
			continue
		}
		byEvent[ek] = it
	}
}

// DeriveID returns a deterministic UUID (version 8, RFC 9562) for a
// generated id: the first 16 bytes of SHA-256 over a purpose label and
// the content, so the same content always gets the same id.
func DeriveID(purpose, content string) string {
	sum := sha256.Sum256([]byte("docket/openclaw/" + purpose + "/v1\x00" + content))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x80
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// parseBatch reads {contract_name, contract_version, source, metadata,
// recorded_at, events: [event, …]}. Each event becomes an adapted
// envelope carrying the batch's header.
func parseBatch(in *Input, data []byte, o object, errs *errList) {
	n0 := len(errs.errs)
	o.only(batchKeys)
	header(o)
	o.timestamp("recorded_at")
	o.str("source", false, maxIDLen)
	o.meta("metadata")
	hdrOK := len(errs.errs) == n0
	hdr := map[string]json.RawMessage{}
	for _, k := range []string{"contract_name", "contract_version", "recorded_at", "source", "metadata"} {
		if o.has(k) {
			hdr[k] = o.m[k]
		}
	}
	var events []json.RawMessage
	if err := json.Unmarshal(o.m["events"], &events); err != nil {
		errs.add("events", "must be a list of events")
		return
	}
	if len(events) == 0 {
		errs.add("events", "empty list")
		return
	}
	if len(events) > MaxEnvelopes {
		errs.add("events", "more than %d events", MaxEnvelopes)
		return
	}
	in.Sources = append(in.Sources, data)
	for i, ev := range events {
		p := "events[" + strconv.Itoa(i) + "]"
		n := len(errs.errs)
		decodeEvent(ev, p, errs)
		if len(errs.errs) != n || !hdrOK {
			continue
		}
		m := map[string]json.RawMessage{"event": ev}
		for k, v := range hdr {
			m[k] = v
		}
		raw, err := composed(m)
		if err != nil {
			errs.add(p, "%v", err)
			continue
		}
		if env, ok := decodeEnvelope(raw, p, errs); ok {
			in.Items = append(in.Items, &Item{Raw: raw, Env: env, Adapted: true, Form: FormBatch, Source: len(in.Sources) - 1, Path: p})
		}
	}
}

// composed encodes an adapted envelope canonically.
func composed(m any) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("compose envelope: %w", err)
	}
	return canonjson.Canonical(b)
}
