package eventcontract

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// operatorSchemaVersion is the operator session artifact version read.
const operatorSchemaVersion = "1.0"

// parseOperator adapts an openclaw_operator_session artifact,
// deterministically, into one session_started envelope carrying the
// ordered checkpoint list as steps and, when the artifact has an outcome,
// one session_feedback envelope. Both envelopes' metadata keep the
// timeline, the last checkpoint, the operator and the handoff notes. The
// artifact itself is kept byte for byte as the source of both.
//
// Fields the adapter does not use are kept only in the source artifact;
// the fields it uses are validated like the contract's.
func parseOperator(in *Input, data []byte, o object, errs *errList) {
	n0 := len(errs.errs)
	kind := o.str("artifact_kind", true, 64)
	if kind != "" && kind != OperatorArtifactKind {
		errs.add("artifact_kind", "must be %q, got %q", OperatorArtifactKind, kind)
	}
	sv := o.str("schema_version", false, 32)
	if sv != "" && sv != operatorSchemaVersion {
		errs.add("schema_version", "unsupported operator session schema %q (this docket reads %s)", sv, operatorSchemaVersion)
	}
	source := o.str("source", false, maxIDLen)
	recordedAt := o.timestamp("recorded_at")

	var sess object
	if !o.has("session") {
		errs.add("session", "required")
	} else if s, ok := decodeObject(o.m["session"], "session", errs); ok {
		sess = s
	}
	var sessionID, task, startedAt, operator string
	var skills []string
	if sess.m != nil {
		sessionID = sess.str("session_id", true, maxIDLen)
		task = sess.str("task", true, maxTaskLen)
		startedAt = sess.timestamp("started_at")
		operator = sess.str("operator", false, maxIDLen)
		skills = sess.strs("selected_skill_ids")
	}

	// The timeline, in the order given.
	var timeline []json.RawMessage
	var steps, checkpointIDs, missing []string
	if o.has("timeline") {
		if err := json.Unmarshal(o.m["timeline"], &timeline); err != nil {
			errs.add("timeline", "must be a list of checkpoints")
			timeline = nil
		}
	}
	for i, cp := range timeline {
		p := "timeline[" + strconv.Itoa(i) + "]"
		c, ok := decodeObject(cp, p, errs)
		if !ok {
			continue
		}
		id := c.str("checkpoint_id", false, maxIDLen)
		c.timestamp("occurred_at")
		c.str("status", false, 64)
		step := c.str("step", false, maxTaskLen)
		if strings.TrimSpace(step) == "" {
			step = id
		}
		if strings.TrimSpace(step) == "" {
			errs.add(join(p, "step"), "required (or a checkpoint_id)")
		}
		steps = append(steps, step)
		checkpointIDs = append(checkpointIDs, id)
		for _, m := range c.strs("missing_capabilities") {
			if !slices.Contains(missing, m) {
				missing = append(missing, m)
			}
		}
	}

	var outcome object
	if o.has("outcome") {
		if oc, ok := decodeObject(o.m["outcome"], "outcome", errs); ok {
			outcome = oc
			oc.timestamp("occurred_at")
			st := oc.str("status", true, 32)
			if oc.has("status") && !slices.Contains(Statuses, st) {
				errs.add("outcome.status", "must be one of %s, got %q", strings.Join(Statuses, ", "), st)
			}
			if !oc.has("score") {
				errs.add("outcome.score", "required (a number in [0, 1])")
			} else {
				oc.score("score")
			}
			oc.str("comment", false, maxCommentLen)
		}
	}
	var handoff json.RawMessage
	if o.has("handoff") {
		if h, ok := decodeObject(o.m["handoff"], "handoff", errs); ok {
			h.str("summary", false, maxCommentLen)
			h.str("next_action", false, maxCommentLen)
			handoff = o.m["handoff"]
		}
	}
	if len(errs.errs) != n0 {
		return
	}

	meta := map[string]any{"adapted_from": OperatorArtifactKind}
	if sv != "" {
		meta["artifact_schema_version"] = sv
	}
	if operator != "" {
		meta["operator"] = operator
	}
	if timeline != nil {
		meta["timeline"] = timeline
	}
	if len(timeline) > 0 {
		meta["last_checkpoint"] = timeline[len(timeline)-1]
	}
	if handoff != nil {
		meta["handoff"] = handoff
	}
	base := func() map[string]any {
		m := map[string]any{"contract_name": ContractName, "contract_version": ContractVersion, "metadata": meta}
		if source != "" {
			m["source"] = source
		}
		if recordedAt != "" {
			m["recorded_at"] = recordedAt
		}
		return m
	}
	evMeta := map[string]any{"checkpoint_ids": nonNil(checkpointIDs)}
	if len(checkpointIDs) > 0 {
		evMeta["last_checkpoint_id"] = checkpointIDs[len(checkpointIDs)-1]
	}
	if operator != "" {
		evMeta["operator"] = operator
	}
	event := func(kind string) map[string]any {
		ev := map[string]any{"schema_version": EventSchemaVersion, "event_kind": kind, "session_id": sessionID, "task": task, "metadata": evMeta}
		if len(skills) > 0 {
			ev["selected_skill_ids"] = skills
		}
		if len(missing) > 0 {
			ev["missing_capabilities"] = missing
		}
		return ev
	}

	in.Sources = append(in.Sources, data)
	src := len(in.Sources) - 1
	var envs []map[string]any
	started := base()
	sev := event(SessionStarted)
	if len(steps) > 0 {
		sev["steps"] = steps
	}
	if startedAt != "" {
		sev["occurred_at"] = startedAt
	}
	started["event"] = sev
	envs = append(envs, started)
	if outcome.m != nil {
		fb := base()
		fev := event(SessionFeedback)
		for _, k := range []string{"occurred_at", "status", "score", "comment"} {
			if outcome.has(k) {
				fev[k] = outcome.m[k]
			}
		}
		if handoff != nil {
			evMeta2 := map[string]any{"handoff": handoff}
			for k, v := range evMeta {
				evMeta2[k] = v
			}
			fev["metadata"] = evMeta2
		}
		fb["event"] = fev
		envs = append(envs, fb)
	}
	for i, m := range envs {
		p := "adapted[" + strconv.Itoa(i) + "]"
		raw, err := composed(m)
		if err != nil {
			errs.add(p, "%v", err)
			continue
		}
		if env, ok := decodeEnvelope(raw, p, errs); ok {
			in.Items = append(in.Items, &Item{Raw: raw, Env: env, Adapted: true, Form: FormOperator, Source: src, Path: p})
		}
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
