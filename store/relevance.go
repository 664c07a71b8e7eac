package store

import (
	"encoding/json"
	"fmt"
	"math"
	"path"
	"strings"
	"sync/atomic"
	"time"

	"github.com/docket/docket/policies"
)

// Relevance scoring (RABS §5–6). Every memory falls in a bucket — a
// knowledge domain — assigned by rules over its text, its tool and its
// file paths, and recall ranks by the seed's score:
//
//	score = match × severity × frequency × decay × repeatable × family_boost
//
//   - match: how well the memory fits the request (text and entity
//     overlap, in [0,1]); a memory that does not match is not recalled;
//   - severity 1–5: the larger of the bucket's severity and what the
//     memory asks of the judge (block 5, escalate or human_review 4,
//     revise 3);
//   - frequency: how many times the observation was seen (occurrences);
//     a recurrence adds one (reinforcement);
//   - decay: 0.98 per day since it was last seen or confirmed; a
//     recurrence resets it to 1;
//   - repeatable 0.5–1.5: 1.5 for a structural pattern (a pattern seen
//     again, or a human-confirmed instruction), 1.0 for a pattern seen
//     once, 0.5 for a one-off observation with no pattern key;
//   - family_boost 1.0–2.0: 1 + 0.25 for every other matching memory in
//     the same bucket about the same entity (repo, file, person, topic,
//     system), at most 2.
//
// Buckets are derived, never stored: every backend ranks the same
// candidates the same way, and changing the rules re-buckets old memories.

// BucketRule assigns a bucket. The first rule whose tools or path globs
// match the memory wins; failing that, the first rule whose words do.
type BucketRule struct {
	Bucket string `json:"bucket"`
	// Severity is the bucket's severity, 1–5.
	Severity int `json:"severity"`
	// Tools match the memory's tool:NAME entities (globs).
	Tools []string `json:"tools,omitempty"`
	// Paths match its file:PATH entities and path-like words of its text
	// (globs; a pattern without a slash matches the base name).
	Paths []string `json:"paths,omitempty"`
	// Words match whole words or phrases of its summary and content,
	// case-insensitively.
	Words []string `json:"words,omitempty"`
}

// RelevanceSchema is the schema a relevance policy declares.
const RelevanceSchema = "docket.relevance.v1"

// RelevanceFile is the relevance policy's file name under policies/.
const RelevanceFile = "relevance.json"

// Relevance is the scoring configuration.
type Relevance struct {
	Schema  string       `json:"schema,omitempty"`
	Buckets []BucketRule `json:"buckets"`
	// Fallback is the bucket of a memory no rule matches.
	Fallback string `json:"fallback"`
	// FallbackSeverity is its severity.
	FallbackSeverity int `json:"fallback_severity"`
	// BroadTools are tools used for everything (a shell, file edits;
	// globs, case-insensitive): sharing one of them says nothing about a
	// memory's subject, so their tool tag alone does not anchor a match
	// (see anchored in recall.go).
	BroadTools []string `json:"broad_tools,omitempty"`
	// MinMatchRatio drops a candidate whose match is below this share of
	// the best recallable candidate's match, in [0,1); 0 keeps all.
	MinMatchRatio float64 `json:"min_match_ratio,omitempty"`
}

// Factors are a recalled memory's relevance factors.
type Factors struct {
	Match       float64 `json:"match"`
	Severity    int     `json:"severity"`
	Frequency   int     `json:"frequency"`
	Decay       float64 `json:"decay"`
	Repeatable  float64 `json:"repeatable"`
	FamilyBoost float64 `json:"family_boost"`
}

// Score is the product of the factors.
func (f Factors) Score() float64 {
	return f.Match * float64(f.Severity) * float64(f.Frequency) * f.Decay * f.Repeatable * f.FamilyBoost
}

// DefaultRelevance is the default bucket set for coding agents: repo,
// tests, ci, deploy, dependencies, secrets, data, docs, comms. Rules are
// tried in order, the most severe domains first.
func DefaultRelevance() *Relevance {
	return &Relevance{
		Schema:           RelevanceSchema,
		Fallback:         "repo",
		FallbackSeverity: 2,
		BroadTools: []string{"bash", "shell", "powershell", "read", "write", "edit", "multiedit", "notebookedit",
			"glob", "grep", "ls", "webfetch", "websearch", "task", "agent", "todowrite"},
		MinMatchRatio: 0.25,
		Buckets: []BucketRule{
			{Bucket: "secrets", Severity: 5,
				Paths: []string{".env", ".env.*", "*.pem", "*.key", "id_rsa*", "*.p12", "*credentials*", "*secrets*", ".npmrc", ".netrc"},
				Words: []string{"secret", "secrets", "credential", "credentials", "api key", "token", "password", "private key", "ssh key", "hmac", "leak", "leaked", "vault", "keychain"}},
			{Bucket: "deploy", Severity: 4,
				Tools: []string{"mcp__*vercel*", "mcp__*aws*", "mcp__*gcloud*", "mcp__*kubernetes*"},
				Paths: []string{"Dockerfile", "*.tf", "*.tfvars", "k8s/*", "helm/*", "charts/*", "deploy/*", "fly.toml", "Procfile", "*docker-compose*"},
				Words: []string{"deploy", "deployed", "deployment", "release", "rollout", "rollback", "production", "prod", "staging", "kubectl", "helm", "terraform", "migration", "migrate"}},
			{Bucket: "data", Severity: 4,
				Paths: []string{"*.sql", "*.db", "*.sqlite", "*.csv", "*.parquet", "migrations/*", "fixtures/*"},
				Words: []string{"database", "db", "table", "schema", "sql", "postgres", "sqlite", "customer data", "pii", "personal data", "backup", "drop table", "truncate", "gdpr"}},
			{Bucket: "ci", Severity: 3,
				Paths: []string{".github/workflows/*", ".gitlab-ci.yml", ".circleci/*", "Jenkinsfile", ".buildkite/*", "Makefile", ".ci/*"},
				Words: []string{"ci", "pipeline", "workflow", "github actions", "runner", "runners", "build", "flaky", "lint", "linter"}},
			{Bucket: "dependencies", Severity: 3,
				Paths: []string{"go.mod", "go.sum", "package.json", "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "requirements*.txt", "pyproject.toml", "poetry.lock", "Cargo.toml", "Cargo.lock", "Gemfile*", "vendor/*"},
				Words: []string{"dependency", "dependencies", "upgrade", "bump", "npm install", "go get", "pip install", "cargo add", "version pin", "lockfile", "vulnerability", "cve"}},
			{Bucket: "comms", Severity: 3,
				Tools: []string{"mcp__*slack*", "mcp__*linear*", "mcp__*github*", "mcp__*jira*", "mcp__*mail*", "mcp__*discord*", "mcp__*teams*"},
				Words: []string{"pull request", "pr", "issue", "comment", "slack", "email", "message", "notify", "announce", "gh pr", "gh issue", "reviewer"}},
			{Bucket: "tests", Severity: 2,
				Paths: []string{"*_test.go", "*.test.*", "*.spec.*", "test/*", "tests/*", "testdata/*", "__tests__/*", "conftest.py"},
				Words: []string{"test", "tests", "testing", "go test", "pytest", "jest", "coverage", "assertion", "fixture"}},
			{Bucket: "docs", Severity: 1,
				Paths: []string{"*.md", "docs/*", "*.rst", "*.adoc", "LICENSE*"},
				Words: []string{"readme", "docs", "documentation", "changelog", "typo", "comment"}},
			{Bucket: "repo", Severity: 2,
				Words: []string{"git", "branch", "commit", "merge", "rebase", "push", "force push", "main", "master", "refactor"}},
		},
	}
}

// ParseRelevance reads a scoring configuration (JSON, the Relevance
// fields); unknown fields, a rule without a bucket and severities outside
// 1–5 are errors.
func ParseRelevance(b []byte) (*Relevance, error) {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var r Relevance
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("parse relevance: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parse relevance: trailing data")
	}
	if r.Schema != "" && r.Schema != RelevanceSchema {
		return nil, fmt.Errorf("parse relevance: schema: want %q, got %q", RelevanceSchema, r.Schema)
	}
	if r.Fallback == "" {
		return nil, fmt.Errorf("parse relevance: fallback bucket required")
	}
	if r.FallbackSeverity < 1 || r.FallbackSeverity > 5 {
		return nil, fmt.Errorf("parse relevance: fallback_severity %d not in 1..5", r.FallbackSeverity)
	}
	if r.MinMatchRatio < 0 || r.MinMatchRatio >= 1 || math.IsNaN(r.MinMatchRatio) {
		return nil, fmt.Errorf("parse relevance: min_match_ratio %v not in [0,1)", r.MinMatchRatio)
	}
	for i, b := range r.Buckets {
		if b.Bucket == "" {
			return nil, fmt.Errorf("parse relevance: bucket %d has no name", i+1)
		}
		if b.Severity < 1 || b.Severity > 5 {
			return nil, fmt.Errorf("parse relevance: bucket %s: severity %d not in 1..5", b.Bucket, b.Severity)
		}
	}
	return &r, nil
}

var relevanceCfg atomic.Pointer[Relevance]

// UseRelevance installs the process's scoring configuration; nil restores
// the default.
func UseRelevance(r *Relevance) { relevanceCfg.Store(r) }

var defaultRelevance = DefaultRelevance()

func currentRelevance() *Relevance {
	if r := relevanceCfg.Load(); r != nil {
		return r
	}
	return defaultRelevance
}

// Bucket returns m's bucket and the bucket's severity.
func (r *Relevance) Bucket(m *Memory) (string, int) {
	text := " " + normWords(m.Summary+" "+m.Content) + " "
	var tools, files []string
	for _, e := range m.Entities {
		switch {
		case strings.HasPrefix(e, "tool:"):
			tools = append(tools, e[len("tool:"):])
		case strings.HasPrefix(e, "file:"):
			files = append(files, e[len("file:"):])
		}
	}
	for _, w := range strings.Fields(m.Summary + " " + m.Content) {
		w = strings.Trim(w, "`'\"(),;:")
		if w != "" && !strings.Contains(w, "://") && len(w) < 200 {
			files = append(files, w)
		}
	}
	// tools and paths are firmer evidence than words: they go first
	for _, b := range r.Buckets {
		for _, g := range b.Tools {
			for _, t := range tools {
				if policies.Glob(strings.ToLower(g), strings.ToLower(t)) {
					return b.Bucket, b.Severity
				}
			}
		}
		for _, g := range b.Paths {
			for _, f := range files {
				if pathMatch(g, f) {
					return b.Bucket, b.Severity
				}
			}
		}
	}
	for _, b := range r.Buckets {
		for _, w := range b.Words {
			if strings.Contains(text, " "+normWords(w)+" ") {
				return b.Bucket, b.Severity
			}
		}
	}
	return r.Fallback, r.FallbackSeverity
}

// broadTool reports whether tool is one of r's broad tools.
func (r *Relevance) broadTool(tool string) bool {
	tool = strings.ToLower(tool)
	for _, g := range r.BroadTools {
		if policies.Glob(strings.ToLower(g), tool) {
			return true
		}
	}
	return false
}

// normWords lowercases s and turns every run of non-word characters into
// one space, so phrases match on word boundaries.
func normWords(s string) string {
	var b strings.Builder
	space := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c > 127 {
			b.WriteRune(c)
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSpace(b.String())
}

func pathMatch(glob, p string) bool {
	p = strings.TrimPrefix(p, "./")
	if !strings.Contains(glob, "/") {
		return policies.Glob(glob, path.Base(p))
	}
	// dir/* matches the directory anywhere in the path
	if strings.HasSuffix(glob, "/*") {
		dir := strings.TrimSuffix(glob, "/*")
		return strings.HasPrefix(p, dir+"/") || strings.Contains(p, "/"+dir+"/")
	}
	return policies.Glob(glob, p)
}

// severity is the larger of the bucket's and the behavior's.
func severity(bucket int, m *Memory) int {
	s := bucket
	switch m.Behavior {
	case "block":
		s = max(s, 5)
	case "escalate", "human_review":
		s = max(s, 4)
	case "revise":
		s = max(s, 3)
	}
	return min(max(s, 1), 5)
}

func repeatable(m *Memory) float64 {
	switch {
	case m.PatternKey != "" && m.Occurrences >= 2, m.UsePolicy == Instruction:
		return 1.5
	case m.PatternKey != "":
		return 1.0
	}
	return 0.5
}

// familyKeys are the entity tags that make memories one family.
func familyKeys(m *Memory) []string {
	var out []string
	for _, e := range m.Entities {
		if !strings.HasPrefix(e, "tool:") {
			out = append(out, e)
		}
	}
	return out
}

// scored is a candidate being ranked.
type scored struct {
	mem    Memory
	bucket string
	f      Factors
}

// score fills the factors of each matching candidate, family boost last
// (it counts the others).
func score(items []scored, now time.Time) {
	fam := map[string]int{}
	for _, it := range items {
		for _, k := range familyKeys(&it.mem) {
			fam[it.bucket+"\x00"+k]++
		}
	}
	for i := range items {
		it := &items[i]
		others := 0
		for _, k := range familyKeys(&it.mem) {
			others = max(others, fam[it.bucket+"\x00"+k]-1)
		}
		it.f.FamilyBoost = math.Min(2, 1+0.25*float64(others))
		it.f.Decay = decay(&it.mem, now)
		it.f.Frequency = max(it.mem.Occurrences, 1)
		it.f.Repeatable = repeatable(&it.mem)
	}
}
