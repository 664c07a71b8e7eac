// Package store is docket's recall and write-back store: governed memories
// with provenance and use policy, judge decisions, the review queue, the
// inspector's trail and the approval queue for escalations.
//
// The wire shapes follow the OpenBrain judge schemas
// (openbrain.judge.recall.v1, recall_response.v1, decision.v1). Backends
// implement Store; every backend runs the conformance suite in
// store/storetest. The rules that decide what may be injected, what enters
// review and what a review action does live here, in pure functions, so
// that every backend applies them identically; the SQL backends also
// enforce the injection invariants in their schema.
package store

import (
	"encoding/json"
	"time"
)

// Schema versions of the wire shapes.
const (
	RecallSchema         = "openbrain.judge.recall.v1"
	RecallResponseSchema = "openbrain.judge.recall_response.v1"
	DecisionSchema       = "openbrain.judge.decision.v1"
)

// Status is a memory's provenance status. Exactly these values exist.
type Status string

const (
	Observed      Status = "observed"
	Inferred      Status = "inferred"
	UserConfirmed Status = "user_confirmed"
	Imported      Status = "imported"
	Generated     Status = "generated"
	Superseded    Status = "superseded"
	Disputed      Status = "disputed"
)

// Statuses lists every provenance status.
var Statuses = []Status{Observed, Inferred, UserConfirmed, Imported, Generated, Superseded, Disputed}

// UsePolicy says how a judge may use a memory. Exactly these values exist.
type UsePolicy string

const (
	Instruction       UsePolicy = "can_use_as_instruction"
	Evidence          UsePolicy = "can_use_as_evidence"
	NeedsConfirmation UsePolicy = "requires_confirmation"
	DoNotInject       UsePolicy = "do_not_inject_automatically"
)

// UsePolicies lists every use policy.
var UsePolicies = []UsePolicy{Instruction, Evidence, NeedsConfirmation, DoNotInject}

// Visibility is how widely a memory may be recalled, narrowest first.
type Visibility string

const (
	Personal         Visibility = "personal"
	ProjectVisible   Visibility = "project"
	WorkspaceVisible Visibility = "workspace"
	Org              Visibility = "org"
)

// Visibilities lists every visibility, narrowest first.
var Visibilities = []Visibility{Personal, ProjectVisible, WorkspaceVisible, Org}

// Lifecycle says whether a memory still takes part in recall. Rejected and
// merged memories are kept for the inspector, never recalled.
type Lifecycle string

const (
	Active   Lifecycle = "active"
	Rejected Lifecycle = "rejected"
	Merged   Lifecycle = "merged"
)

// LowConfidence is the confidence below which a memory is never injected
// automatically: its use policy must be requires_confirmation or
// do_not_inject_automatically.
const LowConfidence = 0.5

// Source says where a memory came from.
type Source struct {
	Kind      string    `json:"kind"` // user_message | doc | ticket | file | system_event | import | judge_event | manual_entry
	URI       string    `json:"uri,omitempty"`
	Title     string    `json:"title,omitempty"`
	Timestamp time.Time `json:"timestamp,omitzero"`
}

// Provenance says how a memory came to be believed.
type Provenance struct {
	Status     Status  `json:"status"`
	Confidence float64 `json:"confidence"`
	CreatedBy  string  `json:"created_by"` // user | agent | system | import
	Model      string  `json:"model,omitempty"`
	Runtime    string  `json:"runtime,omitempty"`
}

// Freshness carries the memory's clock. Relevance decays 2% a day from
// LastSeenAt (reset when the observation recurs) or LastConfirmedAt,
// whichever is later.
type Freshness struct {
	CreatedAt       time.Time `json:"created_at"`
	LastConfirmedAt time.Time `json:"last_confirmed_at,omitzero"`
	LastSeenAt      time.Time `json:"last_seen_at,omitzero"`
	StaleAfter      time.Time `json:"stale_after,omitzero"`
	// Stale is set by the review action mark_stale.
	Stale bool `json:"stale,omitempty"`
}

// Scope says who may recall a memory.
type Scope struct {
	Workspace  string     `json:"workspace_id"`
	Project    string     `json:"project_id,omitempty"`
	Visibility Visibility `json:"visibility"`
}

// Lineage points at the ledger entry a memory was projected from.
type Lineage struct {
	Session   string `json:"session"`
	Seq       uint64 `json:"seq"`
	EntryHash string `json:"entry_hash"`
}

// IsZero reports whether l names no entry.
func (l Lineage) IsZero() bool { return l.Session == "" && l.EntryHash == "" }

// Key is the lineage's idempotency key: "session/seq/hash".
func (l Lineage) Key() string {
	return l.Session + "/" + itoa(l.Seq) + "/" + l.EntryHash
}

// Memory is one governed memory.
type Memory struct {
	ID         string     `json:"memory_id"`
	Summary    string     `json:"summary"`
	Content    string     `json:"content"`
	Source     Source     `json:"source"`
	Provenance Provenance `json:"provenance"`
	UsePolicy  UsePolicy  `json:"use_policy"`
	// UseReason says why the use policy is what it is.
	UseReason string `json:"use_reason,omitempty"`
	// Behavior is what an instruction-grade memory asks of the judge
	// (allow | block | revise | escalate | human_review); it becomes the
	// policy hit's required_behavior. Empty means revise.
	Behavior  string    `json:"behavior,omitempty"`
	Freshness Freshness `json:"freshness"`
	Scope     Scope     `json:"scope"`
	// Entities are "kind:value" tags (repo:docket, file:go.mod, tool:Bash,
	// person:ana, system:prod, topic:deploy), lowercased.
	Entities []string `json:"entities,omitempty"`
	// Supersedes / SupersededBy / Disputes link memories; the older one
	// keeps its history.
	Supersedes   string   `json:"supersedes,omitempty"`
	SupersededBy string   `json:"superseded_by,omitempty"`
	Disputes     []string `json:"disputes,omitempty"`
	// ConfirmedBy names the human who confirmed it; required for
	// instruction-grade memories.
	ConfirmedBy string    `json:"confirmed_by,omitempty"`
	Lifecycle   Lifecycle `json:"lifecycle"`
	// PatternKey groups recurring observations: a new observation with the
	// same key reinforces the memory instead of adding one.
	PatternKey  string  `json:"pattern_key,omitempty"`
	Occurrences int     `json:"occurrences"`
	Lineage     Lineage `json:"lineage,omitzero"`
	// DecisionID is the decision whose write-back created the memory.
	DecisionID string `json:"decision_id,omitempty"`
}

// Entities of a recall request, typed as in recall.v1.
type Entities struct {
	People    []string `json:"people,omitempty"`
	Orgs      []string `json:"orgs,omitempty"`
	Repos     []string `json:"repos,omitempty"`
	Files     []string `json:"files,omitempty"`
	Customers []string `json:"customers,omitempty"`
	Systems   []string `json:"systems,omitempty"`
	Topics    []string `json:"topics,omitempty"`
	Tools     []string `json:"tools,omitempty"`
}

// Query is what the judge is deciding about.
type Query struct {
	Summary      string   `json:"summary"`
	ActionType   string   `json:"action_type,omitempty"` // read_only | reversible_write | external_side_effect | high_risk
	ToolName     string   `json:"tool_name,omitempty"`
	TargetSystem string   `json:"target_system,omitempty"`
	Entities     Entities `json:"entities"`
}

// RequestScope filters recall.
type RequestScope struct {
	Visibility         Visibility `json:"visibility"`
	IncludeUnconfirmed bool       `json:"include_unconfirmed"`
	IncludeDisputed    bool       `json:"include_disputed"`
	IncludeStale       bool       `json:"include_stale"`
}

// Limits bound a recall response.
type Limits struct {
	MaxItems    int `json:"max_items"`
	MaxTokens   int `json:"max_tokens"`
	RecencyDays int `json:"recency_days,omitempty"`
}

// RequestPolicy restricts the use policies recall may return.
type RequestPolicy struct {
	AllowedUsePolicies []UsePolicy `json:"allowed_use_policies,omitempty"`
	RequireSourceRefs  bool        `json:"require_source_refs"`
}

// RecallRequest is openbrain.judge.recall.v1.
type RecallRequest struct {
	SchemaVersion string        `json:"schema_version"`
	RequestID     string        `json:"request_id"`
	Workspace     string        `json:"workspace_id"`
	Project       string        `json:"project_id,omitempty"`
	Task          string        `json:"task_id,omitempty"`
	Flow          string        `json:"flow_id,omitempty"`
	ActionID      string        `json:"action_id"`
	Query         Query         `json:"query"`
	Scope         RequestScope  `json:"scope"`
	Limits        Limits        `json:"limits"`
	Policy        RequestPolicy `json:"policy"`
	// Session ties the recall to a ledger session for the inspector.
	Session string `json:"session,omitempty"`
}

// RecalledMemory is one memory in a recall response, with its score.
type RecalledMemory struct {
	Memory
	Score float64 `json:"score"`
	// Bucket is the memory's knowledge domain (relevance.go).
	Bucket string `json:"bucket,omitempty"`
	// Relevance holds the factors of Score.
	Relevance *Factors `json:"relevance,omitempty"`
}

// PolicyHit is an instruction-grade memory that applies to the action.
type PolicyHit struct {
	PolicyID         string `json:"policy_id"`
	Summary          string `json:"summary"`
	RequiredBehavior string `json:"required_behavior"` // allow | block | revise | escalate | human_review
	SourceRef        string `json:"source_ref,omitempty"`
}

// Warning tells the judge about something recall left out or doubts.
type Warning struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	MemoryID string `json:"memory_id,omitempty"`
}

// RecallResponse is openbrain.judge.recall_response.v1. RecallID names the
// recorded trace; pass it back in Decision.RecallID.
type RecallResponse struct {
	SchemaVersion string           `json:"schema_version"`
	RequestID     string           `json:"request_id"`
	RecallID      string           `json:"recall_id"`
	Memories      []RecalledMemory `json:"memories"`
	PolicyHits    []PolicyHit      `json:"policy_hits"`
	Warnings      []Warning        `json:"warnings"`
}

// Outcome is a judge decision.
type Outcome string

const (
	Allow    Outcome = "allow"
	Block    Outcome = "block"
	Revise   Outcome = "revise"
	Escalate Outcome = "escalate"
)

// Judge describes who decided.
type Judge struct {
	Kind          string `json:"kind"` // llm | rule | hybrid | human
	Provider      string `json:"provider,omitempty"`
	Model         string `json:"model,omitempty"`
	PolicyVersion string `json:"policy_version,omitempty"`
}

// Checks are the judge's per-axis results: pass | fail | uncertain | not_applicable.
type Checks struct {
	Authorization string `json:"authorization_check,omitempty"`
	Evidence      string `json:"evidence_check,omitempty"`
	Policy        string `json:"policy_check,omitempty"`
	Sensitivity   string `json:"sensitivity_check,omitempty"`
	Reversibility string `json:"reversibility_check,omitempty"`
	Quality       string `json:"quality_check,omitempty"`
}

// RequiredRevision says what a revise decision asks for.
type RequiredRevision struct {
	Summary     string   `json:"summary,omitempty"`
	Constraints []string `json:"revised_action_constraints,omitempty"`
}

// Escalation says who must look at an escalated action.
type Escalation struct {
	Required bool      `json:"required"`
	Reason   string    `json:"reason,omitempty"`
	Owner    string    `json:"owner,omitempty"`
	DueAt    time.Time `json:"due_at,omitzero"`
}

// MemoryUse says how the judge used a recalled memory.
type MemoryUse struct {
	MemoryID string `json:"memory_id"`
	UsedAs   string `json:"used_as"` // instruction | evidence | background
}

// MemoryToWrite carries the decision's memory candidates.
type MemoryToWrite struct {
	Decisions     []string            `json:"decisions,omitempty"`
	Lessons       []string            `json:"lessons,omitempty"`
	Failures      []string            `json:"failures,omitempty"`
	Constraints   []string            `json:"constraints,omitempty"`
	OpenQuestions []string            `json:"open_questions,omitempty"`
	Provenance    CandidateProvenance `json:"provenance"`
}

// CandidateProvenance is the provenance the judge proposes for candidates.
type CandidateProvenance struct {
	DefaultStatus  Status `json:"default_status,omitempty"` // observed | inferred | generated | user_confirmed
	RequiresReview bool   `json:"requires_review"`
}

// Decision is openbrain.judge.decision.v1, plus the few fields docket
// needs to tie it to its ledger and recall.
type Decision struct {
	SchemaVersion    string           `json:"schema_version"`
	Workspace        string           `json:"workspace_id"`
	Project          string           `json:"project_id,omitempty"`
	Task             string           `json:"task_id,omitempty"`
	Flow             string           `json:"flow_id,omitempty"`
	ActionID         string           `json:"action_id"`
	DecisionID       string           `json:"decision_id,omitempty"`
	IdempotencyKey   string           `json:"idempotency_key"`
	Decision         Outcome          `json:"decision"`
	ReasoningSummary string           `json:"reasoning_summary"`
	Confidence       string           `json:"confidence"` // high | medium | low
	Judge            Judge            `json:"judge"`
	Checks           Checks           `json:"checks"`
	RequiredRevision RequiredRevision `json:"required_revision"`
	Escalation       Escalation       `json:"escalation"`
	MemoryUsed       []MemoryUse      `json:"memory_used,omitempty"`
	MemoryToWrite    MemoryToWrite    `json:"memory_to_write"`

	// Docket extensions.
	RecallID        string `json:"recall_id,omitempty"`
	Session         string `json:"session,omitempty"`
	ToolName        string `json:"tool_name,omitempty"`
	ArgumentsDigest string `json:"arguments_digest,omitempty"`
	// FullArgumentsRef points at retained arguments; it is kept only when
	// RetentionPolicy names an approved retention policy.
	FullArgumentsRef string `json:"full_arguments_ref,omitempty"`
	RetentionPolicy  string `json:"retention_policy,omitempty"`
	// FullArguments is never stored: a write that carries it has it
	// refused and recorded as a rejection.
	FullArguments json.RawMessage `json:"full_arguments,omitempty"`
	Entities      []string        `json:"entities,omitempty"`
	CreatedAt     time.Time       `json:"created_at,omitzero"`
	// Creator is the id of the API token that wrote the decision (docket
	// serve); empty for the hooks, the CLI and decisions stored before
	// creators were recorded. A replay keeps the first writer's.
	Creator string `json:"creator,omitempty"`
}

// Rejection records something the write-back firewall refused.
type Rejection struct {
	Field  string `json:"field"` // e.g. "memory_to_write.lessons[0]", "reasoning_summary"
	Reason string `json:"reason"`
}

// WriteResult says what WriteDecision stored.
type WriteResult struct {
	DecisionID string `json:"decision_id"`
	// Replayed is true when the idempotency key was seen before; DecisionID
	// is then the original decision's and nothing new was written.
	Replayed   bool        `json:"replayed"`
	Memories   []string    `json:"memories,omitempty"`     // memory ids written
	Review     []string    `json:"review_items,omitempty"` // review items opened
	Rejections []Rejection `json:"rejections,omitempty"`
}

// Priority orders the review queue.
type Priority string

const (
	High   Priority = "high"
	Normal Priority = "normal"
)

// ReviewStatus is a review item's state.
type ReviewStatus string

const (
	ReviewPending   ReviewStatus = "pending"
	ReviewEscalated ReviewStatus = "escalated"
	ReviewResolved  ReviewStatus = "resolved"
)

// ReviewItem is one memory waiting for a human.
type ReviewItem struct {
	ID       string       `json:"item_id"`
	MemoryID string       `json:"memory_id"`
	Priority Priority     `json:"priority"`
	Reason   string       `json:"reason"`
	Status   ReviewStatus `json:"status"`
	// Suggested is the use policy a confirm would grant.
	Suggested  UsePolicy `json:"suggested_use_policy"`
	CreatedAt  time.Time `json:"created_at"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
	Resolution string    `json:"resolution,omitempty"` // the action that resolved it
	ResolvedBy string    `json:"resolved_by,omitempty"`
}

// Event is one entry in a memory's audit trail.
type Event struct {
	MemoryID string    `json:"memory_id"`
	At       time.Time `json:"at"`
	Actor    string    `json:"actor"`
	Action   string    `json:"action"`
	Detail   string    `json:"detail,omitempty"`
}

// Observation is one ledger entry that produced or reinforced a memory.
type Observation struct {
	Lineage
	MemoryID   string    `json:"memory_id"`
	ObservedAt time.Time `json:"observed_at"`
}

// RecallUse is one recall that returned a memory, and what the judge did
// with it.
type RecallUse struct {
	RecallID  string    `json:"recall_id"`
	RequestID string    `json:"request_id,omitempty"`
	At        time.Time `json:"at"`
	Session   string    `json:"session,omitempty"`
	ActionID  string    `json:"action_id,omitempty"`
	Query     string    `json:"query,omitempty"`
	ToolName  string    `json:"tool_name,omitempty"`
	Rank      int       `json:"rank"`
	// ReturnedAs is "memory" or "policy_hit".
	ReturnedAs string `json:"returned_as"`
	// UsedAs is instruction | evidence | background, or "" when the judge
	// reported no use.
	UsedAs     string `json:"used_as,omitempty"`
	DecisionID string `json:"decision_id,omitempty"`
}

// Trail is everything a backend keeps about one memory besides the memory
// itself; Inspect turns it into an Inspection.
type Trail struct {
	Memory       Memory
	Review       []ReviewItem
	Events       []Event
	Observations []Observation
	Recalls      []RecallUse
	// Related are memories linked to this one either way (supersedes,
	// superseded by, disputes, disputed by, merged into).
	Related  []Memory
	Decision *Decision
}
