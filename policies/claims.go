package policies

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp/syntax"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/internal/home"
)

// ClaimsFile is the name of the claim lexicon policy.
const ClaimsFile = "claims.yaml"

// ClaimTypes are the claim types docket knows, in the order the gate
// reports them. A lexicon must define each exactly once.
var ClaimTypes = []string{"done", "fixed", "tests_pass", "shipped", "blocked", "delegation"}

// Claims is the parsed claim lexicon (claims.yaml): how the gate finds
// claims in a final message, and which tool calls count as file writes.
type Claims struct {
	// BlockCap is how many consecutive blocks of one session the gate
	// issues before it lets a stop through, released unsupported.
	BlockCap int
	// AnomalyMinBytes: a transcript at least this large that yields no
	// assistant text is an extraction anomaly.
	AnomalyMinBytes int64

	Types []ClaimRule // in ClaimTypes order

	NegationWindow int
	// Negation cues before a match (same clause, NegationWindow words).
	Negation *CueSet
	// NegationAfter cues right after a match (same clause, within
	// NegationAfterWindow words): languages that negate after the verb
	// ("Die Tests bestehen nicht", "ne passent pas").
	NegationAfterWindow int
	NegationAfter       *CueSet
	FutureWindow        int
	Future              *CueSet
	Temporal            *CueSet
	// QuestionStarters: a question sentence starting with one of these
	// is a question throughout; otherwise only its last clause is, and a
	// claim in an earlier clause stands ("All tests pass, want me to
	// push?").
	QuestionStarters *CueSet
	// QuestionTails begin the interrogative part of a question sentence
	// that has no clause break before it ("All tests pass now want me
	// to push?").
	QuestionTails *CueSet

	WriteTools []*Pattern // anchored
	WriteBash  []*Pattern // against the command with quotes blanked
	WriteRaw   []*Pattern // against the raw command

	src Source
}

// ClaimRule says how one claim type is recognised.
type ClaimRule struct {
	Type string
	// Literals, when not nil, are lowercase strings at least one of which
	// every match of every pattern contains: a sentence whose lowercased
	// text contains none of them cannot match, and is skipped without
	// running the patterns. Each Pattern has its own literals too.
	Literals []string
	Patterns []*Pattern
	Exclude  []*Pattern
	// InQuestions: a match in a question still counts.
	InQuestions bool
	// InFuture: a match after a future or conditional cue still counts.
	InFuture bool
	// Negatable: a negation cue before the match cancels it.
	Negatable bool
}

// Source returns the policy file the lexicon was parsed from.
func (c *Claims) Source() Source { return c.src }

// Rule returns the rule of a claim type, or nil.
func (c *Claims) Rule(claim string) *ClaimRule {
	for i := range c.Types {
		if c.Types[i].Type == claim {
			return &c.Types[i]
		}
	}
	return nil
}

// IsWriteTool reports whether a tool call of that name modifies files
// whatever its input.
func (c *Claims) IsWriteTool(tool string) bool {
	folded := foldString(tool)
	for _, p := range c.WriteTools {
		if p.MayMatchFolded(folded) && p.Regexp().MatchString(tool) {
			return true
		}
	}
	return false
}

// IsWriteCommand reports whether a Bash command is marked as a write.
// Only the patterns one of whose literals occurs in the command are
// compiled and run (MayMatchFolded).
func (c *Claims) IsWriteCommand(cmd string) bool {
	folded := foldString(cmd)
	for _, p := range c.WriteRaw {
		if p.MayMatchFolded(folded) && p.Regexp().MatchString(cmd) {
			return true
		}
	}
	blanked := blankQuotes(cmd)
	folded = foldString(blanked)
	for _, p := range c.WriteBash {
		if p.MayMatchFolded(folded) && p.Regexp().MatchString(blanked) {
			return true
		}
	}
	return false
}

// blankQuotes replaces the insides of shell quotes with underscores,
// keeping the quotes, so patterns see the command's structure only. An
// unterminated quote blanks to the end.
func blankQuotes(cmd string) string {
	b := []byte(cmd)
	var q byte
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case q == 0 && (c == '\'' || c == '"'):
			q = c
		case q != 0 && c == q:
			q = 0
		case q == '"' && c == '\\' && i+1 < len(b):
			b[i], b[i+1] = '_', '_'
			i++
		case q != 0:
			b[i] = '_'
		case c == '\\' && i+1 < len(b):
			i++
		}
	}
	return string(b)
}

// LoadClaims loads claims.yaml from h, or the embedded default.
func LoadClaims(h home.Home) (*Claims, error) {
	src, err := Load(h, ClaimsFile)
	if err != nil {
		return nil, err
	}
	return ParseClaims(src)
}

// DefaultClaims parses the embedded default lexicon.
func DefaultClaims() (*Claims, error) {
	data, err := Default(ClaimsFile)
	if err != nil {
		return nil, err
	}
	return ParseClaims(Source{Name: ClaimsFile, Origin: "embedded:" + ClaimsFile, Data: data})
}

type claimsYAML struct {
	Version         int           `yaml:"version"`
	BlockCap        *int          `yaml:"block_cap"`
	AnomalyMinBytes int64         `yaml:"anomaly_min_bytes"`
	Negation        negationYAML  `yaml:"negation"`
	Questions       questionsYAML `yaml:"questions"`
	Future          futureYAML    `yaml:"future"`
	Claims          []claimYAML   `yaml:"claims"`
	Writes          writesYAML    `yaml:"writes"`
}

type negationYAML struct {
	Window      int      `yaml:"window"`
	Cues        []string `yaml:"cues"`
	AfterWindow int      `yaml:"after_window"`
	After       []string `yaml:"after"`
}

type questionsYAML struct {
	Starters []string `yaml:"starters"`
	Tails    []string `yaml:"tails"`
}

type futureYAML struct {
	Window   int      `yaml:"window"`
	Cues     []string `yaml:"cues"`
	Temporal []string `yaml:"temporal"`
}

type claimYAML struct {
	Type        string   `yaml:"type"`
	Patterns    []string `yaml:"patterns"`
	Exclude     []string `yaml:"exclude"`
	InQuestions bool     `yaml:"in_questions"`
	InFuture    bool     `yaml:"in_future"`
	Negatable   *bool    `yaml:"negatable"`
}

type writesYAML struct {
	Tools []string `yaml:"tools"`
	Bash  []string `yaml:"bash"`
	Raw   []string `yaml:"bash_raw"`
}

// decodeClaims decodes claims.yaml. The embedded default, byte for byte
// (also as `docket init` installs it), is taken from its decoded form in
// claims_known.go: YAML decoding is most of what loading the lexicon
// costs.
func decodeClaims(data []byte) (claimsYAML, error) {
	if len(data) == defaultClaimsLen {
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) == defaultClaimsSum {
			return *decodedDefaultClaims(), nil
		}
	}
	var y claimsYAML
	err := yaml.UnmarshalWithOptions(data, &y, yaml.Strict())
	return y, err
}

func ptrInt(n int) *int    { return &n }
func ptrBool(b bool) *bool { return &b }

var errClaimsVersion = errors.New("unsupported claims.yaml version (want 1)")

// ParseClaims parses a claim lexicon. Unknown keys, a missing or repeated
// claim type, an unknown claim type and invalid regular expressions are
// errors (*Error); nothing is defaulted from a broken file. The embedded
// default, byte for byte, is the compiled default (claims_compiled.go),
// which a test keeps equal to its full parse.
func ParseClaims(src Source) (*Claims, error) {
	if isDefaultClaims(src.Data) {
		return defaultClaimsFrom(src), nil
	}
	return parseClaimsFull(src)
}

// defaultClaimsFrom is the compiled default lexicon with its source. The
// cue sets are its own (each keeps the alternations it compiles); the
// patterns, which compile to the same regexp whoever asks, are shared.
func defaultClaimsFrom(src Source) *Claims {
	c := *compiledDefaultClaims
	c.src = src
	for _, cs := range []**CueSet{&c.Negation, &c.NegationAfter, &c.Future, &c.Temporal, &c.QuestionStarters, &c.QuestionTails} {
		if d := *cs; d != nil {
			*cs = &CueSet{Cues: d.Cues, alts: d.alts, pre: d.pre, lits: d.lits, litsKnown: true}
		}
	}
	return &c
}

func isDefaultClaims(data []byte) bool {
	if len(data) != defaultClaimsLen {
		return false
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) == defaultClaimsSum
}

// parseClaimsFull is ParseClaims without the compiled default.
func parseClaimsFull(src Source) (*Claims, error) {
	fail := func(err error) (*Claims, error) { return nil, &Error{Origin: src.Origin, Err: err} }
	y, err := decodeClaims(src.Data)
	if err != nil {
		return fail(fmt.Errorf("parse: %w", err))
	}
	if y.Version != 1 {
		return fail(errClaimsVersion)
	}
	c := &Claims{
		BlockCap:        3,
		AnomalyMinBytes: y.AnomalyMinBytes,
		NegationWindow:  y.Negation.Window,
		FutureWindow:    y.Future.Window,
		src:             src,
	}
	if y.BlockCap != nil {
		if *y.BlockCap < 1 {
			return fail(errors.New("block_cap must be at least 1"))
		}
		c.BlockCap = *y.BlockCap
	}
	if c.AnomalyMinBytes <= 0 {
		c.AnomalyMinBytes = 50 << 10
	}
	if c.NegationWindow <= 0 {
		c.NegationWindow = 6
	}
	if c.FutureWindow <= 0 {
		c.FutureWindow = 12
	}
	c.NegationAfterWindow = y.Negation.AfterWindow
	if c.NegationAfterWindow <= 0 {
		c.NegationAfterWindow = 3
	}
	if c.Negation, err = newCueSet("negation.cues", y.Negation.Cues, false); err != nil {
		return fail(err)
	}
	if c.NegationAfter, err = newCueSet("negation.after", y.Negation.After, false); err != nil {
		return fail(err)
	}
	if c.Future, err = newCueSet("future.cues", y.Future.Cues, false); err != nil {
		return fail(err)
	}
	if c.Temporal, err = newCueSet("future.temporal", y.Future.Temporal, false); err != nil {
		return fail(err)
	}
	if c.QuestionStarters, err = newCueSet("questions.starters", y.Questions.Starters, true); err != nil {
		return fail(err)
	}
	if c.QuestionTails, err = newCueSet("questions.tails", y.Questions.Tails, false); err != nil {
		return fail(err)
	}
	byType := map[string]ClaimRule{}
	for i, cy := range y.Claims {
		if !isClaimType(cy.Type) {
			return fail(fmt.Errorf("claims[%d]: unknown claim type %q", i, cy.Type))
		}
		if _, dup := byType[cy.Type]; dup {
			return fail(fmt.Errorf("claims[%d]: claim type %q defined twice", i, cy.Type))
		}
		if len(cy.Patterns) == 0 {
			return fail(fmt.Errorf("claims[%d] (%s): no patterns", i, cy.Type))
		}
		r := ClaimRule{Type: cy.Type, InQuestions: cy.InQuestions, InFuture: cy.InFuture, Negatable: true}
		if cy.Negatable != nil {
			r.Negatable = *cy.Negatable
		}
		if r.Patterns, err = newPatterns(cy.Type+".patterns", cy.Patterns, "(?i)", "", true); err != nil {
			return fail(err)
		}
		r.Literals = []string{}
		for _, p := range r.Patterns {
			if p.Literals == nil {
				r.Literals = nil
				break
			}
			r.Literals = append(r.Literals, p.Literals...)
		}
		if r.Exclude, err = newPatterns(cy.Type+".exclude", cy.Exclude, "(?i)", "", false); err != nil {
			return fail(err)
		}
		byType[cy.Type] = r
	}
	for _, t := range ClaimTypes {
		r, ok := byType[t]
		if !ok {
			return fail(fmt.Errorf("claim type %q not defined", t))
		}
		c.Types = append(c.Types, r)
	}
	if c.WriteTools, err = newPatterns("writes.tools", y.Writes.Tools, "^(?:", ")$", false); err != nil {
		return fail(err)
	}
	if c.WriteBash, err = newPatterns("writes.bash", y.Writes.Bash, "", "", false); err != nil {
		return fail(err)
	}
	if c.WriteRaw, err = newPatterns("writes.bash_raw", y.Writes.Raw, "", "", false); err != nil {
		return fail(err)
	}
	return c, nil
}

func isClaimType(t string) bool {
	for _, c := range ClaimTypes {
		if c == t {
			return true
		}
	}
	return false
}

// ruleLiterals returns lowercase literals one of which any match of any
// of the patterns must contain, or nil when some pattern has no such
// literal. It works on the parsed regexp: a concatenation requires what
// any of its parts requires, an alternation the union of its branches.
func ruleLiterals(patterns []string) []string {
	var all []string
	for _, p := range patterns {
		re, err := syntax.Parse("(?i)"+p, syntax.Perl)
		if err != nil {
			return nil
		}
		lits := requiredLiterals(re.Simplify(), strings.ToLower)
		if lits == nil {
			return nil
		}
		all = append(all, lits...)
	}
	return all
}

func shortest(l []string) int {
	n := -1
	for _, s := range l {
		if n < 0 || len(s) < n {
			n = len(s)
		}
	}
	return n
}
