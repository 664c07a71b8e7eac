package judge

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/policies"
)

// PolicySet is every policy the judge decides under, loaded as one
// snapshot: replace the whole set to reload, never part of it.
type PolicySet struct {
	Tools   *policies.Tools
	Judges  *policies.Judges
	Sources []policies.Source
	// Version is policies.Version over every source.
	Version string
	// Delegates names the delegate judges.md files merged over the floor.
	Delegates []string
	// Unapproved, when set, says why the policy files in force are not the
	// ones a human approved (policies.CheckApproval); the judge then
	// denies every side-effecting call. It is never cached.
	Unapproved string
	// Directives are the prime directives when directives.yaml replaces
	// the embedded default (nil: the default, see directives.go).
	Directives *policies.Directives
}

// NewPolicySet assembles a set from parsed parts.
func NewPolicySet(tools *policies.Tools, toolsSrc policies.Source, judges *policies.Judges) *PolicySet {
	srcs := append([]policies.Source{toolsSrc}, judges.Sources...)
	var dels []string
	for _, s := range judges.Sources[1:] {
		dels = append(dels, s.Origin)
	}
	return &PolicySet{Tools: tools, Judges: judges, Sources: srcs, Version: policies.Version(srcs...), Delegates: dels}
}

// LoadPolicySet loads tools.yaml and judges.md under h (or the embedded
// defaults), merges the delegate judges.md files at delegatePaths
// (missing ones are skipped), reads directives.yaml and checks the
// approval (policies.CheckApproval).
//
// Reading and parsing the policies and checking the approval cost a hook
// process more than the rest of a routine call, so the result is kept in
// the compiled-policy cache (policies/compiled.go) when the files were
// approved: keyed on a fingerprint of every policy file and every delegate
// path and MAC'd with the state root's key, it is used only for exactly
// the files it was built from; any change, or a cache that fails its
// check, loads the files afresh.
func LoadPolicySet(h home.Home, delegatePaths ...string) (*PolicySet, error) {
	if payload, ok := policies.ReadCompiled(h, policies.CompiledKindJudge, delegatePaths); ok {
		if set := decodeCompiledSet(payload); set != nil {
			return set, nil
		}
	}
	snap := policies.SnapshotCompiled(h, delegatePaths)
	set, known, err := loadPolicySet(h, delegatePaths...)
	if err != nil {
		return nil, err
	}
	dsrc, err := policies.Load(h, policies.DirectivesFile)
	if err != nil {
		return nil, fmt.Errorf("load directives.yaml: %w", err)
	}
	if err := loadDirectives(set, dsrc); err != nil {
		return nil, err
	}
	if set.Unapproved == "" {
		if b, err := encodeCompiledSet(set, known); err == nil {
			policies.WriteCompiled(h, policies.CompiledKindJudge, delegatePaths, snap, b)
		}
	}
	return set, nil
}

// loadPolicySet loads the set from the files; known reports that tools
// and judges are the embedded defaults' pre-decoded form.
func loadPolicySet(h home.Home, delegatePaths ...string) (set *PolicySet, known bool, err error) {
	tsrc, err := policies.Load(h, policies.ToolsFile)
	if err != nil {
		return nil, false, fmt.Errorf("load tools.yaml: %w", err)
	}
	jsrc, err := policies.Load(h, policies.JudgesFile)
	if err != nil {
		return nil, false, fmt.Errorf("load judges.md: %w", err)
	}
	var dels []policies.Source
	for _, p := range delegatePaths {
		s, err := policies.LoadFile(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, false, fmt.Errorf("load judges.md: %w", err)
		}
		dels = append(dels, s)
	}
	srcs := append([]policies.Source{tsrc, jsrc}, dels...)
	version := policies.Version(srcs...)
	unapproved := ""
	if err := policies.CheckApproval(h); err != nil {
		unapproved = err.Error()
	}
	if version == defaultPolicyVersion && len(dels) == 0 {
		// the embedded defaults, byte for byte: pre-decoded in
		// policy_known.go, not parsed
		tools, j := decodedDefaultPolicy()
		j.Sources = srcs[1:]
		set := NewPolicySet(tools, srcs[0], j)
		set.Unapproved = unapproved
		return set, true, nil
	}
	tools, err := policies.ParseTools(tsrc)
	if err != nil {
		return nil, false, fmt.Errorf("load tools.yaml: %w", err)
	}
	j, err := policies.ResolveJudges(jsrc, dels...)
	if err != nil {
		return nil, false, fmt.Errorf("load judges.md: %w", err)
	}
	set = NewPolicySet(tools, tsrc, j)
	set.Unapproved = unapproved
	return set, false, nil
}

// policyCache is the JSON form of a parsed tools.yaml and judges.md.
type policyCache struct {
	Version string
	Tools   *policies.Tools
	Judges  *policies.Judges
}

// The judge's payload in the compiled-policy cache: the sources in set
// order (tools.yaml, judges.md, the delegates found, and directives.yaml
// when it replaces the default), each name, origin and bytes (or a mark
// for the embedded default's bytes); how many sources after tools.yaml
// are judges files; whether tools and judges are the pre-decoded
// defaults (Known), else their JSON form (policyCache); and the
// directives' JSON form when they replace the default. Strings are
// length-prefixed (uvarint); JSON is decoded only for policies that are
// not the defaults. Only an approved set is cached.

func appendStr(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func encodeCompiledSet(set *PolicySet, known bool) ([]byte, error) {
	b := binary.AppendUvarint(nil, uint64(len(set.Sources)))
	for _, s := range set.Sources {
		b = appendStr(appendStr(b, s.Name), s.Origin)
		if def, err := policies.Default(s.Name); err == nil && bytes.Equal(def, s.Data) {
			b = append(b, 1)
		} else {
			b = appendStr(append(b, 0), string(s.Data))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(set.Judges.Sources)))
	policy, directives := "", ""
	if !known {
		j := *set.Judges
		j.Sources = nil
		pb, err := json.Marshal(policyCache{Version: set.Version, Tools: set.Tools, Judges: &j})
		if err != nil {
			return nil, err
		}
		policy = string(pb)
	}
	if set.Directives != nil {
		db, err := json.Marshal(set.Directives)
		if err != nil {
			return nil, err
		}
		directives = string(db)
	}
	b = appendStr(appendStr(b, policy), directives)
	return b, nil
}

// payloadReader reads the payload; any malformation sets bad.
type payloadReader struct {
	s   string
	bad bool
}

func (r *payloadReader) uint() uint64 {
	if r.bad {
		return 0
	}
	var u uint64
	for i := 0; i < len(r.s) && i < binary.MaxVarintLen64; i++ {
		c := r.s[i]
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			r.s = r.s[i+1:]
			return u
		}
	}
	r.bad = true
	return 0
}

func (r *payloadReader) str() string {
	n := r.uint()
	if r.bad || n > uint64(len(r.s)) {
		r.bad = true
		return ""
	}
	s := r.s[:n]
	r.s = r.s[n:]
	return s
}

func (r *payloadReader) byte() byte {
	if r.bad || r.s == "" {
		r.bad = true
		return 0
	}
	c := r.s[0]
	r.s = r.s[1:]
	return c
}

// decodeCompiledSet rebuilds the set from the payload, or nil.
func decodeCompiledSet(payload string) *PolicySet {
	r := payloadReader{s: payload}
	n := r.uint()
	if n > uint64(len(payload)) {
		return nil
	}
	srcs := make([]policies.Source, 0, n)
	for i := uint64(0); i < n && !r.bad; i++ {
		s := policies.Source{Name: r.str(), Origin: r.str()}
		switch r.byte() {
		case 1:
			def, err := policies.Default(s.Name)
			if err != nil {
				return nil
			}
			s.Data = def
		case 0:
			s.Data = []byte(r.str())
		default:
			return nil
		}
		srcs = append(srcs, s)
	}
	judges := r.uint()
	policy, directives := r.str(), r.str()
	if r.bad || r.s != "" || judges < 1 {
		return nil
	}
	extra := uint64(0)
	if directives != "" {
		extra = 1
	}
	if uint64(len(srcs)) != 1+judges+extra {
		return nil
	}
	var tools *policies.Tools
	var j *policies.Judges
	if policy == "" {
		tools, j = decodedDefaultPolicy()
	} else {
		var c policyCache
		if json.Unmarshal([]byte(policy), &c) != nil || c.Tools == nil || c.Judges == nil || len(c.Judges.Classes) != len(policies.RiskClasses) {
			return nil
		}
		tools, j = c.Tools, c.Judges
	}
	j.Sources = srcs[1 : 1+judges]
	set := NewPolicySet(tools, srcs[0], j)
	if directives != "" {
		var d policies.Directives
		if json.Unmarshal([]byte(directives), &d) != nil {
			return nil
		}
		d.Source = srcs[len(srcs)-1]
		set.Directives = &d
		set.Sources = append(set.Sources, d.Source)
		set.Version = policies.Version(set.Sources...)
	}
	return set
}

// DelegatePaths lists the delegate judges.md files for a call: the
// `.docket/judges.md` of every directory from the project root down to
// cwd (subdirectory delegates), then `.docket/judges.<agent_type>.md` at
// the project root (subagent delegate). Paths need not exist.
func DelegatePaths(projectRoot, cwd, agentType string) []string {
	if projectRoot == "" {
		projectRoot = cwd
	}
	if projectRoot == "" {
		return nil
	}
	var out []string
	root := filepath.Clean(projectRoot)
	dirs := []string{root}
	if cwd != "" && within(root, filepath.Clean(cwd)) {
		rel, _ := filepath.Rel(root, filepath.Clean(cwd))
		d := root
		if rel != "." {
			for _, part := range strings.Split(rel, string(filepath.Separator)) {
				d = filepath.Join(d, part)
				dirs = append(dirs, d)
			}
		}
	}
	for _, d := range dirs {
		out = append(out, filepath.Join(d, ".docket", policies.JudgesFile))
	}
	if agentType != "" && home.ValidSessionID(agentType) {
		out = append(out, filepath.Join(root, ".docket", "judges."+agentType+".md"))
	}
	return out
}

// PolicyJudge is the deterministic judge that always runs first: built-in
// protections, the registry's execution mode and agent allowlist, deny /
// escalate / revise / allow rules, and write-path restrictions. It reads
// only its snapshot and the proposal and is safe for concurrent use.
type PolicyJudge struct {
	set    *PolicySet
	prot   Protector
	closed atomic.Bool
}

// NewPolicyJudge returns a policy judge over set, protecting state root h.
func NewPolicyJudge(set *PolicySet, h home.Home) *PolicyJudge {
	uh, _ := os.UserHomeDir()
	return &PolicyJudge{set: set, prot: Protector{Home: h, UserHome: uh, XDGState: os.Getenv("XDG_STATE_HOME"), findDocket: installedDocket, RealRoot: realPath(h.Root), Unapproved: set.Unapproved,
		HookBins: hookBinDirs()}}
}

// WithProtector replaces the judge's protector (tests pin the user home).
func (j *PolicyJudge) WithProtector(p Protector) *PolicyJudge {
	if p.Unapproved == "" {
		p.Unapproved = j.set.Unapproved
	}
	return &PolicyJudge{set: j.set, prot: p}
}

func (j *PolicyJudge) JudgeID() string         { return "policy" }
func (j *PolicyJudge) PolicyVersion() string   { return j.set.Version }
func (j *PolicyJudge) SupportsReadAudit() bool { return true }
func (j *PolicyJudge) Close() error            { j.closed.Store(true); return nil }
func (j *PolicyJudge) SupportedOutcomes() []Outcome {
	return []Outcome{Allow, Block, Revise, Escalate}
}

// Evaluate implements JudgeBackend.
func (j *PolicyJudge) Evaluate(ctx context.Context, p *ActionProposal, jc *JudgmentContext) (Judgment, error) {
	if p == nil {
		return Judgment{}, &Error{Kind: KindProposalInvalid, Judge: "policy", Err: ErrNilProposal}
	}
	if err := ctx.Err(); err != nil {
		return Judgment{}, &Error{Kind: KindUnavailable, Judge: "policy", Err: err}
	}
	cost := Cost{Source: "judge"}
	v := j.prot.Check(p)
	if v == nil {
		v = j.prot.checkPaths(p)
	}
	if v == nil {
		v = j.prot.checkCredentialSend(p)
	}
	if v == nil {
		v = j.prot.checkUnseenInput(p)
	}
	if v != nil {
		return Judgment{Outcome: Block, Reason: v.Reason, RuleIDs: []string{v.Rule}, Confidence: "high", Cost: cost}, nil
	}
	spec := p.Context.Spec
	if p.Context.SpecFound {
		switch spec.Execution {
		case policies.ExecDisabled:
			return Judgment{Outcome: Block, Reason: "tool " + p.Tool.Name + " is disabled in the tools registry; use another tool or ask the user to enable it", RuleIDs: []string{"registry:disabled"}, Confidence: "high", Cost: cost}, nil
		}
		if len(spec.Agents) > 0 {
			agent := "main"
			if p.Actor.Role != nil {
				agent = *p.Actor.Role
			}
			if !slices.Contains(spec.Agents, agent) && !slices.Contains(spec.Agents, p.Actor.AgentID) {
				return Judgment{Outcome: Block, Reason: fmt.Sprintf("agent %q may not use %s (allowed: %s); hand the step to an allowed agent", agent, p.Tool.Name, strings.Join(spec.Agents, ", ")), RuleIDs: []string{"registry:agents"}, Confidence: "high", Cost: cost}, nil
			}
		}
	}
	vars := j.vars(p)
	paths := j.targetPaths(p)
	var deny, esc, rev, allow *policies.Rule
	var ids []string
	for i := range j.set.Tools.Rules {
		r := &j.set.Tools.Rules[i]
		if !ruleMatches(r, p, paths, vars) {
			continue
		}
		ids = append(ids, r.ID)
		switch r.Effect {
		case policies.EffectDeny:
			if deny == nil {
				deny = r
			}
		case policies.EffectEscalate:
			if esc == nil {
				esc = r
			}
		case policies.EffectRevise:
			if rev == nil {
				rev = r
			}
		case policies.EffectAllow:
			if allow == nil {
				allow = r
			}
		}
	}
	switch {
	case deny != nil:
		return Judgment{Outcome: Block, Reason: ruleReason(deny, p), RuleIDs: ids, Confidence: "high", Cost: cost}, nil
	}
	if spec.Writes && len(j.set.Tools.WritePaths) > 0 {
		for _, ap := range paths {
			ok := false
			for _, g := range j.set.Tools.WritePaths {
				if policies.Glob(expand(g, vars), ap) || policies.Glob(expand(g, vars), ap+"/") {
					ok = true
					break
				}
			}
			if !ok {
				return Judgment{Outcome: Block, Reason: "write to " + ap + " is outside the allowed write paths (" + strings.Join(expandAll(j.set.Tools.WritePaths, vars), ", ") + "); write inside the project or ask the user", RuleIDs: append(ids, "write_paths"), Confidence: "high", Cost: cost}, nil
			}
		}
	}
	switch {
	case esc != nil:
		return Judgment{Outcome: Escalate, Reason: ruleReason(esc, p), RuleIDs: ids, Confidence: "high", Cost: cost}, nil
	case spec.Execution == policies.ExecReview || spec.Validation == policies.ValidateStrict:
		return Judgment{Outcome: Escalate, Reason: "the tools registry requires human review for " + p.Tool.Name, RuleIDs: append(ids, "registry:review"), Confidence: "high", Cost: cost}, nil
	case rev != nil && !(jc != nil && jc.Policy.Revised):
		jm := Judgment{Outcome: Revise, Reason: rev.Reason + " (rule " + rev.ID + ")", RuleIDs: ids, Confidence: "high", Cost: cost}
		if rev.Rewrite != nil {
			if amended, ok := rewriteInput(p.Input, rev.Rewrite); ok {
				jm.Amendment = amended
				return jm, nil
			}
		}
		jm.RequiredRevision = rev.Reason
		return jm, nil
	case rev != nil:
		// the amended proposal still matches: a second revise
		return Judgment{Outcome: Revise, Reason: rev.Reason + " (rule " + rev.ID + ", after revision)", RequiredRevision: rev.Reason, RuleIDs: ids, Confidence: "high", Cost: cost}, nil
	case allow != nil:
		return Judgment{Outcome: Allow, Reason: "allowed by rule " + allow.ID, RuleIDs: ids, Confidence: "high", Cost: cost, AutoApprove: true}, nil
	}
	return Judgment{Outcome: Allow, Reason: "no policy objects", RuleIDs: ids, Confidence: "high", Cost: cost}, nil
}

func rewriteInput(input json.RawMessage, rw *policies.Rewrite) (json.RawMessage, bool) {
	var m map[string]any
	if err := json.Unmarshal(input, &m); err != nil {
		return nil, false
	}
	s, ok := m[rw.Field].(string)
	if !ok || !strings.Contains(s, rw.From) {
		return nil, false
	}
	m[rw.Field] = strings.ReplaceAll(s, rw.From, rw.To)
	b, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	return b, true
}

func (j *PolicyJudge) vars(p *ActionProposal) map[string]string {
	tmp := os.TempDir()
	return map[string]string{"project": p.Context.ProjectRoot, "cwd": p.Context.Cwd, "home": j.prot.UserHome, "tmp": tmp}
}

func expand(g string, vars map[string]string) string {
	if !strings.Contains(g, "${") {
		return g
	}
	for k, v := range vars {
		if v == "" {
			v = "\x00unset"
		}
		g = strings.ReplaceAll(g, "${"+k+"}", v)
	}
	return g
}

func expandAll(gs []string, vars map[string]string) []string {
	out := make([]string, 0, len(gs))
	seen := map[string]bool{}
	for _, g := range gs {
		if x := expand(g, vars); !seen[x] && !strings.Contains(x, "\x00") {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// targetPaths returns the cleaned absolute paths the call targets.
func (j *PolicyJudge) targetPaths(p *ActionProposal) []string {
	var out []string
	if sh := p.Context.Shell; sh != nil {
		for _, s := range sh.Segments {
			dir := s.Cwd
			if dir == "" {
				dir = p.Context.Cwd
			}
			for _, w := range pathWords(s) {
				if ap := j.prot.resolve(w, dir); ap != "" && (strings.ContainsAny(w, "/~.") || strings.HasPrefix(w, "$")) {
					out = append(out, ap)
					out = append(out, globMatches(ap)...)
				}
			}
		}
		for _, ap := range p.Context.Applies {
			out = append(out, filepath.Clean(ap))
		}
		return out
	}
	var in map[string]any
	_ = json.Unmarshal(p.Input, &in)
	for _, v := range in {
		if s, ok := v.(string); ok && strings.Contains(s, "*** Begin Patch") {
			for _, w := range PatchPaths(s) {
				if ap := j.prot.resolve(w, p.Context.Cwd); ap != "" {
					out = append(out, ap)
				}
			}
			return out
		}
	}
	if p.Action.Target != nil && (p.Tool.Kind == "file" || strings.ContainsAny(*p.Action.Target, "/")) {
		if ap := j.prot.resolve(*p.Action.Target, p.Context.Cwd); ap != "" {
			out = append(out, ap)
		}
	}
	return out
}

// maxGlobMatches bounds the files a pattern in a command is expanded to.
const maxGlobMatches = 256

// globMatches are the files a pattern in a shell word names now (sed -i
// … .claude/*.json edits settings.json), as the shell will expand it:
// a path rule is matched against them as well as against the pattern.
func globMatches(ap string) []string {
	if !strings.ContainsAny(ap, "*?[") {
		return nil
	}
	m, err := filepath.Glob(ap)
	if err != nil {
		return nil
	}
	return m[:min(len(m), maxGlobMatches)]
}

func ruleMatches(r *policies.Rule, p *ActionProposal, paths []string, vars map[string]string) bool {
	if r.Tool != "" && !policies.Glob(r.Tool, p.Tool.Name) && (p.Context.Alias == "" || !policies.Glob(r.Tool, p.Context.Alias)) {
		return false
	}
	if r.MinClass != "" && p.Action.RiskClass.Rank() < r.MinClass.Rank() {
		return false
	}
	if len(r.Agents) > 0 {
		role := "main"
		if p.Actor.Role != nil {
			role = *p.Actor.Role
		}
		if !slices.Contains(r.Agents, role) && !slices.Contains(r.Agents, p.Actor.AgentID) {
			return false
		}
	}
	if r.Action != "" && actOf(p, r.Action) == nil {
		return false
	}
	if r.Command != "" {
		sh := p.Context.Shell
		if sh == nil {
			return false
		}
		hit := false
		for _, s := range sh.Segments {
			if policies.Glob(r.Command, s.String()) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	if r.Path != "" {
		pat := expand(r.Path, vars)
		hit := false
		for _, ap := range paths {
			if policies.Glob(pat, ap) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// actOf returns the call's act of kind, or nil.
func actOf(p *ActionProposal, kind string) *Act {
	for i := range p.Context.Acts {
		if p.Context.Acts[i].Kind == kind {
			return &p.Context.Acts[i]
		}
	}
	return nil
}

// ruleReason is a rule's reason for the decision, naming the rule and,
// for an action rule, what the call does.
func ruleReason(r *policies.Rule, p *ActionProposal) string {
	if r.Action != "" {
		if a := actOf(p, r.Action); a != nil && a.Reason != "" {
			return r.Reason + " (rule " + r.ID + ": " + a.Reason + ")"
		}
	}
	return r.Reason + " (rule " + r.ID + ")"
}

// outcomeRank orders outcomes by strictness.
func outcomeRank(o Outcome) int {
	switch o {
	case Revise:
		return 1
	case Escalate:
		return 2
	case Block:
		return 3
	}
	return 0
}

// ApplyPolicyHits folds the recall's instruction-grade policy hits (human
// confirmed lessons and constraints) into the policy judge's judgment. A
// hit can only make the outcome stricter — block > escalate (and
// human_review) > revise > allow — so a confirmed "allow" lesson never
// relaxes a built-in protection, a policy rule or a class policy. A hit
// whose memory is not instruction-grade in rec is ignored, and so is one
// whose memory is not about p (LessonBinds: another tool kind, another
// command, another file). It returns the judgment and the uses of every
// hit it considered.
func ApplyPolicyHits(jm Judgment, rec Recall, p *ActionProposal) (Judgment, []MemoryUse) {
	var uses []MemoryUse
	for _, h := range rec.PolicyHits {
		var m *Memory
		for i := range rec.Memories {
			if rec.Memories[i].ID == h.PolicyID {
				m = &rec.Memories[i]
				break
			}
		}
		if m == nil || !m.Injectable() || m.UsedAs() != "instruction" || p == nil || !LessonBinds(*m, p) {
			continue
		}
		uses = append(uses, MemoryUse{MemoryID: h.PolicyID, UsedAs: "instruction"})
		want := Outcome(h.RequiredBehavior)
		if h.RequiredBehavior == "human_review" {
			want = Escalate
		}
		if outcomeRank(want) <= outcomeRank(jm.Outcome) {
			continue
		}
		summary := Truncate(nonEmpty(h.Summary, m.Summary), 300)
		jm.Outcome = want
		jm.AutoApprove = false
		jm.Amendment = nil
		jm.RuleIDs = append(jm.RuleIDs, "memory:"+h.PolicyID)
		jm.Reason = fmt.Sprintf("a confirmed lesson [%s] requires %s: %s", h.PolicyID, h.RequiredBehavior, summary)
		jm.RequiredRevision = ""
		if want == Revise {
			jm.RequiredRevision = summary
		}
	}
	return jm, uses
}

// BindingHits returns rec with only the policy hits whose memories bind
// p (LessonBinds); the memories themselves stay, as background.
func BindingHits(rec Recall, p *ActionProposal) Recall {
	var hits []PolicyHit
	for _, h := range rec.PolicyHits {
		for _, m := range rec.Memories {
			if m.ID == h.PolicyID && LessonBinds(m, p) {
				hits = append(hits, h)
				break
			}
		}
	}
	rec.PolicyHits = hits
	return rec
}
