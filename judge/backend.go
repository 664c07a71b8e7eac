package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/docket/docket/policies"
)

// JudgeBackend is one judge in the chain. Implementations must be safe
// for concurrent Evaluate calls, must not modify the proposal or the
// context, and must return promptly when ctx is done (with an
// unavailable *Error). Every method but Evaluate must work after Close.
type JudgeBackend interface {
	// Evaluate judges p. A failure to judge is an *Error whose Kind the
	// failure policy maps onto an outcome; it is never a guessed outcome.
	Evaluate(ctx context.Context, p *ActionProposal, jc *JudgmentContext) (Judgment, error)
	// SupportedOutcomes lists the outcomes Evaluate can return.
	SupportedOutcomes() []Outcome
	// SupportsReadAudit reports whether the backend may run in read-audit
	// mode (decide and record, never enforce).
	SupportsReadAudit() bool
	// JudgeID names the backend, e.g. "policy" or "llm:openai:gpt-5-nano".
	JudgeID() string
	// PolicyVersion is the policy_version the backend judges under.
	PolicyVersion() string
	// Close releases resources. It is idempotent.
	Close() error
}

// Judgment is what a backend returns.
type Judgment struct {
	Outcome Outcome
	Reason  string
	// Amendment is a mechanical revision (revise only): the replacement
	// tool input. Nil for a revise that needs the actor to rework the
	// call; RequiredRevision then says what.
	Amendment        json.RawMessage
	RequiredRevision string
	RuleIDs          []string
	MemoriesUsed     []MemoryUse
	Confidence       string // high | medium | low
	Cost             Cost
	// AutoApprove is set when policy explicitly allowlists the call: the
	// answer then says "allow" instead of leaving the user's own
	// permission rules in charge.
	AutoApprove bool
}

// MemoryUse records a recalled memory a judge relied on.
type MemoryUse struct {
	MemoryID string `json:"memory_id"`
	UsedAs   string `json:"used_as"` // instruction | evidence | background
}

// Cost is what a judgment spent; Source is "judge" (the actor's spend is
// "actor").
type Cost struct {
	Source       string `json:"cost_source"`
	InputTokens  int    `json:"input_tokens,omitempty"`
	OutputTokens int    `json:"output_tokens,omitempty"`
	Calls        int    `json:"calls,omitempty"`
}

// JudgmentContext is what a judge is given besides the proposal.
type JudgmentContext struct {
	Policy  PolicyContext
	Runtime RuntimeConfig
}

// PolicyContext is the part of the context a judge may show a model.
type PolicyContext struct {
	Class       RiskClass
	ClassPolicy policies.ClassRule
	// PolicyText is the judges.md prose in force.
	PolicyText string
	Recall     Recall
	// DelegateChain lists the delegate policy files merged over the floor.
	DelegateChain []string
	// Revised is set when judging an amended proposal.
	Revised bool
}

// RuntimeConfig is framework-only configuration. It must never appear in
// anything sent to a model.
type RuntimeConfig struct {
	Deadline   time.Time
	Headless   bool
	StateRoot  string
	Endpoint   string
	APIKeyEnv  string
	BudgetLeft int
}

// Failure kinds; each maps to an outcome through judges.md failure_policy.
const (
	KindUnavailable     = policies.FailUnavailable
	KindPolicyInvalid   = policies.FailPolicyInvalid
	KindBudgetExhausted = policies.FailBudgetExhausted
	KindProposalInvalid = policies.FailProposalInvalid
	KindAmendedRejected = policies.FailAmendedRejected
)

// Sentinels for errors.Is against an *Error's kind.
var (
	ErrUnavailable     = errors.New("judge unavailable")
	ErrPolicyInvalid   = errors.New("judge policy invalid")
	ErrBudgetExhausted = errors.New("judge budget exhausted")
	ErrProposalInvalid = errors.New("proposal invalid")
	ErrAmendedRejected = errors.New("amended proposal rejected")
)

// kindSentinel returns the sentinel error of a failure kind, or nil.
func kindSentinel(kind string) error {
	switch kind {
	case KindUnavailable:
		return ErrUnavailable
	case KindPolicyInvalid:
		return ErrPolicyInvalid
	case KindBudgetExhausted:
		return ErrBudgetExhausted
	case KindProposalInvalid:
		return ErrProposalInvalid
	case KindAmendedRejected:
		return ErrAmendedRejected
	}
	return nil
}

// Error is a judge failure of one Kind, from one judge.
type Error struct {
	Kind  string
	Judge string
	Err   error
}

func (e *Error) Error() string {
	s := kindSentinel(e.Kind)
	msg := e.Kind
	if s != nil {
		msg = s.Error()
	}
	if e.Judge != "" {
		msg = e.Judge + ": " + msg
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches the sentinel of e's kind.
func (e *Error) Is(target error) bool { return kindSentinel(e.Kind) == target && target != nil }

func judgeErr(kind, judge string, format string, args ...any) *Error {
	return &Error{Kind: kind, Judge: judge, Err: fmt.Errorf(format, args...)}
}

// FailureKind returns the failure kind of err: its *Error kind, else
// unavailable (an unknown failure is never assumed harmless).
func FailureKind(err error) string {
	var je *Error
	if errors.As(err, &je) && kindSentinel(je.Kind) != nil {
		return je.Kind
	}
	var pe *policies.Error
	if errors.As(err, &pe) {
		return KindPolicyInvalid
	}
	var pre *ProposalError
	if errors.As(err, &pre) {
		return KindProposalInvalid
	}
	return KindUnavailable
}

// FailureOutcome maps err through the failure policy (default block).
func FailureOutcome(err error, fp map[string]Outcome) Outcome {
	if o, ok := fp[FailureKind(err)]; ok && o.Strictness() >= 0 && o != Revise {
		return o
	}
	return Block
}

// ValidJudgment reports whether j is well formed for a backend supporting
// the given outcomes.
func ValidJudgment(j Judgment, supported []Outcome) error {
	ok := false
	for _, o := range supported {
		if o == j.Outcome {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("outcome %q not supported", j.Outcome)
	}
	if j.Outcome != Allow && j.Reason == "" {
		return fmt.Errorf("%s without a reason", j.Outcome)
	}
	if j.Outcome == Revise && j.Amendment == nil && j.RequiredRevision == "" {
		return errors.New("revise with neither an amendment nor a required revision")
	}
	if j.Outcome != Revise && (j.Amendment != nil || j.RequiredRevision != "") {
		return errors.New("amendment on a non-revise outcome")
	}
	return nil
}
