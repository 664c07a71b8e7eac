package store

import (
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Recall defaults and bounds.
const (
	DefaultMaxItems = 10
	MaxMaxItems     = 100
	// CandidateLimit is how many text matches and how many entity matches
	// a backend fetches before Select ranks them.
	CandidateLimit = 200
	// DailyDecay is the relevance kept per day without recurrence.
	DailyDecay = 0.98
	// maxWarningsPerCode bounds the warnings of one kind.
	maxWarningsPerCode = 5
)

// ValidateRecall checks a recall request and fills its defaults.
func ValidateRecall(req RecallRequest) (RecallRequest, error) {
	if req.SchemaVersion == "" {
		req.SchemaVersion = RecallSchema
	}
	if req.SchemaVersion != RecallSchema {
		return req, invalid("schema_version", "want %s", RecallSchema)
	}
	if req.Workspace == "" {
		return req, invalid("workspace_id", "required")
	}
	if req.Scope.Visibility == "" {
		req.Scope.Visibility = Personal
	}
	if !req.Scope.Visibility.Valid() {
		return req, invalid("scope.visibility", "unknown %q", req.Scope.Visibility)
	}
	for _, p := range req.Policy.AllowedUsePolicies {
		if !p.Valid() {
			return req, invalid("policy.allowed_use_policies", "unknown %q", p)
		}
	}
	if req.Limits.MaxItems <= 0 {
		req.Limits.MaxItems = DefaultMaxItems
	}
	if req.Limits.MaxItems > MaxMaxItems {
		req.Limits.MaxItems = MaxMaxItems
	}
	if req.Limits.MaxTokens < 0 || req.Limits.RecencyDays < 0 {
		return req, invalid("limits", "negative limit")
	}
	return req, nil
}

// RequestTags are the entity tags a request matches on: its typed entities
// plus tool:<tool_name> and system:<target_system>.
func RequestTags(req RecallRequest) []string {
	tags := req.Query.Entities.Tags()
	if req.Query.ToolName != "" {
		tags = append(tags, "tool:"+req.Query.ToolName)
	}
	if req.Query.TargetSystem != "" {
		tags = append(tags, "system:"+req.Query.TargetSystem)
	}
	return NormalizeEntities(tags)
}

// SearchTerms are the query's words for a backend's full-text index:
// lowercased, letters and digits only, stop words dropped, at most 16.
func SearchTerms(req RecallRequest) []string {
	words := Terms(req.Query.Summary + " " + req.Query.ToolName + " " + req.Query.TargetSystem)
	if len(words) > 16 {
		words = words[:16]
	}
	return words
}

// Terms splits text into distinct lowercase words without stop words.
func Terms(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len(w) < 2 || stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by for from has have in into is it its of on or
		that the this to was were will with not no do does did so if then than there their them they we you your
		our can could should would may might must`) {
		stopWords[w] = true
	}
}

// stem reduces a word to a crude shared prefix so that deploy, deploys and
// deploying meet.
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			w = w[:len(w)-len(suf)]
			break
		}
	}
	if len(w) > 7 {
		w = w[:7]
	}
	return w
}

// stemBytes is stem on a byte slice, without allocating.
func stemBytes(w []byte) []byte {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if len(w) > len(suf)+3 && string(w[len(w)-len(suf):]) == suf {
			w = w[:len(w)-len(suf)]
			break
		}
	}
	if len(w) > 7 {
		w = w[:7]
	}
	return w
}

// Candidate is a memory a backend found for a request.
type Candidate struct {
	Memory
}

// TraceItem is one memory a recall returned, for the recall record.
type TraceItem struct {
	MemoryID   string
	Rank       int
	ReturnedAs string // "memory" or "policy_hit"
}

// Select applies the recall rules to candidates and ranks them:
//
//   - scope: same workspace (or org visibility), same project or none,
//     visibility at least as broad as the request's, lifecycle active,
//     within recency_days of the last sighting;
//   - disputed and superseded memories only with include_disputed, stale
//     ones only with include_stale, requires_confirmation and
//     do_not_inject_automatically only with include_unconfirmed, and use
//     policies outside allowed_use_policies never; each exclusion of a
//     relevant memory produces a warning;
//   - score = match (text and entity overlap) × severity × frequency ×
//     decay (0.98^days since last seen or confirmed) × repeatable ×
//     family boost, the memory's bucket deciding severity and family
//     (relevance.go);
//   - policy_hits carry only instruction-grade memories.
//
// The response has no RecallID; the backend sets it when it records the
// trace.
func Select(req RecallRequest, cands []Candidate, now time.Time) (RecallResponse, []TraceItem) {
	return SelectWith(nil, req, cands, now)
}

// SelectWith is Select under scoring configuration rc (nil: the one
// UseRelevance installed, else the default).
func SelectWith(rc *Relevance, req RecallRequest, cands []Candidate, now time.Time) (RecallResponse, []TraceItem) {
	if rc == nil {
		rc = currentRelevance()
	}
	resp := RecallResponse{
		SchemaVersion: RecallResponseSchema,
		RequestID:     req.RequestID,
		Memories:      []RecalledMemory{},
		PolicyHits:    []PolicyHit{},
		Warnings:      []Warning{},
	}
	qterms := stems(SearchTerms(req))
	tags := RequestTags(req)
	anc := newAnchor(rc, req, qterms, tags)
	warned := map[string]int{}
	warn := func(code, msg, id string) {
		warned[code]++
		if warned[code] <= maxWarningsPerCode {
			resp.Warnings = append(resp.Warnings, Warning{Code: code, Message: msg, MemoryID: id})
		}
	}
	seen := map[string]bool{}
	var items []scored
	for _, c := range cands {
		m := c.Memory
		if seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		if !inScope(req, &m, now) {
			continue
		}
		rel := relevance(qterms, tags, &m)
		if rel <= 0 || !anc.holds(&m) {
			continue
		}
		if reason, code := exclusion(req, &m, now); code != "" {
			warn(code, reason, m.ID)
			continue
		}
		bucket, sev := rc.Bucket(&m)
		items = append(items, scored{mem: m, bucket: bucket, f: Factors{Match: rel, Severity: severity(sev, &m)}})
	}
	if rc.MinMatchRatio > 0 {
		best := 0.0
		for _, it := range items {
			best = max(best, it.f.Match)
		}
		kept := items[:0]
		for _, it := range items {
			// an instruction (a confirmed rule or lesson) is never crowded
			// out by a closer precedent: whether it binds is the judge's call
			if it.f.Match >= rc.MinMatchRatio*best || it.mem.UsePolicy == Instruction {
				kept = append(kept, it)
			}
		}
		items = kept
	}
	score(items, now)
	ranked := make([]RecalledMemory, 0, len(items))
	for _, it := range items {
		f := it.f
		f.Match = math.Round(f.Match*1e6) / 1e6
		f.Decay = math.Round(f.Decay*1e6) / 1e6
		ranked = append(ranked, RecalledMemory{Memory: it.mem, Score: it.f.Score(), Bucket: it.bucket, Relevance: &f})
	}
	sort.SliceStable(ranked, func(i, j int) bool {
		if ranked[i].Score != ranked[j].Score {
			return ranked[i].Score > ranked[j].Score
		}
		return ranked[i].ID < ranked[j].ID
	})
	ranked = dropDuplicates(ranked, warn)
	var trace []TraceItem
	tokens := 0
	for _, r := range ranked {
		if len(resp.Memories) == req.Limits.MaxItems {
			warn("truncated_max_items", "more memories matched than max_items", "")
			break
		}
		cost := (len(r.Summary) + len(r.Content)) / 4
		if req.Limits.MaxTokens > 0 && tokens+cost > req.Limits.MaxTokens {
			warn("truncated_max_tokens", "memory left out to stay within max_tokens", r.ID)
			continue
		}
		tokens += cost
		r.Score = math.Round(r.Score*1e6) / 1e6
		resp.Memories = append(resp.Memories, r)
		as := "memory"
		if r.UsePolicy == Instruction && r.Check() == nil {
			as = "policy_hit"
			resp.PolicyHits = append(resp.PolicyHits, PolicyHit{
				PolicyID:         r.ID,
				Summary:          r.Summary,
				RequiredBehavior: behavior(r.Behavior),
				SourceRef:        r.Source.URI,
			})
		}
		trace = append(trace, TraceItem{MemoryID: r.ID, Rank: len(resp.Memories), ReturnedAs: as})
	}
	for code, n := range warned {
		if n > maxWarningsPerCode {
			resp.Warnings = append(resp.Warnings, Warning{Code: code, Message: itoa(uint64(n-maxWarningsPerCode)) + " more warnings of this kind left out"})
		}
	}
	return resp, trace
}

// dropDuplicates keeps one memory of each text about the same entities in
// the same scope (summary and content, case and spacing aside), in rank
// order: of a text some instruction holds, each instruction with its own
// required behaviour (a copy that asks for less never hides one that
// asks for more) and no evidence; of any other text, the best ranked. A
// repeat took a place of max_items and counted twice as precedent.
func dropDuplicates(ranked []RecalledMemory, warn func(code, msg, id string)) []RecalledMemory {
	keys := make([]string, len(ranked))
	ruled := map[string]bool{} // texts an instruction holds
	for i := range ranked {
		keys[i] = sameText(&ranked[i].Memory)
		if ranked[i].UsePolicy == Instruction {
			ruled[keys[i]] = true
		}
	}
	kept := map[string]string{} // text (and behaviour) -> the memory kept
	out := make([]RecalledMemory, 0, len(ranked))
	for i, r := range ranked {
		k := keys[i]
		if ruled[k] && r.UsePolicy != Instruction {
			warn("duplicate_left_out", "same text as an instruction that is recalled", r.ID)
			continue
		}
		if r.UsePolicy == Instruction {
			k += "\x00" + r.Behavior
		}
		if id, ok := kept[k]; ok {
			warn("duplicate_left_out", "same text as "+id+", which is recalled", r.ID)
			continue
		}
		kept[k] = r.ID
		out = append(out, r)
	}
	return out
}

// sameText is a memory's text, with case and runs of white space folded,
// its entities and its scope.
func sameText(m *Memory) string {
	fold := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	return strings.Join([]string{fold(m.Summary), fold(m.Content), strings.Join(NormalizeEntities(m.Entities), "\x01"),
		m.Scope.Workspace, m.Scope.Project, string(m.Scope.Visibility)}, "\x00")
}

func behavior(b string) string {
	switch b {
	case "allow", "block", "revise", "escalate", "human_review":
		return b
	}
	return "revise"
}

func inScope(req RecallRequest, m *Memory, now time.Time) bool {
	if m.Lifecycle != Active {
		return false
	}
	if m.Scope.Workspace != req.Workspace && m.Scope.Visibility != Org {
		return false
	}
	if m.Scope.Project != "" && m.Scope.Project != req.Project && m.Scope.Visibility != Org {
		return false
	}
	if m.Scope.Visibility.rank() < req.Scope.Visibility.rank() {
		return false
	}
	if d := req.Limits.RecencyDays; d > 0 && now.Sub(lastSeen(m)) > time.Duration(d)*24*time.Hour {
		return false
	}
	return true
}

// exclusion returns why a relevant memory is left out, and a warning code.
func exclusion(req RecallRequest, m *Memory, now time.Time) (string, string) {
	switch {
	case m.Provenance.Status == Disputed && !req.Scope.IncludeDisputed:
		return "disputed memory left out (include_disputed to see it)", "excluded_disputed"
	case m.Provenance.Status == Superseded && !req.Scope.IncludeDisputed:
		return "superseded memory left out; see " + m.SupersededBy, "excluded_superseded"
	case m.StaleAt(now) && !req.Scope.IncludeStale:
		return "stale memory left out (include_stale to see it)", "excluded_stale"
	case !m.UsePolicy.Injectable() && !req.Scope.IncludeUnconfirmed:
		return "unconfirmed memory (" + string(m.UsePolicy) + ") left out (include_unconfirmed to see it)", "excluded_unconfirmed"
	case len(req.Policy.AllowedUsePolicies) > 0 && !slices.Contains(req.Policy.AllowedUsePolicies, m.UsePolicy):
		return "use policy " + string(m.UsePolicy) + " not allowed by the request", "excluded_use_policy"
	case req.Policy.RequireSourceRefs && m.Source.URI == "":
		return "memory has no source reference", "excluded_no_source"
	}
	return "", ""
}

func stems(words []string) []string {
	out := make([]string, 0, len(words))
	for _, w := range words {
		if s := stem(w); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// relevance is 0.6 × text overlap + 0.4 × entity overlap, each in [0,1];
// text alone when the request names no entities.
func relevance(qterms, tags []string, m *Memory) float64 {
	text := 0.0
	if len(qterms) > 0 {
		hit := termHits(qterms, m.Summary) | termHits(qterms, m.Content)
		for _, e := range m.Entities {
			hit |= termHits(qterms, e)
		}
		text = float64(bits.OnesCount64(hit)) / float64(len(qterms))
	}
	if len(tags) == 0 {
		return text
	}
	hit := 0
	for _, t := range tags {
		if _, ok := slices.BinarySearch(m.Entities, t); ok {
			hit++
		}
	}
	ent := float64(hit) / float64(len(tags))
	if len(qterms) == 0 {
		return ent
	}
	return 0.6*text + 0.4*ent
}

// termHits returns bit i set when the stemmed qterms[i] is a word of s
// (SearchTerms keeps at most 16 terms).
func termHits(qterms []string, s string) uint64 {
	var hit uint64
	var buf [64]byte
	n := 0
	flush := func() {
		if n >= 2 && n <= len(buf) {
			w := stemBytes(buf[:n])
			for i, q := range qterms {
				if string(w) == q {
					hit |= 1 << i
				}
			}
		}
		n = 0
	}
	for _, r := range s {
		switch {
		case r < 128 && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9'):
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		case r >= 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			r = unicode.ToLower(r)
		default:
			flush()
			continue
		}
		if n+utf8.RuneLen(r) <= len(buf) {
			n += utf8.EncodeRune(buf[n:], r)
		} else {
			n = len(buf) + 1
		}
	}
	flush()
	return hit
}

// anchor is what a memory must share with a request to be recalled at
// all: a word or a tag more specific than the tool that is being called.
type anchor struct {
	// terms are the request's stemmed words minus the tool name's words
	// (the tool speaks through its tag).
	terms []string
	// tags are the request's entity tags other than tool:.
	tags []string
	// tool is the request's tool tag when it anchors: a tool of one
	// purpose (an MCP tool), or a broad tool (a shell, file edits) when
	// the request offers no other word or tag.
	tool string
}

func newAnchor(rc *Relevance, req RecallRequest, qterms, tags []string) anchor {
	var a anchor
	toolWords := stems(Terms(req.Query.ToolName))
	for _, q := range qterms {
		if !slices.Contains(toolWords, q) {
			a.terms = append(a.terms, q)
		}
	}
	for _, t := range tags {
		if !strings.HasPrefix(t, "tool:") {
			a.tags = append(a.tags, t)
		}
	}
	if req.Query.ToolName != "" {
		if tt := NormalizeEntities([]string{"tool:" + req.Query.ToolName}); len(tt) == 1 &&
			(!rc.broadTool(req.Query.ToolName) || len(a.terms) == 0 && len(a.tags) == 0) {
			a.tool = tt[0]
		}
	}
	return a
}

// holds reports whether m shares an anchor with the request: one of its
// specific tags, the anchoring tool tag, or one of its words in m's
// summary, content or non-tool entities.
func (a anchor) holds(m *Memory) bool {
	for _, t := range a.tags {
		if _, ok := slices.BinarySearch(m.Entities, t); ok {
			return true
		}
	}
	if a.tool != "" {
		if _, ok := slices.BinarySearch(m.Entities, a.tool); ok {
			return true
		}
	}
	if len(a.terms) == 0 {
		return false
	}
	if termHits(a.terms, m.Summary)|termHits(a.terms, m.Content) != 0 {
		return true
	}
	for _, e := range m.Entities {
		if !strings.HasPrefix(e, "tool:") && termHits(a.terms, e) != 0 {
			return true
		}
	}
	return false
}

func lastSeen(m *Memory) time.Time {
	t := m.Freshness.LastSeenAt
	if m.Freshness.LastConfirmedAt.After(t) {
		t = m.Freshness.LastConfirmedAt
	}
	if t.IsZero() {
		t = m.Freshness.CreatedAt
	}
	return t
}

// Decay is the freshness factor of m at now: 0.98 per whole or partial day
// since it was last seen or confirmed.
func Decay(m *Memory, now time.Time) float64 { return decay(m, now) }

func decay(m *Memory, now time.Time) float64 {
	days := now.Sub(lastSeen(m)).Hours() / 24
	if days <= 0 {
		return 1
	}
	return math.Pow(DailyDecay, days)
}
