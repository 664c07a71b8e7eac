package policies

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/internal/home"
)

// JudgesFile is the judge configuration's file name.
const JudgesFile = "judges.md"

// JudgesSchema is the schema judges.md front matter must declare.
const JudgesSchema = "docket.judges.v1"

// Outcome is a judgment outcome.
type Outcome string

const (
	OutcomeAllow    Outcome = "allow"
	OutcomeRevise   Outcome = "revise"
	OutcomeEscalate Outcome = "escalate"
	OutcomeBlock    Outcome = "block"
)

// Strictness orders outcomes: allow 0, revise 1, escalate 2, block 3;
// -1 for an unknown outcome.
func (o Outcome) Strictness() int {
	switch o {
	case OutcomeAllow:
		return 0
	case OutcomeRevise:
		return 1
	case OutcomeEscalate:
		return 2
	case OutcomeBlock:
		return 3
	}
	return -1
}

// Failure kinds, the keys of failure_policy.
const (
	FailUnavailable      = "unavailable"
	FailPolicyInvalid    = "policy_invalid"
	FailBudgetExhausted  = "budget_exhausted"
	FailProposalInvalid  = "proposal_invalid"
	FailAmendedRejected  = "amended_proposal_rejected"
	ModeEnforce          = "enforce"
	ModeReadAudit        = "read_audit"
	HeadlessAuto         = "auto"
	HeadlessAlways       = "always"
	HeadlessNever        = "never"
	defaultEscalationTTL = 120 * time.Second
	defaultModelTimeout  = 8 * time.Second
)

// FailureKinds lists every failure_policy key.
var FailureKinds = []string{FailUnavailable, FailPolicyInvalid, FailBudgetExhausted, FailProposalInvalid, FailAmendedRejected}

// Judge names usable in a chain.
const (
	JudgePolicy = "policy"
	JudgeLLM    = "llm"
)

// ClassPolicy is one class's entry in judges.md; unset fields are
// default-filled.
type ClassPolicy struct {
	LLM         *bool `yaml:"llm"`          // run the LLM judge after the policy judge allows
	Recall      *bool `yaml:"recall"`       // recall precedent from the store
	Human       *bool `yaml:"human"`        // escalate to a human after the judges allow
	AutoApprove *bool `yaml:"auto_approve"` // emit "allow" instead of no opinion
}

// ModelConfig configures the LLM judge. It is runtime configuration: none
// of it is ever put into a prompt.
type ModelConfig struct {
	Provider  string `yaml:"provider"` // none | openai | anthropic
	Name      string `yaml:"name"`
	Endpoint  string `yaml:"endpoint"`
	APIKeyEnv string `yaml:"api_key_env"`
	Timeout   string `yaml:"timeout"`
	MaxTokens int    `yaml:"max_tokens"`
	// MaxCalls bounds LLM calls per judge process; 0 means unbounded.
	MaxCalls int `yaml:"max_calls"`
}

// EscalationConfig configures human escalation.
type EscalationConfig struct {
	Timeout  string `yaml:"timeout"`  // how long a headless hook waits for approval
	Headless string `yaml:"headless"` // auto | always | never
}

// JudgesFront is the YAML front matter of one judges.md.
type JudgesFront struct {
	Schema        string                 `yaml:"schema"`
	Mode          string                 `yaml:"mode"`
	Chain         []string               `yaml:"chain"`
	Classes       map[string]ClassPolicy `yaml:"classes"`
	FailurePolicy map[string]Outcome     `yaml:"failure_policy"`
	Model         *ModelConfig           `yaml:"model"`
	Escalation    *EscalationConfig      `yaml:"escalation"`
	AuditRequired *bool                  `yaml:"audit_required"`
}

// ClassRule is one class's policy after default-fill and merging, with
// the origin that last set it.
type ClassRule struct {
	LLM, Recall, Human, AutoApprove bool
	Source                          string
}

// Judges is the judge configuration in force: the project file (the
// floor) merged with any delegate files, which may only tighten it.
type Judges struct {
	Mode              string
	Chain             []string
	Classes           map[RiskClass]ClassRule
	FailurePolicy     map[string]Outcome
	Model             ModelConfig
	ModelTimeout      time.Duration
	EscalationTimeout time.Duration
	Headless          string
	AuditRequired     bool
	// Prose is the project file's markdown after the front matter; it is
	// given to the LLM judge as policy text.
	Prose   string
	Sources []Source
}

// Version is the policy_version of the judge configuration alone.
func (j *Judges) Version() string { return Version(j.Sources...) }

// FloorError reports a delegate judges.md that relaxes the project floor.
type FloorError struct {
	Field    string
	Floor    string
	Delegate string
}

func (e *FloorError) Error() string {
	return fmt.Sprintf("delegate relaxes the project floor: %s is %s in the floor, %s in the delegate", e.Field, e.Floor, e.Delegate)
}

// ErrNoFrontMatter is returned for a judges.md without YAML front matter.
var ErrNoFrontMatter = errors.New("no YAML front matter (the file must start with a --- line)")

// SplitFrontMatter splits a markdown file into its YAML front matter and
// the prose after it. The file must start with a "---" line and the front
// matter must end with one.
func SplitFrontMatter(data []byte) (front, prose []byte, err error) {
	rest, ok := cutLine(data, "---")
	if !ok {
		return nil, nil, ErrNoFrontMatter
	}
	for off := 0; off <= len(rest); {
		line := rest[off:]
		end := bytes.IndexByte(line, '\n')
		if end >= 0 {
			line = line[:end]
		}
		if string(bytes.TrimRight(line, " \t\r")) == "---" {
			after := off + len(line)
			if end >= 0 {
				after++
			}
			return rest[:off], rest[after:], nil
		}
		if end < 0 {
			break
		}
		off += end + 1
	}
	return nil, nil, errors.New("front matter is not closed by a --- line")
}

func cutLine(data []byte, want string) ([]byte, bool) {
	end := bytes.IndexByte(data, '\n')
	if end < 0 {
		return nil, false
	}
	if string(bytes.TrimRight(data[:end], " \t\r")) != want {
		return nil, false
	}
	return data[end+1:], true
}

// ParseJudgesFile parses one judges.md: its front matter strictly
// (unknown fields, bad enums, invalid UTF-8 and malformed YAML are an
// *Error) and its prose.
func ParseJudgesFile(src Source) (*JudgesFront, string, error) {
	if _, err := check(src); err != nil {
		return nil, "", err
	}
	if hasNUL(src.Data) {
		return nil, "", &Error{Origin: src.Origin, Err: errors.New("NUL byte in policy")}
	}
	front, prose, err := SplitFrontMatter(src.Data)
	if err != nil {
		return nil, "", &Error{Origin: src.Origin, Err: err}
	}
	var f JudgesFront
	if len(bytes.TrimSpace(front)) > 0 {
		if err := yaml.UnmarshalWithOptions(front, &f, yaml.DisallowUnknownField()); err != nil {
			return nil, "", &Error{Origin: src.Origin, Err: fmt.Errorf("malformed yaml: %s", firstLine(err.Error()))}
		}
	}
	if err := f.validate(); err != nil {
		return nil, "", &Error{Origin: src.Origin, Err: err}
	}
	return &f, string(prose), nil
}

func (f *JudgesFront) validate() error {
	if f.Schema != JudgesSchema {
		return fmt.Errorf("schema: want %q, got %q", JudgesSchema, f.Schema)
	}
	switch f.Mode {
	case "", ModeEnforce, ModeReadAudit:
	default:
		return fmt.Errorf("mode %q: want enforce or read_audit", f.Mode)
	}
	for _, j := range f.Chain {
		if j != JudgePolicy && j != JudgeLLM {
			return fmt.Errorf("chain: unknown judge %q (want policy, llm)", j)
		}
	}
	if len(f.Chain) > 0 && f.Chain[0] != JudgePolicy {
		return errors.New("chain: the policy judge must come first")
	}
	for c := range f.Classes {
		if !RiskClass(c).Valid() {
			return fmt.Errorf("classes: unknown class %q", c)
		}
	}
	for k, o := range f.FailurePolicy {
		if !slices.Contains(FailureKinds, k) {
			return fmt.Errorf("failure_policy: unknown failure %q", k)
		}
		switch o {
		case OutcomeAllow, OutcomeEscalate, OutcomeBlock:
		default:
			return fmt.Errorf("failure_policy %s: outcome %q: want allow, escalate or block", k, o)
		}
	}
	if m := f.Model; m != nil {
		switch m.Provider {
		case "", "none", "openai", "anthropic":
		default:
			return fmt.Errorf("model.provider %q: want none, openai or anthropic", m.Provider)
		}
		if m.Timeout != "" {
			if d, err := time.ParseDuration(m.Timeout); err != nil || d <= 0 {
				return fmt.Errorf("model.timeout %q: want a positive duration", m.Timeout)
			}
		}
		if m.MaxTokens < 0 || m.MaxCalls < 0 {
			return errors.New("model: max_tokens and max_calls must not be negative")
		}
	}
	if e := f.Escalation; e != nil {
		if e.Timeout != "" {
			if d, err := time.ParseDuration(e.Timeout); err != nil || d <= 0 {
				return fmt.Errorf("escalation.timeout %q: want a positive duration", e.Timeout)
			}
		}
		switch e.Headless {
		case "", HeadlessAuto, HeadlessAlways, HeadlessNever:
		default:
			return fmt.Errorf("escalation.headless %q: want auto, always or never", e.Headless)
		}
	}
	return nil
}

// defaultJudges is the built-in class and failure policy that every
// judges.md is default-filled from (the judge extender's class defaults).
func defaultJudges() *Judges {
	return &Judges{
		Mode:  ModeEnforce,
		Chain: []string{JudgePolicy, JudgeLLM},
		Classes: map[RiskClass]ClassRule{
			ReadOnly:           {Source: "builtin"},
			ReversibleWrite:    {Source: "builtin"},
			ExternalSideEffect: {LLM: true, Recall: true, Source: "builtin"},
			HighRisk:           {LLM: true, Recall: true, Human: true, Source: "builtin"},
		},
		FailurePolicy: map[string]Outcome{
			FailUnavailable: OutcomeBlock, FailPolicyInvalid: OutcomeBlock, FailBudgetExhausted: OutcomeBlock,
			FailProposalInvalid: OutcomeBlock, FailAmendedRejected: OutcomeBlock,
		},
		Model:             ModelConfig{Provider: "none"},
		ModelTimeout:      defaultModelTimeout,
		EscalationTimeout: defaultEscalationTTL,
		Headless:          HeadlessAuto,
	}
}

// ResolveJudges merges the project judges.md (base, the floor) with
// delegate files (subdirectory or subagent), in order. A delegate may only
// tighten: relaxing any part of the floor is an *Error wrapping a
// *FloorError, and a delegate may not configure the model.
func ResolveJudges(base Source, delegates ...Source) (*Judges, error) {
	j := defaultJudges()
	f, prose, err := ParseJudgesFile(base)
	if err != nil {
		return nil, err
	}
	j.apply(f, base.Origin)
	j.Prose = prose
	j.Sources = []Source{base}
	if f.Model != nil {
		m := *f.Model
		if m.Provider == "" {
			m.Provider = "none"
		}
		j.Model = m
		if m.Timeout != "" {
			j.ModelTimeout, _ = time.ParseDuration(m.Timeout)
		}
	}
	for _, d := range delegates {
		df, _, err := ParseJudgesFile(d)
		if err != nil {
			return nil, err
		}
		if df.Model != nil {
			return nil, &Error{Origin: d.Origin, Err: &FloorError{Field: "model", Floor: "set by the project", Delegate: "set"}}
		}
		next := j.clone()
		next.apply(df, d.Origin)
		if err := checkFloor(j, next); err != nil {
			return nil, &Error{Origin: d.Origin, Err: err}
		}
		next.Sources = append(next.Sources, d)
		j = next
	}
	return j, nil
}

func (j *Judges) apply(f *JudgesFront, origin string) {
	if f.Mode != "" {
		j.Mode = f.Mode
	}
	if f.Chain != nil {
		j.Chain = append([]string(nil), f.Chain...)
	}
	for c, p := range f.Classes {
		r := j.Classes[RiskClass(c)]
		set := func(dst *bool, v *bool) {
			if v != nil {
				*dst = *v
				r.Source = origin
			}
		}
		set(&r.LLM, p.LLM)
		set(&r.Recall, p.Recall)
		set(&r.Human, p.Human)
		set(&r.AutoApprove, p.AutoApprove)
		j.Classes[RiskClass(c)] = r
	}
	for k, o := range f.FailurePolicy {
		j.FailurePolicy[k] = o
	}
	if e := f.Escalation; e != nil {
		if e.Timeout != "" {
			j.EscalationTimeout, _ = time.ParseDuration(e.Timeout)
		}
		if e.Headless != "" {
			j.Headless = e.Headless
		}
	}
	if f.AuditRequired != nil {
		j.AuditRequired = *f.AuditRequired
	}
}

func (j *Judges) clone() *Judges {
	c := *j
	c.Chain = append([]string(nil), j.Chain...)
	c.Classes = make(map[RiskClass]ClassRule, len(j.Classes))
	for k, v := range j.Classes {
		c.Classes[k] = v
	}
	c.FailurePolicy = make(map[string]Outcome, len(j.FailurePolicy))
	for k, v := range j.FailurePolicy {
		c.FailurePolicy[k] = v
	}
	c.Sources = append([]Source(nil), j.Sources...)
	return &c
}

func checkFloor(floor, d *Judges) error {
	if floor.Mode == ModeEnforce && d.Mode != ModeEnforce {
		return &FloorError{Field: "mode", Floor: floor.Mode, Delegate: d.Mode}
	}
	for _, name := range floor.Chain {
		if !slices.Contains(d.Chain, name) {
			return &FloorError{Field: "chain", Floor: strings.Join(floor.Chain, ","), Delegate: strings.Join(d.Chain, ",")}
		}
	}
	for _, c := range RiskClasses {
		f, g := floor.Classes[c], d.Classes[c]
		for _, x := range []struct {
			name     string
			fv, gv   bool
			stricter bool // the stricter value
		}{
			{"llm", f.LLM, g.LLM, true},
			{"recall", f.Recall, g.Recall, true},
			{"human", f.Human, g.Human, true},
			{"auto_approve", f.AutoApprove, g.AutoApprove, false},
		} {
			if x.fv == x.stricter && x.gv != x.stricter {
				return &FloorError{Field: "classes." + string(c) + "." + x.name, Floor: fmt.Sprint(x.fv), Delegate: fmt.Sprint(x.gv)}
			}
		}
	}
	for _, k := range FailureKinds {
		if d.FailurePolicy[k].Strictness() < floor.FailurePolicy[k].Strictness() {
			return &FloorError{Field: "failure_policy." + k, Floor: string(floor.FailurePolicy[k]), Delegate: string(d.FailurePolicy[k])}
		}
	}
	if d.EscalationTimeout > floor.EscalationTimeout {
		return &FloorError{Field: "escalation.timeout", Floor: floor.EscalationTimeout.String(), Delegate: d.EscalationTimeout.String()}
	}
	if floor.AuditRequired && !d.AuditRequired {
		return &FloorError{Field: "audit_required", Floor: "true", Delegate: "false"}
	}
	return nil
}

// LoadJudges loads the project judges.md under h (or the embedded
// default) and merges the delegate files at the given paths, in order; a
// delegate path that does not exist is skipped.
func LoadJudges(h home.Home, delegatePaths ...string) (*Judges, error) {
	base, err := Load(h, JudgesFile)
	if err != nil {
		return nil, fmt.Errorf("load judges.md: %w", err)
	}
	var ds []Source
	for _, p := range delegatePaths {
		s, err := LoadFile(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("load judges.md: %w", err)
		}
		ds = append(ds, s)
	}
	j, err := ResolveJudges(base, ds...)
	if err != nil {
		return nil, fmt.Errorf("load judges.md: %w", err)
	}
	return j, nil
}
