package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docket/docket/ledger"
	"github.com/docket/docket/server"
	"github.com/docket/docket/store"
	"github.com/docket/docket/trust"
)

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// call runs an API route as the session's principal and decodes its JSON.
func (c *Console) call(ctx context.Context, s *session, method, target string, body any, out any) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
	}
	raw, err := c.srv.Call(ctx, s.who, method, target, b)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decode %s: %w", target, err)
	}
	return nil
}

// --- sessions ------------------------------------------------------------------

// Kanban columns.
const (
	ColWorking  = "working"
	ColBlocked  = "blocked"
	ColApproval = "approval"
	ColDone     = "done"
)

type claimView struct {
	Type      string
	Status    string
	Validator string
	PassSeq   uint64
	WriteSeq  uint64
	Sentences []string
	Why       string
}

type entryView struct {
	Seq       uint64
	Kind      string
	Tool      string
	Outcome   string
	Hash      string
	Time      string
	Agent     string
	Runtime   string
	ToolUseID string
	Body      json.RawMessage
	Artifacts []artifactView
}

type artifactView struct {
	Name      string
	Text      string
	Truncated bool
	Size      int64
}

type sessionView struct {
	ID        string
	Column    string
	Runtime   string
	Agents    []string
	Entries   []entryView
	ToolCalls int
	Blocks    int
	Escalates int
	LastTool  string
	LastAt    string
	Claims    []claimView // from the newest gate decision with claims
	GateSeq   uint64
	Approvals []store.Approval
	Verify    *ledger.Report
	VerifyErr string
	Modified  time.Time
}

// MaxArtifact bounds an artifact shown inline.
const MaxArtifact = 16 << 10

// MaxEntries bounds the entries read for one session.
const MaxEntries = 5000

var whyNot = map[string]string{
	"missing":     "no validator_pass for this claim in the ledger",
	"stale":       "the newest allowed pass precedes a later write",
	"not_allowed": "passes exist, none from a validator the binding allows",
	"no_binding":  "the policy allows no validator for this claim",
}

func (c *Console) readSession(ctx context.Context, s *session, id string, withArtifacts bool) (*sessionView, error) {
	v := &sessionView{ID: id, Column: ColWorking}
	after := -1
	for len(v.Entries) < MaxEntries {
		var page struct {
			Entries   []*ledger.Entry `json:"entries"`
			NextAfter *uint64         `json:"next_after"`
		}
		target := "/v1/sessions/" + url.PathEscape(id) + "?limit=1000"
		if after >= 0 {
			target += "&after=" + strconv.Itoa(after)
		}
		if err := c.call(ctx, s, "GET", target, nil, &page); err != nil {
			return nil, err
		}
		for _, e := range page.Entries {
			v.add(e)
			if withArtifacts && e.Manifest != "" {
				v.Entries[len(v.Entries)-1].Artifacts = c.artifacts(e)
			}
		}
		if page.NextAfter == nil {
			break
		}
		after = int(*page.NextAfter)
	}
	return v, nil
}

func (v *sessionView) add(e *ledger.Entry) {
	var body map[string]any
	json.Unmarshal(e.Body, &body)
	ev := entryView{Seq: e.Seq, Kind: string(e.Kind), Tool: e.Tool, Hash: e.Hash, Time: e.Time, Agent: e.AgentID, Runtime: e.Runtime, Outcome: outcome(e.Kind, body),
		ToolUseID: e.ToolUseID, Body: e.Body}
	v.Entries = append(v.Entries, ev)
	if e.Runtime != "" {
		v.Runtime = e.Runtime
	}
	if e.AgentID != "" && !contains(v.Agents, e.AgentID) {
		v.Agents = append(v.Agents, e.AgentID)
	}
	v.LastAt = e.Time
	switch e.Kind {
	case ledger.KindToolCall, ledger.KindToolFailure:
		v.ToolCalls++
		v.LastTool = e.Tool
	case ledger.KindJudgeDecision:
		if str(body, "decision") == "escalate" || str(body, "outcome") == "escalate" {
			v.Escalates++
		}
	case ledger.KindGateDecision:
		d := str(body, "decision")
		if d == "block" {
			v.Blocks++
			v.Column = ColBlocked
		} else if d == "allow" {
			v.Column = ColDone
		}
		if cl, ok := body["claims"].([]any); ok {
			v.Claims, v.GateSeq = nil, e.Seq
			for _, x := range cl {
				m, _ := x.(map[string]any)
				cv := claimView{Type: str(m, "type"), Status: str(m, "status"), Validator: str(m, "validator"),
					PassSeq: uint64(num(m, "pass_seq")), WriteSeq: uint64(num(m, "write_seq"))}
				if ss, ok := m["sentences"].([]any); ok {
					for _, s := range ss {
						if t, ok := s.(string); ok {
							cv.Sentences = append(cv.Sentences, t)
						}
					}
				}
				if cv.Status != "supported" {
					cv.Why = whyNot[cv.Status]
					if cv.Why == "" {
						cv.Why = cv.Status
					}
				}
				v.Claims = append(v.Claims, cv)
			}
		}
	}
}

func outcome(k ledger.Kind, body map[string]any) string {
	for _, f := range []string{"decision", "outcome", "result"} {
		if s := str(body, f); s != "" {
			if cl := str(body, "claim"); cl != "" {
				return s + " (" + cl + ")"
			}
			return s
		}
	}
	switch k {
	case ledger.KindToolCall, ledger.KindToolFailure:
		out := "ok"
		if b, _ := body["failed"].(bool); b || k == ledger.KindToolFailure {
			out = "failed"
		}
		if x, ok := body["exit_code"].(float64); ok {
			out += fmt.Sprintf(", exit %d", int(x))
		}
		return out
	}
	return ""
}

// artifacts reads an entry's inline-viewable artifacts, size-limited;
// OpenArtifact checks each against the entry's manifest digest.
func (c *Console) artifacts(e *ledger.Entry) []artifactView {
	var out []artifactView
	for _, name := range []string{"input.json", "stdout", "stderr", "error"} {
		f, err := ledger.OpenArtifact(c.h, e, name)
		if err != nil {
			continue
		}
		size, _ := f.Seek(0, io.SeekEnd)
		f.Seek(0, io.SeekStart)
		b, _ := io.ReadAll(io.LimitReader(f, MaxArtifact))
		f.Close()
		out = append(out, artifactView{Name: name, Text: strings.ToValidUTF8(string(b), "\uFFFD"), Truncated: size > MaxArtifact, Size: size})
	}
	return out
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func num(m map[string]any, k string) float64 {
	f, _ := m[k].(float64)
	return f
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func (c *Console) pendingApprovals(ctx context.Context, s *session) ([]store.Approval, error) {
	var out struct {
		Approvals []store.Approval `json:"approvals"`
	}
	err := c.call(ctx, s, "GET", "/v1/approvals?status=pending", nil, &out)
	return out.Approvals, err
}

func (c *Console) verify(ctx context.Context, s *session, v *sessionView) {
	var out struct {
		OK       bool             `json:"ok"`
		Sessions []*ledger.Report `json:"sessions"`
	}
	if err := c.call(ctx, s, "GET", "/v1/sessions/"+url.PathEscape(v.ID)+"/verify", nil, &out); err != nil {
		v.VerifyErr = err.Error()
		return
	}
	if len(out.Sessions) == 1 {
		v.Verify = out.Sessions[0]
	}
}

// --- overview ------------------------------------------------------------------

type agentCard struct {
	Name      string
	Sessions  int
	ToolCalls int
	Blocks    int
	Escalates int
	Pending   int
	runtimes  []string
	// Trust are the monitoring levels of the trust agents the card
	// stands for (runtime/agent-type); none known means level 0.
	Trust []*agentTrust
}

// agentTrust is one agent's monitoring levels: its overall level and
// score (scope "*") and a row per tool and risk class.
type agentTrust struct {
	Agent     string
	Level     int
	LevelName string
	Score     string
	Rows      []trustRow
}

type trustRow struct {
	Scope     string
	Level     int
	LevelName string
	Score     string
	Actions   int
	Changed   time.Time // when the level was last set
}

// trustOverview is what the overview shows of trust levels.
type trustOverview struct {
	Mode     string
	Clock    time.Time
	Warnings []string
}

// trustAgents groups the trust state's keys by agent, sorted.
func trustAgents(st *trust.State) []*agentTrust {
	by := map[string]*agentTrust{}
	var out []*agentTrust
	for _, ks := range st.Keys {
		a := by[ks.Agent]
		if a == nil {
			a = &agentTrust{Agent: ks.Agent, LevelName: trust.LevelName(0), Score: "—"}
			by[ks.Agent] = a
			out = append(out, a)
		}
		row := trustRow{Scope: ks.Scope, Level: ks.Level, LevelName: trust.LevelName(ks.Level), Score: fmt.Sprintf("%.2f", ks.Score), Actions: ks.Actions, Changed: ks.Since}
		if ks.Scope == trust.AllScope {
			a.Level, a.LevelName, a.Score = row.Level, row.LevelName, row.Score
		}
		a.Rows = append(a.Rows, row)
	}
	for _, a := range out {
		sort.Slice(a.Rows, func(i, j int) bool {
			// "*" first, then the classes, then the tools
			if (a.Rows[i].Scope == trust.AllScope) != (a.Rows[j].Scope == trust.AllScope) {
				return a.Rows[i].Scope == trust.AllScope
			}
			return a.Rows[i].Scope < a.Rows[j].Scope
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out
}

// standsFor reports whether the card is the trust agent's: the same
// name, the runtime's card for its main agent, or the agent's card in
// one of its runtime's sessions.
func (a *agentCard) standsFor(agent string) bool {
	if a.Name == agent {
		return true
	}
	rt, typ, ok := strings.Cut(agent, "/")
	if !ok {
		return false
	}
	if typ == "main" && a.Name == rt {
		return true
	}
	return a.Name == typ && contains(a.runtimes, rt)
}

type column struct {
	Key, Title, Help string
	Sessions         []*sessionView
}

// MaxBoardSessions bounds the Kanban to the most recently active sessions.
const MaxBoardSessions = 100

type overviewData struct {
	Hidden    int // older sessions left off the board
	Trust     trustOverview
	Columns   []*column
	Agents    []*agentCard
	Events    []eventView
	AfterSeq  int64
	Approvals int
}

type eventView struct {
	Seq  int64
	At   string
	Type string
	Text string
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	var list struct {
		Sessions []server.SessionInfo `json:"sessions"`
	}
	if err := c.call(ctx, s, "GET", "/v1/sessions", nil, &list); err != nil {
		c.fail(w, r, s, "Overview", err)
		return
	}
	pend, err := c.pendingApprovals(ctx, s)
	if err != nil {
		c.fail(w, r, s, "Overview", err)
		return
	}
	d := overviewData{Approvals: len(pend), Columns: []*column{
		{Key: ColWorking, Title: "Working", Help: "tool calls, no gate decision yet"},
		{Key: ColBlocked, Title: "Blocked at the gate", Help: "claims without evidence"},
		{Key: ColApproval, Title: "Waiting for approval", Help: "an escalation is pending"},
		{Key: ColDone, Title: "Done, evidence verified", Help: "the gate let it stop and the ledger verifies"},
	}}
	sort.Slice(list.Sessions, func(i, j int) bool { return list.Sessions[i].ModifiedAt.After(list.Sessions[j].ModifiedAt) })
	if len(list.Sessions) > MaxBoardSessions {
		d.Hidden = len(list.Sessions) - MaxBoardSessions
		list.Sessions = list.Sessions[:MaxBoardSessions]
	}
	agents := map[string]*agentCard{}
	for _, si := range list.Sessions {
		v, err := c.readSession(ctx, s, si.Session, false)
		if err != nil {
			v = &sessionView{ID: si.Session, Column: ColWorking, VerifyErr: err.Error()}
		}
		v.Modified = si.ModifiedAt
		for _, a := range pend {
			if a.Session == v.ID {
				v.Approvals = append(v.Approvals, a)
			}
		}
		if len(v.Approvals) > 0 {
			v.Column = ColApproval
		}
		if v.Column == ColDone {
			c.verify(ctx, s, v)
			if v.Verify == nil || !v.Verify.OK {
				v.Column = ColBlocked // done is only done with verified evidence
			}
		}
		for _, col := range d.Columns {
			if col.Key == v.Column {
				col.Sessions = append(col.Sessions, v)
			}
		}
		names := v.Agents
		if len(names) == 0 {
			rt := v.Runtime
			if rt == "" {
				rt = "unknown runtime"
			}
			names = []string{rt}
		}
		for _, n := range names {
			a := agents[n]
			if a == nil {
				a = &agentCard{Name: n}
				agents[n] = a
			}
			if v.Runtime != "" && !contains(a.runtimes, v.Runtime) {
				a.runtimes = append(a.runtimes, v.Runtime)
			}
			a.Sessions++
			a.ToolCalls += v.ToolCalls
			a.Blocks += v.Blocks
			a.Escalates += v.Escalates
			a.Pending += len(v.Approvals)
		}
	}
	for _, a := range agents {
		d.Agents = append(d.Agents, a)
	}
	sort.Slice(d.Agents, func(i, j int) bool { return d.Agents[i].Name < d.Agents[j].Name })
	c.addTrust(&d)
	last, err := c.srv.LastEventSeq(ctx)
	if err == nil {
		d.AfterSeq = last
		from := last - 30
		if from < 0 {
			from = 0
		}
		evs, _ := c.srv.EventsAfter(ctx, from, 30)
		for i := len(evs) - 1; i >= 0; i-- {
			d.Events = append(d.Events, eventText(evs[i]))
		}
	}
	c.render(w, r, http.StatusOK, "overview", s, page{Title: "Overview", Nav: "overview", Data: d})
}

// addTrust puts each trust agent's levels on its card; an agent trust
// knows with no session on the board gets a card of its own.
func (c *Console) addTrust(d *overviewData) {
	st, p, warn, err := c.srv.TrustLevels(c.Now())
	d.Trust = trustOverview{Mode: p.Mode, Warnings: warn}
	if err != nil {
		d.Trust.Warnings = append(d.Trust.Warnings, err.Error())
		return
	}
	d.Trust.Clock = st.Clock
	for _, at := range trustAgents(st) {
		placed := false
		for _, a := range d.Agents {
			if a.standsFor(at.Agent) {
				a.Trust = append(a.Trust, at)
				placed = true
			}
		}
		if !placed {
			d.Agents = append(d.Agents, &agentCard{Name: at.Agent, Trust: []*agentTrust{at}})
		}
	}
	sort.Slice(d.Agents, func(i, j int) bool { return d.Agents[i].Name < d.Agents[j].Name })
}

// eventText is an event as the live log shows it; static/live.js builds
// the same line from the SSE data.
func eventText(e server.Event) eventView {
	var m map[string]any
	json.Unmarshal(e.Data, &m)
	parts := []string{}
	for _, k := range []string{"session", "kind", "tool", "decision", "action", "status", "approval_id", "memory_id"} {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				parts = append(parts, v)
			}
		}
	}
	if sq, ok := m["seq"].(float64); ok {
		parts = append(parts, "#"+strconv.Itoa(int(sq)))
	}
	return eventView{Seq: e.Seq, At: e.At.UTC().Format("15:04:05"), Type: e.Type, Text: strings.Join(parts, " · ")}
}

// live streams the event log to the overview's live log.
func (c *Console) live(w http.ResponseWriter, r *http.Request, s *session) {
	c.srv.ServeEvents(w, r)
}

// --- session page ---------------------------------------------------------------

func (c *Console) sessionPage(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	v, err := c.readSession(r.Context(), s, id, true)
	if err != nil {
		c.fail(w, r, s, "Session "+id, err)
		return
	}
	c.verify(r.Context(), s, v)
	if pend, err := c.pendingApprovals(r.Context(), s); err == nil {
		for _, a := range pend {
			if a.Session == id {
				v.Approvals = append(v.Approvals, a)
			}
		}
	}
	c.render(w, r, http.StatusOK, "session", s, page{Title: "Session " + id, Nav: "overview", Data: v})
}

// --- review queue ------------------------------------------------------------------

type reviewData struct {
	Items   []server.QueueItem
	Status  string
	Actions []string
}

func (c *Console) reviewPage(w http.ResponseWriter, r *http.Request, s *session) {
	status := r.URL.Query().Get("status")
	if status == "" {
		status = "pending"
	}
	var out struct {
		Items []server.QueueItem `json:"items"`
	}
	if err := c.call(r.Context(), s, "GET", "/v1/review-queue?limit=200&status="+url.QueryEscape(status), nil, &out); err != nil {
		c.fail(w, r, s, "Review queue", err)
		return
	}
	c.render(w, r, http.StatusOK, "review", s, page{Title: "Review queue", Nav: "review", Data: reviewData{Items: out.Items, Status: status}})
}

// reviewPost turns a review form into the API's review action body.
func (c *Console) reviewPost(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	f := r.PostForm
	body := map[string]string{"action": f.Get("action")}
	for _, k := range []string{"note", "as", "summary", "content", "visibility", "project_id", "other_memory_id"} {
		if v := strings.TrimSpace(f.Get(k)); v != "" {
			body[k] = v
		}
	}
	var out struct {
		Memory store.Memory `json:"memory"`
	}
	err := c.call(r.Context(), s, "POST", "/v1/review-queue/"+url.PathEscape(id)+"/actions", body, &out)
	if err != nil {
		c.setFlash(s, fmt.Sprintf("%s on %s failed: %v", body["action"], id, err), false)
	} else {
		c.setFlash(s, fmt.Sprintf("%s on %s done: memory %s is now %s (%s)", body["action"], id, out.Memory.ID, out.Memory.UsePolicy, out.Memory.Provenance.Status), true)
	}
	back := "/review"
	if f.Get("back") == "notes" {
		back = "/notes"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// --- notes -------------------------------------------------------------------------

type notesGroup struct {
	Scope string
	Notes []store.Memory
}

// notesPage lists the standing instructions: confirmed, instruction-grade,
// active memories (what recall hands the judge as policy hits), by
// project, each editable with the review actions.
func (c *Console) notesPage(w http.ResponseWriter, r *http.Request, s *session) {
	var out struct {
		Items []server.QueueItem `json:"items"`
	}
	if err := c.call(r.Context(), s, "GET", "/v1/review-queue?limit=1000&status=resolved", nil, &out); err != nil {
		c.fail(w, r, s, "Notes", err)
		return
	}
	groups := map[string]*notesGroup{}
	seen := map[string]bool{}
	var order []string
	for _, it := range out.Items {
		m := it.Memory
		if seen[m.ID] || m.UsePolicy != store.Instruction || m.Lifecycle != store.Active || m.Freshness.Stale {
			continue
		}
		seen[m.ID] = true
		key := m.Scope.Workspace
		if m.Scope.Project != "" {
			key += " / " + m.Scope.Project
		}
		g := groups[key]
		if g == nil {
			g = &notesGroup{Scope: key}
			groups[key] = g
			order = append(order, key)
		}
		g.Notes = append(g.Notes, m)
	}
	sort.Strings(order)
	var d []*notesGroup
	for _, k := range order {
		d = append(d, groups[k])
	}
	c.render(w, r, http.StatusOK, "notes", s, page{Title: "Notes", Nav: "notes", Data: d})
}

// --- memory inspector -------------------------------------------------------------

func (c *Console) memoryPage(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	var in store.Inspection
	if err := c.call(r.Context(), s, "GET", "/v1/memories/"+url.PathEscape(id)+"/inspector", nil, &in); err != nil {
		c.fail(w, r, s, "Memory "+id, err)
		return
	}
	c.render(w, r, http.StatusOK, "memory", s, page{Title: "Memory " + id, Nav: "review", Data: in})
}

// --- approvals ---------------------------------------------------------------------

type approvalsData struct {
	Pending []pendingView
	Recent  []store.Approval
}

// pendingView is a pending approval with the judge's stored decision on
// the proposal, pretty-printed.
type pendingView struct {
	store.Approval
	Proposal    string
	ProposalSeq uint64
	ProposalErr string
}

// proposal finds the judge_decision ledger entry that escalated the
// approval (same session and tool use) and shows it: the judge's record
// of the proposal (its proposal field when the entry carries one).
func (c *Console) proposal(ctx context.Context, s *session, pv *pendingView) {
	if pv.Session == "" {
		pv.ProposalErr = "the approval names no session"
		return
	}
	v, err := c.readSession(ctx, s, pv.Session, false)
	if err != nil {
		pv.ProposalErr = err.Error()
		return
	}
	for i := len(v.Entries) - 1; i >= 0; i-- {
		e := v.Entries[i]
		if e.Kind != string(ledger.KindJudgeDecision) || e.ToolUseID != pv.ToolUseID || e.Tool != pv.Tool {
			continue
		}
		var body struct {
			Proposal json.RawMessage `json:"proposal"`
		}
		raw := []byte(e.Body)
		if json.Unmarshal(e.Body, &body) == nil && len(body.Proposal) > 0 && string(body.Proposal) != "null" {
			raw = body.Proposal
		}
		var buf bytes.Buffer
		json.Indent(&buf, raw, "", "  ")
		pv.Proposal, pv.ProposalSeq = buf.String(), e.Seq
		return
	}
	pv.ProposalErr = "no judge_decision entry for this call in the session's ledger"
}

func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, s *session) {
	pend, err := c.pendingApprovals(r.Context(), s)
	if err != nil {
		c.fail(w, r, s, "Approvals", err)
		return
	}
	var all struct {
		Approvals []store.Approval `json:"approvals"`
	}
	if err := c.call(r.Context(), s, "GET", "/v1/approvals", nil, &all); err != nil {
		c.fail(w, r, s, "Approvals", err)
		return
	}
	d := approvalsData{}
	for _, a := range pend {
		pv := pendingView{Approval: a}
		c.proposal(r.Context(), s, &pv)
		d.Pending = append(d.Pending, pv)
	}
	for _, a := range all.Approvals {
		if a.Status != store.ApprovalPending && len(d.Recent) < 50 {
			d.Recent = append(d.Recent, a)
		}
	}
	c.render(w, r, http.StatusOK, "approvals", s, page{Title: "Approvals", Nav: "approvals", Data: d})
}

func (c *Console) approvalPost(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PathValue("id")
	f := r.PostForm
	body := map[string]any{"action": f.Get("action")}
	if v := strings.TrimSpace(f.Get("note")); v != "" {
		body["note"] = v
	}
	if v := strings.TrimSpace(f.Get("owner")); v != "" {
		body["owner"] = v
	}
	if f.Get("action") == "modify" {
		body["arguments"] = json.RawMessage(f.Get("arguments"))
		if !json.Valid([]byte(f.Get("arguments"))) {
			c.setFlash(s, "modify on "+id+" failed: the arguments are not JSON", false)
			http.Redirect(w, r, "/approvals", http.StatusSeeOther)
			return
		}
	}
	var out store.Approval
	if err := c.call(r.Context(), s, "POST", "/v1/approvals/"+url.PathEscape(id)+"/actions", body, &out); err != nil {
		c.setFlash(s, fmt.Sprintf("%s on %s failed: %v", f.Get("action"), id, err), false)
	} else {
		c.setFlash(s, fmt.Sprintf("%s: approval %s is now %s", f.Get("action"), out.ID, out.Status), true)
	}
	http.Redirect(w, r, "/approvals", http.StatusSeeOther)
}
