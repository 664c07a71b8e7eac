// Package storeadapter connects the judge to docket's store: recall,
// decision write-back and the approval queue. It is a package of its own
// so that the judge core does not link the store (and its secret
// detector) into binaries that only need the policy judge.
package storeadapter

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/store"
)

// Adapter adapts a store.Store to the judge's Recaller,
// DecisionWriter and Approvals. It remembers each action's recall id
// until the action's decision is written, so the decision names the
// recall it used; a long-lived adapter (docket serve) keeps only the
// actions still being judged.
type Adapter struct {
	S store.Store
	// Creator is recorded as the creator of every decision and approval
	// the adapter writes: the API token an evaluation runs for (docket
	// serve), empty for the hooks and the CLI.
	Creator string

	mu        sync.Mutex
	recallIDs map[string]string
}

// New wraps s.
func New(s store.Store) *Adapter { return &Adapter{S: s} }

// Recall implements Recaller.
func (a *Adapter) Recall(ctx context.Context, q judge.RecallQuery) (judge.Recall, error) {
	ent := store.Entities{Tools: []string{q.ToolName}}
	if q.ProjectID != "" {
		ent.Repos = []string{q.ProjectID}
	}
	if q.TargetSystem != "" {
		ent.Systems = []string{q.TargetSystem}
	}
	if strings.HasPrefix(q.Target, "/") {
		ent.Files = []string{q.Target}
	}
	ws := q.WorkspaceID
	if ws == "" {
		ws = "default"
	}
	resp, err := a.S.Recall(ctx, store.RecallRequest{
		SchemaVersion: store.RecallSchema, RequestID: "rq_" + shortHash(q.SessionID+q.ActionID),
		Workspace: ws, Project: q.ProjectID, Task: q.SessionID, ActionID: q.ActionID, Session: q.SessionID,
		Query:  store.Query{Summary: q.Summary + " " + q.Target, ActionType: string(q.Class), ToolName: q.ToolName, TargetSystem: q.TargetSystem, Entities: ent},
		Scope:  store.RequestScope{Visibility: store.Personal},
		Limits: store.Limits{MaxItems: q.MaxItems, MaxTokens: 2000},
	})
	if err != nil {
		return judge.Recall{}, fmt.Errorf("recall: %w", err)
	}
	a.mu.Lock()
	if a.recallIDs == nil {
		a.recallIDs = map[string]string{}
	}
	a.recallIDs[q.ActionID] = resp.RecallID
	a.mu.Unlock()
	r := judge.Recall{Status: "ok", Memories: make([]judge.Memory, 0, len(resp.Memories))}
	for _, m := range resp.Memories {
		r.Memories = append(r.Memories, judge.Memory{
			ID: m.ID, Summary: m.Summary, Content: m.Content, Provenance: string(m.Provenance.Status),
			UsePolicy: string(m.UsePolicy), Confidence: m.Provenance.Confidence, CreatedAt: m.Freshness.CreatedAt.UTC().Format(time.RFC3339),
			Entities: m.Entities,
		})
	}
	// a policy hit binds only the calls its lesson is about: the store
	// finds lessons by shared words and tools, which is too loose for an
	// instruction (judge.LessonBindsQuery)
	for _, h := range resp.PolicyHits {
		for _, m := range r.Memories {
			if m.ID == h.PolicyID && judge.LessonBindsQuery(m, q) {
				r.PolicyHits = append(r.PolicyHits, judge.PolicyHit{PolicyID: h.PolicyID, Summary: h.Summary, RequiredBehavior: h.RequiredBehavior})
				break
			}
		}
	}
	for _, w := range resp.Warnings {
		r.Warnings = append(r.Warnings, w.Code+": "+w.Message)
	}
	return r, nil
}

func shortHash(s string) string {
	return strings.TrimPrefix(canonjson.SHA256([]byte(s)), "sha256:")[:16]
}

// WriteDecision implements DecisionWriter. The decision becomes one
// compact, observed "decisions" candidate so later recalls find it as
// precedent; no arguments and no model reasoning are written.
func (a *Adapter) WriteDecision(ctx context.Context, d judge.DecisionRecord) error {
	a.mu.Lock()
	rid := a.recallIDs[d.ActionID]
	delete(a.recallIDs, d.ActionID)
	a.mu.Unlock()
	kind := "rule"
	if strings.HasPrefix(d.JudgeID, "llm:") {
		kind = "hybrid"
	}
	if d.Human {
		kind = "human"
	}
	ws := d.WorkspaceID
	if ws == "" {
		ws = "default"
	}
	sd := store.Decision{
		SchemaVersion: store.DecisionSchema, Workspace: ws, Project: d.ProjectID, Task: d.SessionID,
		ActionID: d.ActionID, DecisionID: d.DecisionID, IdempotencyKey: d.IdempotencyKey,
		Decision: store.Outcome(d.Decision), ReasoningSummary: d.ReasoningSummary, Confidence: "high",
		Judge:      store.Judge{Kind: kind, PolicyVersion: d.PolicyVersion},
		Escalation: store.Escalation{Required: d.Decision == judge.Escalate, Reason: reasonIf(d.Decision == judge.Escalate, d.ReasoningSummary)},
		RecallID:   rid, Session: d.SessionID, ToolName: d.ToolName, ArgumentsDigest: d.ArgumentsDigest,
		MemoryToWrite: store.MemoryToWrite{
			Decisions:  []string{precedent(d)},
			Lessons:    d.Lessons,
			Provenance: store.CandidateProvenance{DefaultStatus: store.Observed, RequiresReview: d.RequiresReview},
		},
		Entities: append([]string{"tool:" + strings.ToLower(d.ToolName)}, d.Entities...),
		Creator:  a.Creator,
	}
	if d.Decision == judge.Revise {
		sd.RequiredRevision = store.RequiredRevision{Summary: d.ReasoningSummary}
	}
	for _, u := range d.MemoryUsed {
		sd.MemoryUsed = append(sd.MemoryUsed, store.MemoryUse{MemoryID: u.MemoryID, UsedAs: u.UsedAs})
	}
	res, err := a.S.WriteDecision(ctx, sd)
	if err != nil {
		return fmt.Errorf("write decision: %w", err)
	}
	if rid != "" && len(sd.MemoryUsed) > 0 {
		if err := a.S.RecordUse(ctx, rid, res.DecisionID, sd.MemoryUsed); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("record memory use: %w", err)
		}
	}
	return nil
}

func reasonIf(ok bool, s string) string {
	if ok {
		return s
	}
	return ""
}

// precedent is the one-line memory a decision leaves behind.
func precedent(d judge.DecisionRecord) string {
	target := d.Target
	if target != "" {
		target = " " + trunc(target, 160)
	}
	return trunc(fmt.Sprintf("%s%s (%s) was %s by %s: %s", d.ToolName, target, d.RiskClass, pastTense(d.Decision), d.JudgeID, d.ReasoningSummary), 600)
}

func pastTense(o judge.Outcome) string {
	switch o {
	case judge.Allow:
		return "allowed"
	case judge.Block:
		return "blocked"
	case judge.Revise:
		return "sent back for revision"
	case judge.Escalate:
		return "escalated"
	}
	return string(o)
}

// ApprovalID is the id of the approval for a session's action, queued
// by creator (see Adapter.Creator). The same call gets the same id, so a
// retried hook waits on the same item; approvals queued for an API token
// live apart from the hooks' and from every other token's, so that one
// token cannot queue (or be handed) the approval of another's action.
func ApprovalID(creator, session, action string) string {
	key := session + "\x00" + action
	if creator != "" {
		key = creator + "\x00" + key
	}
	return "apr_" + shortHash(key)
}

// Submit implements Approvals, under ApprovalID.
func (a *Adapter) Submit(ctx context.Context, it judge.ApprovalItem) (string, error) {
	ap, err := a.S.SubmitApproval(ctx, store.Approval{
		ID: ApprovalID(a.Creator, it.SessionID, it.ActionID), Session: it.SessionID, ToolUseID: it.ActionID,
		Tool: it.ToolName, Summary: trunc(it.Summary, 300), Reason: trunc(it.Reason, 1000), RiskClass: string(it.RiskClass),
		ArgumentsDigest: it.ArgumentsDigest, TimeoutAt: it.ExpiresAt, Creator: a.Creator,
	})
	if err != nil {
		return "", fmt.Errorf("submit approval: %w", err)
	}
	return ap.ID, nil
}

// Wait implements Approvals: approved and modified approve (modified
// carries the human's arguments), rejected denies, anything else expires.
func (a *Adapter) Wait(ctx context.Context, id string, timeout time.Duration) (judge.Resolution, error) {
	ap, err := store.Wait(ctx, a.S, id, timeout)
	if err != nil {
		if errors.Is(err, store.ErrWaitTimeout) {
			return judge.Resolution{Status: judge.ApprovalExpired}, nil
		}
		return judge.Resolution{}, err
	}
	switch ap.Status {
	case store.ApprovalApproved:
		return judge.Resolution{Status: judge.ApprovalApproved, By: ap.ResolvedBy, Note: ap.Note}, nil
	case store.ApprovalModified:
		return judge.Resolution{Status: judge.ApprovalApproved, By: ap.ResolvedBy, Note: ap.Note, Arguments: ap.Arguments}, nil
	case store.ApprovalRejected:
		return judge.Resolution{Status: judge.ApprovalDenied, By: ap.ResolvedBy, Note: ap.Note}, nil
	}
	return judge.Resolution{Status: judge.ApprovalExpired}, nil
}

// Close closes the store.
func (a *Adapter) Close() error { return a.S.Close() }

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
