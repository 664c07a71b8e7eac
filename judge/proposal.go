// Package judge decides, before a side-effecting tool call runs, whether
// it is allowed, blocked, revised or escalated to a human.
//
// A PreToolUse hooks.Event becomes an ActionProposal
// (openbrain.judge.action_proposal.v1); the framework classifies it into a
// risk class from the tools registry and the Bash classifier; a chain of
// JudgeBackends (the deterministic PolicyJudge first, then optionally the
// LLMJudge) evaluates it with recall from the store; the Engine maps the
// judgment through the failure policy, the one-revise rule, escalation
// and read-audit mode onto a hooks.Answer, and records a judge_decision
// ledger entry plus a store write-back. The judge never sees runtime JSON.
package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/regular"
	"github.com/docket/docket/policies"
)

// ProposalSchema is the action proposal schema version.
const ProposalSchema = "openbrain.judge.action_proposal.v1"

// RiskClass aliases the policies risk class.
type RiskClass = policies.RiskClass

// Outcome aliases the policies outcome.
type Outcome = policies.Outcome

const (
	Allow    = policies.OutcomeAllow
	Block    = policies.OutcomeBlock
	Revise   = policies.OutcomeRevise
	Escalate = policies.OutcomeEscalate
)

// ActionProposal is one proposed tool call, per action_proposal.v1. The
// framework fills Runtime, Actor, Tool, Action (risk class and arguments
// digest), Binding and the workspace fields; the actor's side channel
// (`docket propose`) may only fill Authorization and Evidence. A judge's
// amendment may change only the tool input.
type ActionProposal struct {
	SchemaVersion  string  `json:"schema_version"`
	WorkspaceID    string  `json:"workspace_id"`
	ProjectID      *string `json:"project_id"`
	TaskID         *string `json:"task_id"`
	FlowID         *string `json:"flow_id"`
	ActionID       string  `json:"action_id"`
	IdempotencyKey string  `json:"idempotency_key"`

	Runtime RuntimeRef `json:"runtime"`
	Actor   Actor      `json:"actor"`
	Tool    ToolRef    `json:"tool"`
	Action  Action     `json:"action"`

	Authorization       Authorization       `json:"authorization"`
	Evidence            EvidenceRefs        `json:"evidence"`
	ExpectedConsequence ExpectedConsequence `json:"expected_consequence"`
	Rollback            Rollback            `json:"rollback"`
	Sensitivity         Sensitivity         `json:"sensitivity"`

	// Binding ties the proposal to the runtime's call. Framework-derived.
	Binding Binding `json:"binding"`

	// Input is the tool input as the runtime sent it; Args are its
	// canonical form. Neither is part of the schema's wire form.
	Input json.RawMessage `json:"-"`
	// Context is framework-derived context the judges may read.
	Context ProposalContext `json:"-"`
}

type RuntimeRef struct {
	Name    string  `json:"name"`
	Version *string `json:"version"`
	Adapter *string `json:"adapter"`
}

type Actor struct {
	AgentID  string  `json:"agent_id"`
	Role     *string `json:"role"`
	Provider *string `json:"provider"`
	Model    *string `json:"model"`
}

type ToolRef struct {
	Name         string  `json:"name"`
	Kind         string  `json:"kind"`
	TargetSystem *string `json:"target_system"`
}

type Action struct {
	RiskClass        RiskClass `json:"risk_class"`
	Description      string    `json:"description"`
	Target           *string   `json:"target"`
	ArgumentsDigest  string    `json:"arguments_digest"`
	FullArgumentsRef *string   `json:"full_arguments_ref"`
}

type Authorization struct {
	ClaimedUserAuthorization *string   `json:"claimed_user_authorization"`
	UserAuthorizationRefs    []AuthRef `json:"user_authorization_refs"`
}

type AuthRef struct {
	Kind           string  `json:"kind"` // user_message | task | ticket | memory | policy | manual_approval
	URI            *string `json:"uri"`
	QuoteOrSummary string  `json:"quote_or_summary"`
	Timestamp      *string `json:"timestamp"`
}

type EvidenceRefs struct {
	SourceRefs []SourceRef `json:"source_refs"`
}

type SourceRef struct {
	Kind      string  `json:"kind"` // file | message | doc | ticket | memory | log | web | api | policy
	URI       *string `json:"uri"`
	Title     *string `json:"title"`
	Timestamp *string `json:"timestamp"`
	Summary   string  `json:"summary"`
}

type ExpectedConsequence struct {
	Summary            string   `json:"summary"`
	ExternalRecipients []string `json:"external_recipients"`
	DataExposed        []string `json:"data_exposed"`
	SystemsChanged     []string `json:"systems_changed"`
	Persistence        string   `json:"persistence"` // none | temporary | durable | external
}

type Rollback struct {
	IsReversible  bool    `json:"is_reversible"`
	RollbackPlan  *string `json:"rollback_plan"`
	RollbackOwner *string `json:"rollback_owner"`
}

type Sensitivity struct {
	ContainsSecretLikeData         bool `json:"contains_secret_like_data"`
	ContainsCustomerData           bool `json:"contains_customer_data"`
	ContainsPrivatePersonalData    bool `json:"contains_private_personal_data"`
	ContainsFinancialOrLegalData   bool `json:"contains_financial_or_legal_data"`
	ContainsProductionSystemAccess bool `json:"contains_production_system_access"`
}

// Binding is the framework's tie between a proposal and the runtime call.
type Binding struct {
	SessionID          string `json:"session_id"`
	ToolUseID          string `json:"tool_use_id"`
	ToolDefinitionHash string `json:"tool_definition_hash"`
	ArgumentsHash      string `json:"arguments_hash"`
	// SideChannel is the actor statement's binding status: bound, missing,
	// unbound or duplicate.
	SideChannel string `json:"side_channel"`
}

// ProposalContext is framework-derived context beside the proposal.
type ProposalContext struct {
	Cwd            string
	ProjectRoot    string // the git work tree root, else the cwd
	Branch         string // the current git branch, "" when unknown
	PermissionMode string
	AgentType      string
	Spec           policies.ToolSpec // the registry entry that matched
	SpecFound      bool
	// ToolKind is what the call does in docket's tool vocabulary
	// (hooks.KindOf the runtime's tool name). A tool the registry does not
	// name is classified as the Claude Code tool of its kind (Alias: Bash
	// for every runtime's shell, Write, Edit, Read, Grep, WebFetch; Edit
	// for a patch), so the classifier, the protections and the rules
	// written for that tool apply to it.
	ToolKind hooks.ToolKind
	Alias    string
	// MCPName is the call's MCP tool in Claude Code's form,
	// mcp__<server>__<tool> (hooks.Event.MCPName, ProposalMCPName):
	// Gemini CLI names it mcp_<server>_<tool>, OpenClaw
	// <server>__<tool>. The registry, the rules and the outbound list
	// written for that name apply to the call (Alias), its server is the
	// target system, and its acts are read from it. "" when the framework
	// said nothing; see mcpName.
	MCPName string
	// Paths are the files the call names (hooks.Event.Paths: a patch's
	// every file), as written.
	Paths []string
	// Applies are the files the patches a shell line applies write
	// (patchTargets), absolute.
	Applies      []string
	Shell        *CommandClass // for shell tools
	ClassReasons []string
	// Acts are the acts the call performs that rules may name (an MCP
	// tool's message or payment, a shell line's gh pr comment, …).
	Acts []Act
}

// Digest is the proposal's canonical digest, "sha256:<hex>", over its
// wire form plus the canonical arguments.
func (p *ActionProposal) Digest() string {
	return canonjson.SHA256(p.appendCanonical(make([]byte, 0, 1024)))
}

// kind is what p's tool does in docket's tool vocabulary: the kind the
// framework derived, else the one its name maps to.
func (p *ActionProposal) kind() hooks.ToolKind {
	if p.Context.ToolKind != "" {
		return p.Context.ToolKind
	}
	return hooks.KindOf(p.Tool.Name)
}

// mcpName is p's MCP tool as mcp__<server>__<tool>: what the framework
// derived, else the tool's name when it has that form; "" for a call
// that is not an MCP server's.
func (p *ActionProposal) mcpName() string {
	if p.Context.MCPName != "" {
		return p.Context.MCPName
	}
	if strings.HasPrefix(p.Tool.Name, "mcp__") {
		return p.Tool.Name
	}
	return ""
}

// recallQuery is what the judge asks the store about p. A tool the
// registry knows only by its kind is asked about by the registry entry
// of that kind (Bash for Gemini CLI's run_shell_command), in the summary
// too: what was learnt of a Claude Code tool comes back for the same kind
// of call by any runtime, a runtime's shell is a broad tool as Bash is,
// and the words of its own name do not match every memory it left.
func recallQuery(p *ActionProposal) RecallQuery {
	tool, summary := p.Tool.Name, p.Action.Description
	if a := p.Context.Alias; a != "" {
		tool = a
		if rest, ok := strings.CutPrefix(summary, p.Tool.Name); ok {
			summary = a + rest
		}
	}
	return RecallQuery{
		WorkspaceID: p.WorkspaceID, ProjectID: deref(p.ProjectID), SessionID: p.Binding.SessionID, ActionID: p.ActionID,
		Summary: summary, Class: p.Action.RiskClass, ToolName: tool, TargetSystem: deref(p.Tool.TargetSystem),
		Target: deref(p.Action.Target), MaxItems: 5,
	}
}

// Clone returns a deep copy of p.
func (p *ActionProposal) Clone() *ActionProposal {
	b, _ := json.Marshal(p)
	var c ActionProposal
	_ = json.Unmarshal(b, &c)
	c.Input = append(json.RawMessage(nil), p.Input...)
	c.Context = p.Context
	c.Context.ClassReasons = append([]string(nil), p.Context.ClassReasons...)
	c.Context.Acts = append([]Act(nil), p.Context.Acts...)
	c.Context.Paths = append([]string(nil), p.Context.Paths...)
	c.Context.Applies = append([]string(nil), p.Context.Applies...)
	c.Context.Spec.Agents = append([]string(nil), p.Context.Spec.Agents...)
	if p.Context.Shell != nil {
		sh := *p.Context.Shell
		sh.Reasons = append([]string(nil), sh.Reasons...)
		sh.Segments = append([]Segment(nil), sh.Segments...)
		c.Context.Shell = &sh
	}
	return &c
}

// ProposalError reports a PreToolUse event that cannot become a proposal.
type ProposalError struct {
	Field  string
	Reason string
}

func (e *ProposalError) Error() string {
	return fmt.Sprintf("invalid proposal: %s: %s", e.Field, e.Reason)
}

// Assemble builds the framework side of a proposal from a PreToolUse
// event and classifies it with tools. The side channel is bound later
// (BindStatement).
func Assemble(ev *hooks.Event, tools *policies.Tools) (*ActionProposal, error) {
	if ev == nil || ev.Name != hooks.PreToolUse {
		return nil, &ProposalError{Field: "hook_event_name", Reason: "not PreToolUse"}
	}
	if ev.ToolName == "" {
		return nil, &ProposalError{Field: "tool_name", Reason: "missing"}
	}
	input := ev.ToolInput
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	canon, err := canonjson.Canonical(input)
	if err != nil {
		return nil, &ProposalError{Field: "tool_input", Reason: "not JSON"}
	}
	if len(canon) == 0 || canon[0] != '{' {
		return nil, &ProposalError{Field: "tool_input", Reason: "not a JSON object"}
	}
	argsHash := canonjson.SHA256(canon)
	p := &ActionProposal{SchemaVersion: ProposalSchema, Input: append(json.RawMessage(nil), input...)}
	// the schema's arrays are arrays, never null
	p.Authorization.UserAuthorizationRefs = []AuthRef{}
	p.Evidence.SourceRefs = []SourceRef{}
	p.ExpectedConsequence.ExternalRecipients = []string{}
	p.ExpectedConsequence.DataExposed = []string{}
	p.ExpectedConsequence.SystemsChanged = []string{}
	p.Context.Cwd = ev.Cwd
	p.Context.ToolKind = ev.Kind()
	p.Context.MCPName = ev.MCPName()
	p.Context.PermissionMode = ev.PermissionMode
	p.Context.AgentType = ev.AgentType
	root, branch := gitInfo(ev.Cwd)
	p.Context.ProjectRoot, p.Context.Branch = root, branch
	p.WorkspaceID = root
	if root != "" {
		proj := filepath.Base(root)
		p.ProjectID = &proj
	}
	sess := ev.SessionID
	p.TaskID = &sess
	rt := string(ev.Runtime)
	if rt == "" {
		rt = string(hooks.Claude)
	}
	p.Runtime = RuntimeRef{Name: rt, Adapter: strPtr("docket-judge")}
	p.Actor.AgentID = "main"
	if ev.AgentID != "" {
		p.Actor.AgentID = ev.AgentID
	}
	if ev.AgentType != "" {
		p.Actor.Role = &ev.AgentType
	}
	if ev.Model != "" {
		p.Actor.Model = &ev.Model
	}
	p.Tool.Name = ev.ToolName
	p.Action.ArgumentsDigest = argsHash
	p.Binding = Binding{SessionID: ev.SessionID, ToolUseID: ev.ToolUseID, ArgumentsHash: argsHash, SideChannel: SideChannelMissing}
	p.ActionID = ev.ToolUseID
	if p.ActionID == "" {
		p.ActionID = "act_" + strings.TrimPrefix(canonjson.SHA256([]byte(ev.SessionID+"\x00"+ev.ToolName+"\x00"+argsHash)), "sha256:")[:24]
	}
	p.IdempotencyKey = canonjson.SHA256([]byte(ev.SessionID + "\x00" + p.ActionID + "\x00" + argsHash))
	Classify(p, tools)
	return p, nil
}

func strPtr(s string) *string { return &s }

// gitInfo finds the git work tree containing cwd by walking up to a .git
// entry (no git process is run) and reads its current branch from HEAD.
// Both reads are of regular files only (regular.ReadFile): a FIFO named
// .git or HEAD in the agent's tree must not hold the judge.
func gitInfo(cwd string) (root, branch string) {
	return gitWalk(cwd, true)
}

// maxGitFile bounds a .git file or HEAD the judge reads.
const maxGitFile = 4096

// gitWalk is gitInfo; it reads the branch only when asked to.
func gitWalk(cwd string, withBranch bool) (root, branch string) {
	if cwd == "" {
		return "", ""
	}
	dir := filepath.Clean(cwd)
	for {
		g := filepath.Join(dir, ".git")
		if st, err := os.Stat(g); err == nil {
			if !withBranch {
				return dir, ""
			}
			head := filepath.Join(g, "HEAD")
			if !st.IsDir() {
				// a worktree or submodule: "gitdir: <path>"
				if b, err := regular.ReadFile(nil, g, maxGitFile); err == nil {
					if gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: "); ok {
						if !filepath.IsAbs(gd) {
							gd = filepath.Join(dir, gd)
						}
						head = filepath.Join(gd, "HEAD")
					}
				}
			}
			if b, err := regular.ReadFile(nil, head, maxGitFile); err == nil {
				if ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: refs/heads/"); ok {
					branch = ref
				}
			}
			return dir, branch
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Clean(cwd), ""
		}
		dir = parent
	}
}

// Classify (re)computes the framework-derived fields of p from its tool
// name and input: tool kind, target, risk class, description,
// tool_definition_hash and sensitivity flags. Nothing the actor or a judge
// supplied is read.
func Classify(p *ActionProposal, tools *policies.Tools) {
	spec, found := tools.Lookup(p.Tool.Name)
	// the paths of the input as it now stands (an amendment may change them)
	p.Context.Paths = (&hooks.Event{ToolName: p.Tool.Name, ToolKind: p.Context.ToolKind, ToolInput: p.Input}).Paths()
	p.Context.Alias = ""
	mcp := p.mcpName()
	switch {
	case mcp != "" && mcp != p.Tool.Name:
		// another runtime's name for an MCP tool: Claude Code's is the
		// one rules and the registry use, whether the registry knows it
		// or not
		if !found {
			spec, found = tools.Lookup(mcp)
		}
		p.Context.Alias = mcp
	case !found:
		if alias := kindAlias(p.Context.ToolKind); alias != "" {
			if as, ok := tools.Lookup(alias); ok {
				spec, found = as, true
				p.Context.Alias = alias
			}
		}
	}
	p.Context.Spec, p.Context.SpecFound = spec, found
	p.Context.Shell = nil
	p.Context.ClassReasons = nil
	p.Context.Acts = MCPActions(mcp, p.Input)
	class := spec.Risk
	if !found {
		class = tools.Unknown
		if mcp != "" {
			class = tools.UnknownMCP
			p.Context.ClassReasons = append(p.Context.ClassReasons, "unknown MCP tool")
		} else {
			p.Context.ClassReasons = append(p.Context.ClassReasons, "tool not in the registry")
		}
	}
	kind := spec.Kind
	if p.Context.Alias != "" && p.Context.ToolKind != hooks.KindShell && p.Context.ToolKind != hooks.KindMCP {
		// another runtime's file, read, search or fetch tool: its own kind
		kind = string(p.Context.ToolKind)
	}
	if kind == "" {
		kind = "function_tool"
		if mcp != "" {
			kind = "api"
		}
	}
	p.Tool.Kind = kind
	if kind == "browser" {
		// a browser tool acts on web pages, not on a system's records
		p.Context.Acts = slices.DeleteFunc(p.Context.Acts, func(a Act) bool { return a.Kind == policies.ActionRecord })
	}
	p.Tool.TargetSystem = nil
	if spec.TargetSystem != "" {
		ts := spec.TargetSystem
		p.Tool.TargetSystem = &ts
	} else if server, ok := mcpServer(mcp); ok {
		p.Tool.TargetSystem = &server
	}
	var in map[string]any
	_ = json.Unmarshal(p.Input, &in)
	p.Action.Target = nil
	targetField := spec.Target
	if targetField == "" {
		for _, f := range []string{"file_path", "notebook_path", "path", "url", "command"} {
			if _, ok := in[f].(string); ok {
				targetField = f
				break
			}
		}
	}
	if s, ok := in[targetField].(string); ok && s != "" {
		p.Action.Target = &s
	} else if cmd, ok := hooks.ShellCommandOf(p.Input); ok && cmd != "" && kind == "shell" {
		// a shell's argv (Codex's exec_command cmd): its command line
		p.Action.Target = &cmd
	} else if p.Context.ToolKind == hooks.KindPatch && len(p.Context.Paths) > 0 {
		t := strings.Join(p.Context.Paths, ", ")
		p.Action.Target = &t
	}
	if kind == "shell" {
		cmd, _ := hooks.ShellCommandOf(p.Input)
		cc := ClassifyCommand(cmd, ShellContext{Cwd: p.Context.Cwd, Branch: p.Context.Branch})
		p.Context.Shell = &cc
		class = policies.Stricter(class, cc.Class)
		if cc.Class == policies.ReadOnly && spec.Risk == policies.ReversibleWrite {
			// the classifier may lower the shell's default baseline; a
			// registry that made the shell stricter than that is obeyed
			class = cc.Class
		}
		p.Context.ClassReasons = append(p.Context.ClassReasons, cc.Reasons...)
		p.Context.Acts = append(p.Context.Acts, cc.Actions...)
	}
	p.Sensitivity = sensitivity(string(p.Input))
	p.setClass(class)
	desc := p.Tool.Name
	if d, ok := in["description"].(string); ok && d != "" {
		desc += ": " + d
	} else if p.Action.Target != nil {
		desc += " " + Truncate(*p.Action.Target, 200)
	}
	p.Action.Description = Truncate(desc, 300)
	def, _ := canonjson.Marshal(map[string]any{
		"runtime": p.Runtime.Name, "tool": p.Tool.Name, "kind": kind,
		"registry": map[string]any{"pattern": spec.Tool, "risk": string(spec.Risk), "execution": spec.Execution, "validation": spec.Validation, "found": found},
	})
	p.Binding.ToolDefinitionHash = canonjson.SHA256(def)
	if p.ExpectedConsequence.Summary == "" {
		p.ExpectedConsequence.Summary = p.Action.Description
	}
}

// setClass sets the call's risk class (high_risk for an invalid one) and
// what follows from it.
func (p *ActionProposal) setClass(class RiskClass) {
	if !class.Valid() {
		class = policies.HighRisk
	}
	p.Action.RiskClass = class
	p.Rollback.IsReversible = class.Rank() <= policies.ReversibleWrite.Rank()
	p.ExpectedConsequence.Persistence = map[RiskClass]string{
		policies.ReadOnly: "none", policies.ReversibleWrite: "durable", policies.ExternalSideEffect: "external", policies.HighRisk: "external",
	}[class]
	p.Sensitivity.ContainsProductionSystemAccess = class == policies.HighRisk && containsAny(strings.ToLower(string(p.Input)), "prod", "kubectl", "terraform")
}

// kindAlias is the registry entry a tool of kind k falls back to when
// the registry does not name it: the Claude Code tool of its kind, and
// Edit for a patch.
func kindAlias(k hooks.ToolKind) string {
	if k == hooks.KindPatch {
		return "Edit"
	}
	return hooks.CanonicalTool(k)
}

func mcpServer(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", false
	}
	server, _, ok := strings.Cut(rest, "__")
	return server, ok
}

// Truncate cuts s to at most n bytes at a rune boundary, marking the cut
// with an ellipsis.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

func containsAny(s string, subs ...string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// sensitivity flags secret-like data by a few well-known shapes.
func sensitivity(s string) Sensitivity {
	var f Sensitivity
	f.ContainsSecretLikeData = containsAny(s, "-----BEGIN ", "PRIVATE KEY", "AKIA", "ghp_", "github_pat_", "xoxb-", "xoxp-", "sk-ant-", "sk_live_", "AIza") ||
		containsAny(strings.ToLower(s), "password=", "passwd=", "api_key=", "apikey=", "secret=", "token=", "authorization: bearer")
	return f
}

// ErrNilProposal is returned when a nil proposal is evaluated.
var ErrNilProposal = errors.New("nil proposal")

// ProjectRoot returns the git work tree root containing cwd (found by
// walking up to a .git entry), else cwd itself.
func ProjectRoot(cwd string) string {
	root, _ := gitWalk(cwd, false)
	return root
}
