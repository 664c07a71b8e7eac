package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/store"
)

func (s *Server) healthz(w http.ResponseWriter, r *http.Request, _ Principal) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, _ Principal) {
	s.metrics.handler().ServeHTTP(w, r)
}

func (s *Server) openapi(w http.ResponseWriter, r *http.Request, _ Principal) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDoc)
}

// actor is how the audit trail names a token's holder.
func actor(p Principal) string { return "token:" + p.Name }

// --- recall and decisions ---------------------------------------------------

func (s *Server) recall(r *request) (int, any, error) {
	req, err := parseRecall(r.body)
	if err != nil {
		return 0, nil, err
	}
	if err := r.who.useWorkspace(req.Workspace); err != nil {
		return 0, nil, err
	}
	t0 := time.Now()
	resp, err := s.cfg.Store.Recall(r.Context(), req)
	s.metrics.recall.Observe(time.Since(t0).Seconds())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, resp, nil
}

// DecisionResponse answers POST /v1/judge/decisions.
type DecisionResponse struct {
	DecisionID  string           `json:"decision_id"`
	Replayed    bool             `json:"replayed"`
	Memories    []string         `json:"memories"`
	ReviewItems []string         `json:"review_items"`
	Rejected    []RejectedMemory `json:"rejected"`
}

// RejectedMemory is one candidate (or decision field) the write-back
// firewall refused, with the rule that refused it.
type RejectedMemory struct {
	Field string `json:"field"`
	Rule  string `json:"rule"`
}

func (s *Server) writeDecision(r *request) (int, any, error) {
	d, err := parseDecision(r.body)
	if err != nil {
		return 0, nil, err
	}
	// before the store is asked anything, the replay of a key included
	if err := r.who.useWorkspace(d.Workspace); err != nil {
		return 0, nil, err
	}
	d.Creator = r.who.ID
	res, err := s.cfg.Store.WriteDecision(r.Context(), d)
	if err != nil {
		return 0, nil, err
	}
	out := DecisionResponse{DecisionID: res.DecisionID, Replayed: res.Replayed, Memories: nonNil(res.Memories), ReviewItems: nonNil(res.Review), Rejected: []RejectedMemory{}}
	for _, rj := range res.Rejections {
		out.Rejected = append(out.Rejected, RejectedMemory{Field: rj.Field, Rule: rj.Reason})
	}
	code := http.StatusCreated
	if res.Replayed {
		stored, err := s.cfg.Store.GetDecision(r.Context(), res.DecisionID)
		if err != nil {
			return 0, nil, err
		}
		if !r.who.MayRead(stored.Creator) {
			// another token's key: neither its decision nor its id
			return 0, nil, foreignKey(d.IdempotencyKey)
		}
		same, err := sameDecision(d, stored)
		if err != nil {
			return 0, nil, err
		}
		if !same {
			return 0, nil, conflict("idempotency_key", "idempotency_key %q was used for a different decision (%s)", d.IdempotencyKey, stored.DecisionID)
		}
		code, d = http.StatusOK, stored
	} else {
		s.metrics.decisions.WithLabelValues("write", string(d.Decision)).Inc()
	}
	// A replay appends the event too (once per key): a write whose event
	// was lost to a crash gets it on the client's retry.
	ev := map[string]any{"decision_id": res.DecisionID, "workspace_id": d.Workspace, "action_id": d.ActionID, "decision": d.Decision,
		"memories": out.Memories, "review_items": out.ReviewItems, "rejected": len(out.Rejected)}
	if res.Replayed {
		ev = map[string]any{"decision_id": res.DecisionID, "workspace_id": d.Workspace, "action_id": d.ActionID, "decision": d.Decision}
	}
	if err := s.cfg.Events.Append(r.Context(), "decision:"+res.DecisionID, EventDecisionWritten, ev); err != nil {
		return 0, nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "decision stored, event not recorded; retry with the same idempotency_key"}
	}
	return code, out, nil
}

// sameDecision reports whether a retried decision body is the one stored
// under its idempotency key: the stored decision is what PlanWrite made of
// the first body, so the retry is planned the same way and compared.
func sameDecision(d, stored store.Decision) (bool, error) {
	if d.DecisionID != "" && d.DecisionID != stored.DecisionID {
		return false, nil
	}
	d.DecisionID = stored.DecisionID
	if d.CreatedAt.IsZero() {
		d.CreatedAt = stored.CreatedAt
	}
	p, err := store.PlanWrite(d, stored.CreatedAt)
	if err != nil {
		return false, err
	}
	a, err := json.Marshal(p.Decision)
	if err != nil {
		return false, err
	}
	b, err := json.Marshal(stored)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

// foreignKey answers a write or an evaluation whose idempotency key
// another token used, without naming that token's decision.
func foreignKey(key string) error {
	return conflict("idempotency_key", "idempotency_key %q was used for a different action; use a key of your own", key)
}

// noDecision and noApproval answer an id that does not exist and an id
// the caller may not read (Principal.MayRead) alike, so that the API
// does not tell a runtime which ids exist.
func noDecision(id string) error { return notFound("no decision %s", id) }
func noApproval(id string) error { return notFound("no approval %s", id) }

func (s *Server) getDecision(r *request) (int, any, error) {
	id := r.PathValue("decision_id")
	d, err := s.cfg.Store.GetDecision(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (!r.who.MayRead(d.Creator) || !r.who.MayUseWorkspace(d.Workspace)) {
		return 0, nil, noDecision(id)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, d, nil
}

// --- evaluate ---------------------------------------------------------------

// EvaluateResponse answers POST /v1/judge/evaluate.
type EvaluateResponse struct {
	DecisionID        string            `json:"decision_id"`
	Replayed          bool              `json:"replayed"`
	Decision          string            `json:"decision"`
	Reason            string            `json:"reason"`
	RequiredRevision  string            `json:"required_revision,omitempty"`
	RevisedArguments  json.RawMessage   `json:"revised_arguments,omitempty"`
	ApprovalID        string            `json:"approval_id,omitempty"`
	ApprovalStatus    string            `json:"approval_status,omitempty"`
	EnforcementAction string            `json:"enforcement_action,omitempty"`
	RiskClass         string            `json:"risk_class,omitempty"`
	MemoryUsed        []judge.MemoryUse `json:"memory_used"`
	Recall            string            `json:"recall,omitempty"`
	JudgeID           string            `json:"judge_id,omitempty"`
	PolicyVersion     string            `json:"policy_version,omitempty"`
	FailureKind       string            `json:"failure_kind,omitempty"`
	Session           string            `json:"session"`
	Warnings          []string          `json:"warnings,omitempty"`
	// Trust is the monitoring level the call was judged under and what
	// it asked for (in observe mode: what it would have done).
	Trust *judge.TrustNote `json:"trust,omitempty"`
}

func (s *Server) evaluate(r *request) (int, any, error) {
	p, input, session, err := parseProposal(r.body)
	if err != nil {
		return 0, nil, err
	}
	// before the idempotency lookup: a key's existence in another
	// workspace is not told
	if err := r.who.useWorkspace(p.WorkspaceID); err != nil {
		return 0, nil, err
	}
	key := judge.EvaluationKey(p.WorkspaceID, p.IdempotencyKey)
	id := judge.EvaluationDecisionID(key)
	if prev, err := s.cfg.Store.GetDecision(r.Context(), id); err == nil {
		if !r.who.MayRead(prev.Creator) {
			return 0, nil, foreignKey(p.IdempotencyKey)
		}
		return s.replayEvaluation(r, p, session, prev)
	} else if !errors.Is(err, store.ErrNotFound) {
		return 0, nil, err
	}
	// the evaluation is recorded in the session's ledger: only a session
	// the caller may write to (a replay above is the caller's own)
	if s.cfg.Ledger != nil {
		if err := s.useSession(r.Context(), r.who, session); err != nil {
			return 0, nil, err
		}
	}
	p.Context.ToolKind = proposalToolKind(p)
	t0 := time.Now()
	ev := s.engine(r.who).Evaluate(r.Context(), p, input, session)
	s.metrics.evaluate.Observe(time.Since(t0).Seconds())
	d := ev.Decision
	out := EvaluateResponse{DecisionID: ev.DecisionID, Decision: string(d.Outcome), Reason: d.Reason, RequiredRevision: d.RequiredRevision,
		RevisedArguments: ev.Amendment, ApprovalID: d.EscalationID, ApprovalStatus: d.Approval, EnforcementAction: d.EnforcementAction,
		RiskClass: string(d.RiskClass), MemoryUsed: d.MemoriesUsed, Recall: d.Recall, JudgeID: d.JudgeID, PolicyVersion: d.PolicyVersion,
		FailureKind: d.FailureKind, Session: session, Warnings: d.Warnings, Trust: d.Trust}
	if out.MemoryUsed == nil {
		out.MemoryUsed = []judge.MemoryUse{}
	}
	s.metrics.decisions.WithLabelValues("evaluate", out.Decision).Inc()
	for _, w := range d.Warnings {
		if strings.HasPrefix(w, "store write-back") {
			// the judge fails closed on its own; a decision the runtime
			// cannot read back is not acknowledged
			return 0, nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the decision could not be stored: " + w}
		}
	}
	evData := map[string]any{"decision_id": id, "workspace_id": p.WorkspaceID, "action_id": p.ActionID, "decision": out.Decision, "session": session, "tool": p.Tool.Name}
	if out.ApprovalID != "" {
		evData["approval_id"] = out.ApprovalID
		if err := s.cfg.Events.Append(r.Context(), "approval:"+out.ApprovalID+":queued", EventApprovalQueued, evData); err != nil {
			return 0, nil, err
		}
	}
	if err := s.cfg.Events.Append(r.Context(), "decision:"+id, EventDecisionJudged, evData); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, out, nil
}

// replayEvaluation answers a proposal whose idempotency key was judged
// before: the same call gets the stored decision, a different call 409.
func (s *Server) replayEvaluation(r *request, p *judge.ActionProposal, session string, prev store.Decision) (int, any, error) {
	if prev.ActionID != p.ActionID || prev.ArgumentsDigest != p.Action.ArgumentsDigest || prev.ToolName != p.Tool.Name || prev.Session != session {
		return 0, nil, conflict("idempotency_key", "idempotency_key %q was used for a different action (%s)", p.IdempotencyKey, prev.DecisionID)
	}
	out := EvaluateResponse{DecisionID: prev.DecisionID, Replayed: true, Decision: string(prev.Decision), Reason: prev.ReasoningSummary,
		RequiredRevision: prev.RequiredRevision.Summary, Session: session, PolicyVersion: prev.Judge.PolicyVersion, MemoryUsed: []judge.MemoryUse{}}
	for _, u := range prev.MemoryUsed {
		out.MemoryUsed = append(out.MemoryUsed, judge.MemoryUse{MemoryID: u.MemoryID, UsedAs: u.UsedAs})
	}
	if prev.Decision == store.Escalate {
		// the approval the evaluation queued, under its creator's ids
		aid := storeadapter.ApprovalID(prev.Creator, session, p.ActionID)
		if a, err := s.cfg.Store.GetApproval(r.Context(), aid); err == nil && r.who.MayRead(a.Creator) {
			out.ApprovalID, out.ApprovalStatus = a.ID, string(a.Status)
		}
	}
	return http.StatusOK, out, nil
}

// --- inspector and review ---------------------------------------------------

func (s *Server) inspector(r *request) (int, any, error) {
	in, err := store.Inspect(r.Context(), s.cfg.Store, r.PathValue("memory_id"), s.cfg.Now())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, in, nil
}

// QueueItem is one review item with the memory it is about.
type QueueItem struct {
	store.ReviewItem
	Memory store.Memory `json:"memory"`
}

func (s *Server) reviewQueue(r *request) (int, any, error) {
	q := r.URL.Query()
	f := store.ReviewFilter{Status: store.ReviewStatus(q.Get("status")), Limit: 1000}
	if err := enum("status", string(f.Status), []string{"pending", "escalated", "resolved"}, true); err != nil {
		return 0, nil, err
	}
	prio := q.Get("priority")
	if err := enum("priority", prio, []string{"high", "normal"}, true); err != nil {
		return 0, nil, err
	}
	vis := store.Visibility(q.Get("scope"))
	if vis != "" && !vis.Valid() {
		return 0, nil, badRequest("scope", "unknown visibility %q; want personal, project, workspace or org", vis)
	}
	limit, err := intParam(q.Get("limit"), "limit", 100, 1, 1000)
	if err != nil {
		return 0, nil, err
	}
	ws, proj := q.Get("workspace_id"), q.Get("project_id")
	items, err := s.cfg.Store.ListReview(r.Context(), f)
	if err != nil {
		return 0, nil, err
	}
	out := []QueueItem{}
	for _, it := range items {
		if prio != "" && string(it.Priority) != prio {
			continue
		}
		m, err := s.cfg.Store.GetMemory(r.Context(), it.MemoryID)
		if err != nil {
			return 0, nil, err
		}
		if (vis != "" && m.Scope.Visibility != vis) || (ws != "" && m.Scope.Workspace != ws) || (proj != "" && m.Scope.Project != proj) {
			continue
		}
		out = append(out, QueueItem{ReviewItem: it, Memory: m})
		if len(out) == limit {
			break
		}
	}
	return http.StatusOK, map[string]any{"items": out}, nil
}

func (s *Server) reviewAction(r *request) (int, any, error) {
	a, err := parseReview(r.body, r.PathValue("item_id"), actor(r.who))
	if err != nil {
		return 0, nil, err
	}
	m, it, err := s.cfg.Store.Review(r.Context(), a)
	if err != nil {
		return 0, nil, err
	}
	if err := s.cfg.Events.AppendReview(r.Context(), a, m, it); err != nil {
		s.logf("review event: %v", err)
	}
	out := map[string]any{"memory": m}
	if it.ID != "" {
		out["item"] = it
	}
	return http.StatusOK, out, nil
}

// --- approvals ----------------------------------------------------------------

func (s *Server) listApprovals(r *request) (int, any, error) {
	st := store.ApprovalStatus(r.URL.Query().Get("status"))
	if st != "" && !slices.Contains(store.ApprovalStatuses, st) {
		return 0, nil, badRequest("status", "unknown approval status %q", st)
	}
	as, err := s.cfg.Store.ListApprovals(r.Context(), st)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"approvals": nonNil(as)}, nil
}

func (s *Server) getApproval(r *request) (int, any, error) {
	id := r.PathValue("approval_id")
	a, err := s.cfg.Store.GetApproval(r.Context(), id)
	// an approval the judge queued records no workspace: its creator,
	// whose evaluation was in a workspace of its own, confines it
	if errors.Is(err, store.ErrNotFound) || err == nil && (!r.who.MayRead(a.Creator) || a.Workspace != "" && !r.who.MayUseWorkspace(a.Workspace)) {
		return 0, nil, noApproval(id)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, a, nil
}

func (s *Server) approvalAction(r *request) (int, any, error) {
	res, err := parseApproval(r.body, actor(r.who))
	if err != nil {
		return 0, nil, err
	}
	a, err := s.cfg.Store.ResolveApproval(r.Context(), r.PathValue("approval_id"), res)
	if err != nil {
		return 0, nil, err
	}
	if err := s.cfg.Events.AppendApproval(r.Context(), a); err != nil {
		s.logf("approval event: %v", err)
	}
	return http.StatusOK, a, nil
}

// --- sessions ---------------------------------------------------------------

// SessionInfo is one ledger session.
type SessionInfo struct {
	Session     string    `json:"session"`
	LedgerBytes int64     `json:"ledger_bytes"`
	ModifiedAt  time.Time `json:"modified_at"`
}

func (s *Server) listSessions(r *request) (int, any, error) {
	ids, err := ledger.Sessions(s.cfg.Home)
	if err != nil {
		return 0, nil, err
	}
	out := []SessionInfo{}
	for _, id := range ids {
		st, err := os.Stat(s.cfg.Home.LedgerPath(id))
		if err != nil {
			continue
		}
		out = append(out, SessionInfo{Session: id, LedgerBytes: st.Size(), ModifiedAt: st.ModTime().UTC()})
	}
	return http.StatusOK, map[string]any{"sessions": out}, nil
}

func (s *Server) sessionPath(r *request) (string, error) {
	id := r.PathValue("session_id")
	if !home.ValidSessionID(id) {
		return "", badRequest("session_id", "not a session id")
	}
	if _, err := os.Stat(s.cfg.Home.LedgerPath(id)); errors.Is(err, fs.ErrNotExist) {
		return "", notFound("no ledger for session %s", id)
	} else if err != nil {
		return "", err
	}
	return id, nil
}

func (s *Server) sessionEntries(r *request) (int, any, error) {
	id, err := s.sessionPath(r)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	after, err := intParam(q.Get("after"), "after", -1, -1, 1<<62)
	if err != nil {
		return 0, nil, err
	}
	limit, err := intParam(q.Get("limit"), "limit", 100, 1, 1000)
	if err != nil {
		return 0, nil, err
	}
	f, err := os.Open(s.cfg.Home.LedgerPath(id))
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	entries := []*ledger.Entry{}
	more := false
	for sc.Scan() {
		e, err := ledger.ParseEntry(sc.Bytes())
		if err != nil {
			return 0, nil, &Error{Status: http.StatusConflict, Code: CodeConflict, Message: "ledger line does not parse (run verify): " + err.Error()}
		}
		if int64(e.Seq) <= int64(after) && after >= 0 {
			continue
		}
		if len(entries) == limit {
			more = true
			break
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return 0, nil, err
	}
	out := map[string]any{"session": id, "entries": entries}
	if more && len(entries) > 0 {
		out["next_after"] = entries[len(entries)-1].Seq
	}
	return http.StatusOK, out, nil
}

func (s *Server) verifySession(r *request) (int, any, error) {
	id, err := s.sessionPath(r)
	if err != nil {
		return 0, nil, err
	}
	opts := ledger.VerifyOptions{}
	if keys, err := ledger.LoadKeys(s.cfg.Home); err == nil {
		opts.Keys = keys
		opts.VerifierKey = keys.VerifierKey()
	}
	rep, err := ledger.Verify(s.cfg.Home, id, opts)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"ok": rep.OK, "sessions": []*ledger.Report{rep}}, nil
}

// --- tokens -------------------------------------------------------------------

// TokenInfo is a token as the API shows it: never its secret or hash.
type TokenInfo struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// Workspaces is the token's binding; absent for an unbound token.
	Workspaces []string `json:"workspaces,omitzero"`
}

func tokenInfo(t Token) TokenInfo {
	return TokenInfo{ID: t.ID, Name: t.Name, Role: t.Role, CreatedAt: t.CreatedAt, RevokedAt: t.RevokedAt, Workspaces: t.Workspaces}
}

func (s *Server) listTokens(r *request) (int, any, error) {
	ts, err := s.cfg.Tokens.List()
	if err != nil {
		return 0, nil, err
	}
	out := []TokenInfo{}
	for _, t := range ts {
		out = append(out, tokenInfo(t))
	}
	return http.StatusOK, map[string]any{"tokens": out}, nil
}

func (s *Server) createToken(r *request) (int, any, error) {
	var b struct {
		Name       string   `json:"name"`
		Role       Role     `json:"role"`
		Workspaces []string `json:"workspaces,omitempty"`
	}
	if err := decode(r.body, &b, "name", "role"); err != nil {
		return 0, nil, err
	}
	if !b.Role.Valid() {
		return 0, nil, badRequest("role", "unknown value %q; want runtime, reviewer or admin", b.Role)
	}
	if !validName(b.Name) {
		return 0, nil, badRequest("name", "1-64 characters from [A-Za-z0-9._-]")
	}
	if gjson.GetBytes(r.body, "workspaces").Exists() && b.Workspaces == nil {
		return 0, nil, badRequest("workspaces", "want an array of workspace ids")
	}
	if err := ValidateWorkspaces(b.Role, b.Workspaces); err != nil {
		return 0, nil, badRequest("workspaces", "%v", err)
	}
	t, secret, err := s.cfg.Tokens.CreateBound(b.Name, b.Role, b.Workspaces, s.cfg.Now())
	if errors.Is(err, ErrTokenName) {
		return 0, nil, conflict("name", "%v", err)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"token": secret, "info": tokenInfo(t)}, nil
}

func (s *Server) revokeToken(r *request) (int, any, error) {
	t, err := s.cfg.Tokens.Revoke(r.PathValue("token_id"), s.cfg.Now())
	if errors.Is(err, ErrNoToken) {
		return 0, nil, notFound("%v", err)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, tokenInfo(t), nil
}

// --- helpers ------------------------------------------------------------------

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func intParam(v, name string, def, lo, hi int64) (int, error) {
	if v == "" {
		return int(def), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest(name, "want an integer from %d to %d", lo, hi)
	}
	return int(n), nil
}
