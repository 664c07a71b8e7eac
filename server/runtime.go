package server

// Runtime routes for runtimes without hook binaries (the OpenClaw
// plugin): the tool-result ledger entry docket-ledger writes, and the
// claim gate docket-gate runs at a stop, both over HTTP. They add no
// decision logic: the entry is the ledger's, the decision the gate's. A
// runtime token reaches only the sessions it owns (owners.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/docket/docket/gate"
	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/ledger"
	"github.com/tidwall/gjson"
)

func init() {
	routes = append(routes,
		route{method: "POST", path: "/v1/ledger/{session_id}/entries", role: RoleRuntime, jsonH: (*Server).ledgerEntry, body: true},
		route{method: "POST", path: "/v1/gate/{session_id}/check", role: RoleRuntime, jsonH: (*Server).gateCheck, body: true},
	)
}

// RuntimeName is the ledger's runtime field for entries the runtime
// routes write when the body names none.
const RuntimeName = "openclaw"

// ledgerEntryBody is POST /v1/ledger/{session_id}/entries: one finished
// tool call, as a runtime's after-tool-call hook sees it.
type ledgerEntryBody struct {
	Runtime    string          `json:"runtime,omitempty"`
	ToolName   string          `json:"tool_name"`
	ToolCallID string          `json:"tool_call_id"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      string          `json:"error,omitempty"`
	DurationMS *int64          `json:"duration_ms,omitempty"`
	Cwd        string          `json:"cwd,omitempty"`
	RunID      string          `json:"run_id,omitempty"`
	SessionKey string          `json:"session_key,omitempty"`
	AgentID    string          `json:"agent_id,omitempty"`
	ExitCode   *int            `json:"exit_code,omitempty"`
}

// LedgerEntryResponse answers POST /v1/ledger/{session_id}/entries.
type LedgerEntryResponse struct {
	Session string `json:"session"`
	Seq     uint64 `json:"seq"`
	Kind    string `json:"kind"`
	Hash    string `json:"hash"`
}

// maxRuntimeField bounds the short string fields of the runtime routes.
const maxRuntimeField = 512

func runtimeSession(r *request) (string, error) {
	id := r.PathValue("session_id")
	if !home.ValidSessionID(id) {
		return "", badRequest("session_id", "must be 1-128 characters from [A-Za-z0-9._-], not starting with a dot")
	}
	return id, nil
}

func shortField(field, v string) error {
	if len(v) > maxRuntimeField {
		return badRequest(field, "longer than %d bytes", maxRuntimeField)
	}
	if strings.ContainsAny(v, "\x00\n\r") {
		return badRequest(field, "contains a control character")
	}
	return nil
}

func absCwd(cwd string) error {
	if cwd != "" && (!filepath.IsAbs(cwd) || filepath.Clean(cwd) != cwd) {
		return badRequest("cwd", "want a clean absolute path")
	}
	return nil
}

// parseLedgerEntry decodes and validates a ledger entry body.
func parseLedgerEntry(body []byte) (ledgerEntryBody, error) {
	var b ledgerEntryBody
	if err := decode(body, &b, "tool_name", "tool_call_id"); err != nil {
		return b, err
	}
	for _, f := range []struct{ name, v string }{
		{"runtime", b.Runtime}, {"tool_name", b.ToolName}, {"tool_call_id", b.ToolCallID}, {"run_id", b.RunID},
		{"session_key", b.SessionKey}, {"agent_id", b.AgentID},
	} {
		if err := shortField(f.name, f.v); err != nil {
			return b, err
		}
	}
	if b.Runtime != "" && !validName(b.Runtime) {
		return b, badRequest("runtime", "1-64 characters from [A-Za-z0-9._-]")
	}
	if len(b.Params) > 0 {
		if p := bytes.TrimSpace(b.Params); len(p) == 0 || p[0] != '{' {
			return b, badRequest("params", "not a JSON object")
		}
	}
	if b.DurationMS != nil && *b.DurationMS < 0 {
		return b, badRequest("duration_ms", "negative")
	}
	if err := absCwd(b.Cwd); err != nil {
		return b, err
	}
	return b, nil
}

// ledgerEntry appends one tool_call (or tool_failure) entry: the entry
// docket-ledger writes for a PostToolUse, with the call's params, result,
// error and duration as artifacts.
func (s *Server) ledgerEntry(r *request) (int, any, error) {
	session, err := runtimeSession(r)
	if err != nil {
		return 0, nil, err
	}
	b, err := parseLedgerEntry(r.body)
	if err != nil {
		return 0, nil, err
	}
	if s.cfg.Ledger == nil {
		return 0, nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "this server keeps no ledger"}
	}
	if err := s.useSession(r.Context(), r.who, session); err != nil {
		return 0, nil, err
	}
	rec := runtimeRecord(b, r.body)
	e, err := s.cfg.Ledger.Append(session, rec)
	if err != nil {
		return 0, nil, fmt.Errorf("append ledger entry: %w", err)
	}
	return http.StatusCreated, LedgerEntryResponse{Session: session, Seq: e.Seq, Kind: string(e.Kind), Hash: e.Hash}, nil
}

// runtimeRecord is the ledger record of a finished call: tool_failure
// when the runtime reported an error, or an exit status other than 0.
// A shell call whose result carries no exit status is recorded with
// exit_unknown, never as a success.
func runtimeRecord(b ledgerEntryBody, raw []byte) ledger.Record {
	rt := b.Runtime
	if rt == "" {
		rt = RuntimeName
	}
	kind := hooks.KindOf(b.ToolName)
	mcp := ""
	if rt == RuntimeName {
		if mcp = hooks.OpenClawMCPName(b.ToolName); mcp != "" {
			kind = hooks.KindMCP
		}
	}
	exit := b.ExitCode
	if exit == nil && len(b.Result) > 0 {
		for _, p := range []string{"details.exitCode", "details.exit_code", "exitCode", "exit_code"} {
			if v := gjson.GetBytes(b.Result, p); v.Type == gjson.Number && v.Num == float64(int(v.Num)) {
				n := int(v.Num)
				exit = &n
				break
			}
		}
	}
	failed := b.Error != "" || (exit != nil && *exit != 0)
	if st := gjson.GetBytes(b.Result, "details.status").Str; st == "error" || st == "failed" || st == "blocked" {
		failed = true
	}
	body := map[string]any{"failed": failed, "tool_kind": string(kind)}
	if mcp != "" {
		body["mcp_name"] = mcp // as docket-ledger records Gemini CLI's
	}
	if exit != nil {
		body["exit_code"] = *exit
	} else if kind == hooks.KindShell && !failed {
		body["exit_unknown"] = true
	}
	if b.Error != "" {
		msg := b.Error
		if len(msg) > 500 {
			msg = strings.ToValidUTF8(msg[:500], "") + "…"
		}
		body["error"] = msg
	}
	if b.DurationMS != nil {
		body["duration_ms"] = *b.DurationMS
	}
	for k, v := range map[string]string{"cwd": b.Cwd, "run_id": b.RunID, "session_key": b.SessionKey} {
		if v != "" {
			body[k] = v
		}
	}
	arts := []ledger.Artifact{{Name: "payload.json", Data: bytes.NewReader(raw)}}
	if len(b.Params) > 0 {
		arts = append(arts, ledger.Artifact{Name: "input.json", Data: bytes.NewReader(b.Params)})
	}
	if len(b.Result) > 0 {
		arts = append(arts, ledger.Artifact{Name: "response.json", Data: bytes.NewReader(b.Result)})
	}
	if b.Error != "" {
		arts = append(arts, ledger.Artifact{Name: "error", Data: strings.NewReader(b.Error)})
	}
	event, k := hooks.PostToolUse, ledger.KindToolCall
	if failed {
		event, k = hooks.PostToolUseFailure, ledger.KindToolFailure
	}
	var args json.RawMessage
	if len(b.Params) > 0 {
		args = b.Params
	}
	return ledger.Record{Kind: k, Runtime: rt, Event: event, Tool: b.ToolName, ToolUseID: b.ToolCallID,
		AgentID: b.AgentID, Args: args, Body: body, Artifacts: arts}
}

// gateCheckBody is POST /v1/gate/{session_id}/check: a runtime's final
// answer before it is accepted.
type gateCheckBody struct {
	Runtime              string `json:"runtime,omitempty"`
	LastAssistantMessage string `json:"last_assistant_message"`
	StopHookActive       bool   `json:"stop_hook_active"`
	Cwd                  string `json:"cwd,omitempty"`
	AgentID              string `json:"agent_id,omitempty"`
	RunID                string `json:"run_id,omitempty"`
}

// GateCheckResponse answers POST /v1/gate/{session_id}/check. Decision
// is allow or block; a block's reason names each unsupported claim and
// the command that would back it. SystemMessage is set when the gate let
// a stop through at its loop cap, naming what stays unsupported.
type GateCheckResponse struct {
	Session       string      `json:"session"`
	Decision      string      `json:"decision"`
	Reason        string      `json:"reason,omitempty"`
	SystemMessage string      `json:"system_message,omitempty"`
	Claims        []GateClaim `json:"claims"`
	Seq           *uint64     `json:"seq,omitempty"`
}

// GateClaim is one claim the gate found in the final answer.
type GateClaim struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func parseGateCheck(body []byte) (gateCheckBody, error) {
	var b gateCheckBody
	if err := decode(body, &b, "last_assistant_message"); err != nil {
		return b, err
	}
	for _, f := range []struct{ name, v string }{{"runtime", b.Runtime}, {"agent_id", b.AgentID}, {"run_id", b.RunID}} {
		if err := shortField(f.name, f.v); err != nil {
			return b, err
		}
	}
	if b.Runtime != "" && !validName(b.Runtime) {
		return b, badRequest("runtime", "1-64 characters from [A-Za-z0-9._-]")
	}
	if err := absCwd(b.Cwd); err != nil {
		return b, err
	}
	return b, nil
}

// gateCheck runs the stop gate on a final answer: the decision
// docket-gate makes for a Stop, recorded the same way (a gate_decision
// entry, the consecutive-block counter and its loop cap).
func (s *Server) gateCheck(r *request) (int, any, error) {
	session, err := runtimeSession(r)
	if err != nil {
		return 0, nil, err
	}
	b, err := parseGateCheck(r.body)
	if err != nil {
		return 0, nil, err
	}
	g, err := gate.New(s.cfg.Home)
	if err != nil {
		return 0, nil, &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the gate cannot run: " + err.Error()}
	}
	if err := s.useSession(r.Context(), r.who, session); err != nil {
		return 0, nil, err
	}
	rt := b.Runtime
	if rt == "" {
		rt = RuntimeName
	}
	ev := &hooks.Event{Runtime: hooks.Runtime(rt), Name: hooks.Stop, RawName: "before_agent_finalize", SessionID: session,
		Cwd: b.Cwd, AgentID: b.AgentID, StopHookActive: b.StopHookActive,
		LastAssistantMessage: b.LastAssistantMessage, HasLastAssistantMessage: true}
	res := g.Stop(ev)
	out := GateCheckResponse{Session: session, Decision: "allow", Claims: []GateClaim{}, SystemMessage: res.Answer.SystemMessage}
	if res.Answer.Decision == hooks.Block {
		out.Decision, out.Reason = "block", res.Answer.Reason
	}
	for _, c := range res.Claims {
		out.Claims = append(out.Claims, GateClaim{Type: string(c.Type), Text: c.Sentence})
	}
	if res.Entry != nil {
		seq := res.Entry.Seq
		out.Seq = &seq
	}
	if res.Outcome == gate.Fail && res.Err != nil {
		s.logf("gate %s: %v", session, res.Err)
	}
	return http.StatusOK, out, nil
}

// proposalToolKind is what a runtime's tool does, for the judge's
// classifier: the kind its name maps to, else a shell when the runtime
// says the tool is one (so the shell classifier reads the command). A
// runtime's word can only add the classifier, which only raises a class.
func proposalToolKind(p *judge.ActionProposal) hooks.ToolKind {
	return judge.ProposalToolKind(p)
}
