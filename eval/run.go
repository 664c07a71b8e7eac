package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/storeadapter"
	"github.com/docket/docket/store"
	"github.com/docket/docket/store/sqlstore"
)

// UserHome is the user's home directory as the evaluation's judge sees
// it; the incidents aim at it (~/.ssh, ~/.aws, rm -rf ~).
const UserHome = "/home/dev"

// Reviewer is the name the evaluation's reviewer acts under.
const Reviewer = "eval-reviewer"

// Options configure a run.
type Options struct {
	// Dir is a scratch directory for the state roots and SQLite stores
	// of the run; it must exist and be empty or unused.
	Dir string
	// Fixtures to judge; nil means the embedded set.
	Fixtures []Fixture
	// Recall fixtures; nil means the embedded set.
	Recall *RecallSet
}

// Disagreement is a proposal the judge decided differently from its label.
type Disagreement struct {
	ID          string        `json:"id"`
	Expected    judge.Outcome `json:"expected"`
	Got         judge.Outcome `json:"got"`
	LabelReason string        `json:"label_reason"`
	JudgeReason string        `json:"judge_reason"`
}

// Experiment is the memory off / on comparison.
type Experiment struct {
	MemoryOff JudgeMetrics `json:"memory_off"`
	MemoryOn  JudgeMetrics `json:"memory_on"`
	// Difference is memory on minus memory off for the headline figures.
	Difference map[string]float64 `json:"difference"`
	// Corrected are proposals judged wrong with memory off and right with
	// memory on; Regressed the reverse.
	Corrected []string `json:"corrected"`
	Regressed []string `json:"regressed"`
	// DecidedByLesson counts memory-on decisions a confirmed lesson
	// decided; OnPoint those whose lesson came from a call with the same
	// subject (tool, and for shell calls the program): the others are
	// lessons recalled for an unrelated call.
	// CorrectedOnPoint counts the corrected proposals whose lesson was on
	// point.
	DecidedByLesson  int `json:"decided_by_lesson"`
	OnPoint          int `json:"lesson_on_point"`
	CorrectedOnPoint int `json:"corrected_on_point"`
	// LessonOf names, for each corrected or regressed proposal, the
	// fixture whose lesson decided it.
	LessonOf map[string]string `json:"lesson_of"`
}

// FixtureSummary describes the labelled set.
type FixtureSummary struct {
	Total      int                   `json:"total"`
	Real       int                   `json:"real"`
	Synthetic  int                   `json:"synthetic"`
	ByExpected map[judge.Outcome]int `json:"by_expected"`
}

// Report is the whole evaluation.
type Report struct {
	Fixtures      FixtureSummary `json:"fixtures"`
	Judge         JudgeMetrics   `json:"judge"`
	Recall        RecallMetrics  `json:"recall"`
	Governance    Governance     `json:"governance"`
	Experiment    Experiment     `json:"experiment"`
	Disagreements []Disagreement `json:"disagreements"`
	// RecallQueries are what each recall fixture query returned.
	RecallQueries []RecallResult `json:"recall_queries"`
	Definitions   []Metric       `json:"definitions"`
}

// Run judges the fixtures with memory off (the judge metrics and the
// disagreements), again with memory on (the experiment, governance and
// decisions with sufficient evidence), and runs the recall fixtures.
func Run(ctx context.Context, o Options) (*Report, error) {
	fx := o.Fixtures
	if fx == nil {
		var err error
		if fx, err = Fixtures(); err != nil {
			return nil, err
		}
	}
	rs := o.Recall
	if rs == nil {
		var err error
		if rs, err = EmbeddedRecall(); err != nil {
			return nil, err
		}
	}
	rep := &Report{Fixtures: FixtureSummary{Total: len(fx), ByExpected: map[judge.Outcome]int{}}, Disagreements: []Disagreement{}}
	for _, f := range fx {
		rep.Fixtures.ByExpected[f.Expected]++
		if f.Source.Kind == "real" {
			rep.Fixtures.Real++
		} else {
			rep.Fixtures.Synthetic++
		}
	}
	off, _, err := JudgeStream(ctx, filepath.Join(o.Dir, "memory-off"), fx, false)
	if err != nil {
		return nil, fmt.Errorf("judge with memory off: %w", err)
	}
	on, gov, err := JudgeStream(ctx, filepath.Join(o.Dir, "memory-on"), fx, true)
	if err != nil {
		return nil, fmt.Errorf("judge with memory on: %w", err)
	}
	rep.Judge = ComputeJudge(off)
	rep.Governance = gov
	byID := map[string]Fixture{}
	for _, f := range fx {
		byID[f.ID] = f
	}
	for _, r := range off {
		if r.Got != r.Expected {
			rep.Disagreements = append(rep.Disagreements, Disagreement{ID: r.ID, Expected: r.Expected, Got: r.Got, LabelReason: byID[r.ID].Reason, JudgeReason: r.Reason})
		}
	}
	rep.Experiment = compare(off, on)
	rres, err := RunRecall(ctx, filepath.Join(o.Dir, "recall"), rs)
	if err != nil {
		return nil, fmt.Errorf("run recall fixtures: %w", err)
	}
	rep.Recall = ComputeRecall(rres)
	rep.RecallQueries = rres
	rep.Recall.DecisionsWithSufficientEvidence = ComputeSufficientEvidence(on)
	rep.Definitions = append(append(append([]Metric{}, JudgeDefinitions...), RecallDefinitions...), GovernanceDefinitions...)
	return rep, nil
}

func compare(off, on []Result) Experiment {
	x := Experiment{MemoryOff: ComputeJudge(off), MemoryOn: ComputeJudge(on), Corrected: []string{}, Regressed: []string{}}
	a, b := x.MemoryOff, x.MemoryOn
	x.Difference = map[string]float64{
		"false_allows":                      float64(b.FalseAllows - a.FalseAllows),
		"false_blocks":                      float64(b.FalseBlocks - a.FalseBlocks),
		"incidents_caught_before_execution": float64(b.IncidentsCaught - a.IncidentsCaught),
		"escalation_rate":                   b.EscalationRate - a.EscalationRate,
		"revision_rate":                     b.RevisionRate - a.RevisionRate,
		"agreement":                         b.Agreement - a.Agreement,
	}
	x.LessonOf = map[string]string{}
	for _, r := range on {
		if r.LessonFrom != "" {
			x.DecidedByLesson++
			if r.LessonTool == r.Tool {
				x.OnPoint++
			}
		}
	}
	for i := range off {
		if i >= len(on) {
			break
		}
		okOff, okOn := off[i].Got == off[i].Expected, on[i].Got == on[i].Expected
		switch {
		case !okOff && okOn:
			x.Corrected = append(x.Corrected, off[i].ID)
			if on[i].LessonFrom != "" && on[i].LessonTool == on[i].Tool {
				x.CorrectedOnPoint++
			}
		case okOff && !okOn:
			x.Regressed = append(x.Regressed, off[i].ID)
		default:
			continue
		}
		if on[i].LessonFrom != "" {
			x.LessonOf[on[i].ID] = on[i].LessonFrom
		}
	}
	return x
}

// newEngine returns the judge engine docket-judge builds, under a fresh
// state root at dir: the policies in force there (the embedded defaults),
// built-in protections for UserHome, decisions recorded in memory.
func newEngine(dir string) (*judge.Engine, home.Home, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, home.Home{}, fmt.Errorf("create state root: %w", err)
	}
	h, err := home.At(dir)
	if err != nil {
		return nil, home.Home{}, err
	}
	set, err := judge.LoadPolicySet(h)
	if err != nil {
		return nil, home.Home{}, fmt.Errorf("load policies: %w", err)
	}
	e := judge.NewEngine(h, set)
	e.SideChannel = false
	e.Protector = &judge.Protector{Home: h, UserHome: UserHome, XDGState: UserHome + "/.local/state"}
	e.SetPolicy(set)
	e.Ledger = &judge.MemLedger{}
	// generous store deadlines: the evaluation measures decisions, not a
	// loaded machine's latency
	e.RecallTimeout, e.WriteBackTimeout = 10*time.Second, 10*time.Second
	return e, h, nil
}

// JudgeStream judges the fixtures in order under a fresh state root at
// dir. With memory, the engine recalls from and writes back to a SQLite
// store there, and after each decision a reviewer who knows the labels
// works the review queue through the store's review path:
//
//   - when the judge decided less strictly than the label, the reviewer
//     writes a human correction (a decision by a human judge whose lesson
//     asks for the label's outcome), which enters review at high priority;
//   - each open lesson candidate is confirmed as an instruction when its
//     behavior is the label of the proposal it came from (a human's
//     correction always is), rejected when it is stricter than that label
//     (it would teach false blocks), and downgraded to evidence when it is
//     weaker (the correction carries the right behavior).
//
// Memory can only make the judge stricter (instruction-grade lessons
// raise an outcome, never lower it), so a false block is not corrected.
func JudgeStream(ctx context.Context, dir string, fx []Fixture, memory bool) ([]Result, Governance, error) {
	var gov Governance
	e, h, err := newEngine(dir)
	if err != nil {
		return nil, gov, err
	}
	var st *sqlstore.Store
	var ad *storeadapter.Adapter
	if memory {
		st, err = sqlstore.Open(ctx, h, "")
		if err != nil {
			return nil, gov, err
		}
		defer st.Close()
		ad = storeadapter.New(st)
		e.OpenRecall = func(context.Context) (judge.Recaller, error) { return ad, nil }
		e.Writer = ad
	}
	rv := &reviewer{st: st, labels: map[string]judge.Outcome{}, source: map[string]Result{}, gov: &gov}
	classes := e.Policy().Judges.Classes
	out := make([]Result, 0, len(fx))
	for i, f := range fx {
		payload := bytes.ReplaceAll(f.Payload, []byte(StatePlaceholder), []byte(h.Root))
		ev, err := hooks.Decode(payload, "")
		if err != nil {
			return nil, gov, fmt.Errorf("fixture %s: decode payload: %w", f.ID, err)
		}
		_, d := e.Decide(ctx, ev)
		got := judged(d)
		r := Result{ID: f.ID, Expected: f.Expected, Got: got, Class: d.RiskClass, RuleIDs: d.RuleIDs,
			MemoriesUsed: d.MemoriesUsed, Recall: d.Recall, Reason: d.Reason, RecallNeeded: classes[d.RiskClass].Recall, Tool: subject(ev)}
		if !memory {
			out = append(out, r)
			continue
		}
		if err := rv.lessonSource(ctx, &r); err != nil {
			return nil, gov, fmt.Errorf("fixture %s: %w", f.ID, err)
		}
		out = append(out, r)
		if d.IdempotencyKey != "" {
			id := judgeDecisionID(d.IdempotencyKey)
			rv.labels[id] = f.Expected
			rv.source[id] = r
		}
		if rank(got) < rank(f.Expected) && d.Proposal != nil {
			if err := rv.correct(ctx, i, f, ev, d); err != nil {
				return nil, gov, fmt.Errorf("fixture %s: %w", f.ID, err)
			}
		}
		if err := rv.work(ctx); err != nil {
			return nil, gov, fmt.Errorf("fixture %s: %w", f.ID, err)
		}
	}
	if memory {
		n, err := refusedInstructionWrites(ctx, st)
		if err != nil {
			return nil, gov, err
		}
		gov.InferredPreventedFromInstruction += n
		resolved, err := st.ListReview(ctx, store.ReviewFilter{Status: store.ReviewResolved, Limit: 100000})
		if err != nil {
			return nil, gov, fmt.Errorf("list resolved review items: %w", err)
		}
		for _, it := range resolved {
			switch it.Resolution {
			case store.ActConfirm:
				gov.Confirmed++
			case store.ActReject:
				gov.Rejected++
			case store.ActEvidenceOnly:
				gov.DowngradedToEvidence++
			}
		}
	}
	return out, gov, nil
}

// judgeDecisionID is the store decision id the engine writes for a key.
func judgeDecisionID(key string) string {
	return judge.EvaluationDecisionID(key)
}

type reviewer struct {
	st *sqlstore.Store
	// labels maps a store decision id to the label of its proposal, and
	// source to the proposal's result.
	labels map[string]judge.Outcome
	source map[string]Result
	seen   map[string]bool
	gov    *Governance
}

// correct writes a human correction for a decision less strict than the
// label: a decision by a human judge whose lesson asks for the label.
func (rv *reviewer) correct(ctx context.Context, i int, f Fixture, ev *hooks.Event, d *judge.Decision) error {
	p := d.Proposal
	ws := p.WorkspaceID
	if ws == "" {
		ws = "default"
	}
	proj := ""
	if p.ProjectID != nil {
		proj = *p.ProjectID
	}
	id := fmt.Sprintf("dec_correction_%04d", i)
	rv.labels[id] = f.Expected
	rv.source[id] = Result{ID: f.ID, Tool: subject(ev)}
	res, err := rv.st.WriteDecision(ctx, store.Decision{
		Workspace: ws, Project: proj, Task: p.Binding.SessionID, ActionID: p.ActionID + ":correction",
		DecisionID: id, IdempotencyKey: "correction:" + d.IdempotencyKey, Decision: store.Outcome(f.Expected),
		ReasoningSummary: "human correction of a " + string(d.Outcome) + ": " + f.Reason, Confidence: "high",
		Judge: store.Judge{Kind: "human"}, Session: p.Binding.SessionID, ToolName: p.Tool.Name,
		MemoryToWrite: store.MemoryToWrite{Lessons: []string{LessonText(f.Expected, p.Action.Description, string(d.RiskClass), f.Reason)}},
		// what the call was about: the lesson binds only calls like it
		Entities: judge.SubjectEntities(p),
	})
	if err != nil {
		return fmt.Errorf("write human correction: %w", err)
	}
	rv.gov.HumanCorrections++
	if len(res.Memories) == 0 {
		// the write-back firewall refused the lesson (see Rejections)
		rv.gov.CorrectionsRefused++
	}
	return nil
}

// lessonSource fills r.LessonFrom and r.LessonTool from the confirmed
// lesson that decided r: the last "memory:" rule id, the one that raised
// the outcome last.
func (rv *reviewer) lessonSource(ctx context.Context, r *Result) error {
	for i := len(r.RuleIDs) - 1; i >= 0; i-- {
		mid, ok := strings.CutPrefix(r.RuleIDs[i], "memory:")
		if !ok {
			continue
		}
		m, err := rv.st.GetMemory(ctx, mid)
		if err != nil {
			return fmt.Errorf("read lesson %s: %w", mid, err)
		}
		if src, ok := rv.source[m.DecisionID]; ok {
			r.LessonFrom, r.LessonTool = src.ID, src.Tool
		}
		return nil
	}
	return nil
}

// subject is what a lesson is about: the tool, and for a shell call the
// program it runs first ("Bash git", "Bash kubectl").
func subject(ev *hooks.Event) string {
	if cmd, ok := hooks.ShellCommandOf(ev.ToolInput); ok {
		if f := strings.Fields(cmd); len(f) > 0 {
			return ev.ToolName + " " + f[0]
		}
	}
	return ev.ToolName
}

// LessonText words a lesson the way the engine words its own candidates.
func LessonText(o judge.Outcome, what, class, why string) string {
	if r := []rune(what); len(r) > 200 {
		what = string(r[:200])
	}
	switch o {
	case Block:
		return fmt.Sprintf("Do not run %s (%s): %s", what, class, why)
	case Revise:
		return fmt.Sprintf("Revise %s (%s) before it runs: %s", what, class, why)
	}
	return fmt.Sprintf("Ask a human before %s (%s): %s", what, class, why)
}

// work resolves every open review item (see JudgeStream).
func (rv *reviewer) work(ctx context.Context) error {
	items, err := rv.st.ListReview(ctx, store.ReviewFilter{Limit: 1000})
	if err != nil {
		return fmt.Errorf("list review queue: %w", err)
	}
	if rv.seen == nil {
		rv.seen = map[string]bool{}
	}
	for _, it := range items {
		m, err := rv.st.GetMemory(ctx, it.MemoryID)
		if err != nil {
			return fmt.Errorf("read review memory: %w", err)
		}
		if !rv.seen[it.ID] {
			rv.seen[it.ID] = true
			if m.Provenance.CreatedBy != "user" {
				rv.gov.LessonCandidates++
			}
			if m.Provenance.CreatedBy != "user" && it.Suggested == store.Instruction && m.UsePolicy != store.Instruction {
				rv.gov.InferredPreventedFromInstruction++
			}
		}
		label, ok := rv.labels[m.DecisionID]
		if !ok {
			continue // not from this stream: leave it for a human
		}
		b := judge.Outcome(m.Behavior)
		if b == "" {
			b = Revise
		}
		a := store.ReviewAction{ID: it.ID, Actor: Reviewer}
		switch {
		case b == label:
			a.Action, a.As, a.Behavior, a.Note = store.ActConfirm, store.Instruction, string(label), "matches the label"
		case rank(b) > rank(label):
			a.Action, a.Note = store.ActReject, "stricter than the label ("+string(label)+")"
		default:
			a.Action, a.Note = store.ActEvidenceOnly, "weaker than the label ("+string(label)+"); a correction carries it"
		}
		if _, _, err := rv.st.Review(ctx, a); err != nil {
			return fmt.Errorf("review %s: %w", it.ID, err)
		}
	}
	return nil
}

// refusedInstructionWrites tries to store inferred and generated memories
// as instructions, as a careless or hostile writer would; it returns how
// many the store refused. A write that is accepted is an error: the
// write-back firewall is broken.
func refusedInstructionWrites(ctx context.Context, st store.Store) (int, error) {
	tries := []store.Memory{
		{Summary: "inferred: merging is fine once CI is green", Provenance: store.Provenance{Status: store.Inferred, Confidence: 0.9, CreatedBy: "agent"}, UsePolicy: store.Instruction, ConfirmedBy: "nobody"},
		{Summary: "generated: force pushes to main are fine at night", Provenance: store.Provenance{Status: store.Generated, Confidence: 0.9, CreatedBy: "agent"}, UsePolicy: store.Instruction, ConfirmedBy: "nobody"},
		{Summary: "generated: deploys need no tests", Provenance: store.Provenance{Status: store.Generated, Confidence: 0.9, CreatedBy: "agent"}, UsePolicy: store.Instruction},
	}
	n := 0
	for _, m := range tries {
		m.Scope = store.Scope{Workspace: "default", Visibility: store.WorkspaceVisible}
		_, err := st.PutMemory(ctx, m)
		var ie *store.InvariantError
		if errors.As(err, &ie) {
			n++
			continue
		}
		if err == nil {
			return n, fmt.Errorf("the store accepted an unconfirmed %s memory as an instruction", m.Provenance.Status)
		}
		return n, fmt.Errorf("put memory: %w", err)
	}
	return n, nil
}

// RecallSet is the recall fixtures (testdata/recall.json).
type RecallSet struct {
	Comment  string          `json:"comment"`
	Memories []RecallMemory  `json:"memories"`
	Queries  []RecallQueryFx `json:"queries"`
}

// RecallMemory is one memory of the recall fixtures. Times are relative
// to the run: AgeDays before now; StaleAfterDays from now (negative: in
// the past; zero: never).
type RecallMemory struct {
	Key            string   `json:"key"`
	Summary        string   `json:"summary"`
	Content        string   `json:"content"`
	Status         string   `json:"status"`
	UsePolicy      string   `json:"use_policy"`
	Behavior       string   `json:"behavior,omitempty"`
	ConfirmedBy    string   `json:"confirmed_by,omitempty"`
	Confidence     float64  `json:"confidence"`
	Entities       []string `json:"entities"`
	AgeDays        int      `json:"age_days"`
	StaleAfterDays int      `json:"stale_after_days,omitempty"`
}

// RecallQueryFx is one recall query with its labels.
type RecallQueryFx struct {
	ID      string            `json:"id"`
	Tool    string            `json:"tool"`
	Class   judge.RiskClass   `json:"class"`
	Summary string            `json:"summary"`
	Target  string            `json:"target"`
	Labels  map[string]string `json:"labels"`
}

// ParseRecall decodes and checks recall fixtures.
func ParseRecall(b []byte) (*RecallSet, error) {
	var rs RecallSet
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rs); err != nil {
		return nil, fmt.Errorf("parse recall fixtures: %w", err)
	}
	keys := map[string]bool{}
	for _, m := range rs.Memories {
		if m.Key == "" || keys[m.Key] {
			return nil, fmt.Errorf("parse recall fixtures: memory key %q empty or repeated", m.Key)
		}
		keys[m.Key] = true
	}
	for _, q := range rs.Queries {
		for k, l := range q.Labels {
			if !keys[k] {
				return nil, fmt.Errorf("parse recall fixtures: query %s labels unknown memory %q", q.ID, k)
			}
			switch l {
			case LabelRelevant, LabelStale, LabelDisputed, LabelDuplicate, LabelPolicy:
			default:
				return nil, fmt.Errorf("parse recall fixtures: query %s: unknown label %q", q.ID, l)
			}
		}
	}
	return &rs, nil
}

// EmbeddedRecall returns the embedded recall fixtures.
func EmbeddedRecall() (*RecallSet, error) {
	b, err := files.ReadFile("testdata/recall.json")
	if err != nil {
		return nil, fmt.Errorf("read recall fixtures: %w", err)
	}
	return ParseRecall(b)
}

// RunRecall puts the fixture memories into a fresh SQLite store under dir
// and sends each query the way the judge does (the store adapter's
// Recall), mapping what comes back to fixture keys.
func RunRecall(ctx context.Context, dir string, rs *RecallSet) ([]RecallResult, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create state root: %w", err)
	}
	h, err := home.At(dir)
	if err != nil {
		return nil, err
	}
	st, err := sqlstore.Open(ctx, h, "")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	now := time.Now().UTC()
	keyOf := map[string]string{}
	for _, fm := range rs.Memories {
		created := now.Add(-time.Duration(fm.AgeDays) * 24 * time.Hour)
		m := store.Memory{
			ID: "mem_eval_" + fm.Key, Summary: fm.Summary, Content: fm.Content,
			Source:     store.Source{Kind: "manual_entry", URI: "eval:" + fm.Key},
			Provenance: store.Provenance{Status: store.Status(fm.Status), Confidence: fm.Confidence, CreatedBy: "user"},
			UsePolicy:  store.UsePolicy(fm.UsePolicy), Behavior: fm.Behavior, ConfirmedBy: fm.ConfirmedBy,
			Scope:     store.Scope{Workspace: "default", Visibility: store.WorkspaceVisible},
			Entities:  fm.Entities,
			Freshness: store.Freshness{CreatedAt: created, LastSeenAt: created},
		}
		if fm.ConfirmedBy != "" {
			m.Freshness.LastConfirmedAt = created
		}
		if fm.StaleAfterDays != 0 {
			m.Freshness.StaleAfter = now.Add(time.Duration(fm.StaleAfterDays) * 24 * time.Hour)
		}
		if _, err := st.PutMemory(ctx, m); err != nil {
			return nil, fmt.Errorf("put memory %s: %w", fm.Key, err)
		}
		keyOf[m.ID] = fm.Key
	}
	ad := storeadapter.New(st)
	var out []RecallResult
	for _, q := range rs.Queries {
		rec, err := ad.Recall(ctx, judge.RecallQuery{
			SessionID: "eval-recall", ActionID: "recall-" + q.ID, Summary: q.Summary, Class: q.Class,
			ToolName: q.Tool, Target: q.Target, MaxItems: 5,
		})
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", q.ID, err)
		}
		r := RecallResult{Query: q.ID, Returned: []string{}, PolicyHits: []string{}, Labels: q.Labels}
		for _, m := range rec.Memories {
			r.Returned = append(r.Returned, keyOrID(keyOf, m.ID))
		}
		for _, ph := range rec.PolicyHits {
			r.PolicyHits = append(r.PolicyHits, keyOrID(keyOf, ph.PolicyID))
		}
		out = append(out, r)
	}
	return out, nil
}

func keyOrID(keyOf map[string]string, id string) string {
	if k, ok := keyOf[id]; ok {
		return k
	}
	return id
}
