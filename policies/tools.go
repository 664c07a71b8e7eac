package policies

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/internal/home"
)

// ToolsFile is the tools registry's file name.
const ToolsFile = "tools.yaml"

// ToolsSchema is the schema tools.yaml must declare.
const ToolsSchema = "docket.tools.v1"

// RiskClass is an action's risk class, from least to most severe.
type RiskClass string

const (
	ReadOnly           RiskClass = "read_only"
	ReversibleWrite    RiskClass = "reversible_write"
	ExternalSideEffect RiskClass = "external_side_effect"
	HighRisk           RiskClass = "high_risk"
)

// RiskClasses lists the classes from least to most severe.
var RiskClasses = []RiskClass{ReadOnly, ReversibleWrite, ExternalSideEffect, HighRisk}

// Rank orders classes: 0 for read_only up to 3 for high_risk, -1 for an
// unknown class.
func (c RiskClass) Rank() int {
	switch c {
	case ReadOnly:
		return 0
	case ReversibleWrite:
		return 1
	case ExternalSideEffect:
		return 2
	case HighRisk:
		return 3
	}
	return -1
}

// Valid reports whether c is one of the four classes.
func (c RiskClass) Valid() bool { return c.Rank() >= 0 }

// Stricter returns the more severe of a and b. An invalid class counts as
// high_risk: the unknown is never the lenient choice.
func Stricter(a, b RiskClass) RiskClass {
	ra, rb := a.Rank(), b.Rank()
	if ra < 0 || rb < 0 {
		return HighRisk
	}
	if rb > ra {
		return b
	}
	return a
}

// Execution modes of a registry entry.
const (
	ExecAuto     = "auto"     // runs after judgment
	ExecReview   = "review"   // always goes to a human
	ExecDisabled = "disabled" // never runs
)

// Validation modes of a registry entry.
const (
	ValidateMonitor   = "monitor"   // decide and record, never enforce
	ValidateIntercept = "intercept" // enforce the judgment
	ValidateStrict    = "strict"    // enforce, and a human approves every call
)

// Rule effects.
const (
	EffectDeny     = "deny"
	EffectAllow    = "allow"
	EffectEscalate = "escalate"
	EffectRevise   = "revise"
)

// Action kinds: acts the judge recognises in a call beyond its risk
// class, by general patterns over MCP tool names and inputs and over
// shell commands (judge.Actions). A rule's action field names one.
const (
	// ActionMessage sends a message people read: email, chat, a comment
	// on an issue or pull request, a non-approving review.
	ActionMessage = "message"
	// ActionPayment spends or moves money: a charge, payment, refund,
	// transfer, payout or purchase.
	ActionPayment = "payment"
	// ActionAccess grants, changes or revokes someone's access: a
	// collaborator, member, role, permission, invitation, deploy key or
	// branch protection.
	ActionAccess = "access"
	// ActionApprove approves a review (a pull or merge request).
	ActionApprove = "approve"
	// ActionRecord creates or changes a record in an external system of
	// record (a CRM, tracker, document store, mailbox) through an MCP tool;
	// code hosts' code objects (branches, files, pull requests) are not
	// records.
	ActionRecord = "record"
	// ActionRevealSecret prints secret-named values of the environment
	// into the transcript (env | grep TOKEN, printenv API_KEY, echo $TOKEN).
	ActionRevealSecret = "reveal_secret"
)

// ActionKinds lists every action kind a rule may name.
var ActionKinds = []string{ActionMessage, ActionPayment, ActionAccess, ActionApprove, ActionRecord, ActionRevealSecret}

// Rewrite is a revise rule's mechanical amendment: every occurrence of
// From in the tool input's Field (default "command") becomes To.
type Rewrite struct {
	Field string `yaml:"field"`
	From  string `yaml:"from"`
	To    string `yaml:"to"`
}

// ToolSpec is one tools registry entry. Tool is a glob over the runtime's
// tool name; the first entry that matches a tool wins.
type ToolSpec struct {
	Tool         string    `yaml:"tool"`
	Risk         RiskClass `yaml:"risk"`
	Kind         string    `yaml:"kind"`
	TargetSystem string    `yaml:"target_system"`
	Execution    string    `yaml:"execution"`
	Validation   string    `yaml:"validation"`
	DataClass    string    `yaml:"data_class"`
	// Agents lists the agent types (or ids) that may use the tool; empty
	// means any agent, "main" names the top-level session.
	Agents []string `yaml:"agents"`
	// Target names the tool_input field holding the action's target.
	Target string `yaml:"target"`
	// Writes marks tools whose target path is written: write_paths apply.
	Writes bool `yaml:"writes"`
}

// Rule is one deny, allow or escalate rule. Every pattern set must match
// for the rule to apply; an unset pattern matches anything.
type Rule struct {
	ID     string `yaml:"id"`
	Effect string `yaml:"effect"`
	// Tool is a glob over the tool name.
	Tool string `yaml:"tool"`
	// Command is a glob over each simple command of a shell call, after
	// sudo, env assignments and wrappers are stripped.
	Command string `yaml:"command"`
	// Path is a glob over the action's target path, cleaned and absolute.
	Path string `yaml:"path"`
	// Agents restricts the rule to these agent types (or ids).
	Agents []string `yaml:"agents"`
	// MinClass restricts the rule to actions at least this severe.
	MinClass RiskClass `yaml:"min_class"`
	// Action is one of ActionKinds: the rule applies to calls the judge
	// recognises as that kind of act (a message to people, a payment, …),
	// whatever tool or command performs it.
	Action string `yaml:"action"`
	Reason string `yaml:"reason"`
	// Rewrite makes a revise rule mechanical; without it the revision is
	// required of the actor and the call is denied.
	Rewrite *Rewrite `yaml:"rewrite"`
}

// Tools is a parsed tools registry.
type Tools struct {
	Schema string     `yaml:"schema"`
	Tools  []ToolSpec `yaml:"tools"`
	Rules  []Rule     `yaml:"rules"`
	// WritePaths lists globs a writing tool's target must fall under;
	// empty means no restriction. ${project}, ${cwd}, ${home} and ${tmp}
	// are expanded at judgment time.
	WritePaths []string `yaml:"write_paths"`
	// UnknownMCP is the class of mcp__ tools no entry matches.
	UnknownMCP RiskClass `yaml:"unknown_mcp"`
	// Unknown is the class of any other tool no entry matches.
	Unknown RiskClass `yaml:"unknown"`
}

// Lookup returns the first entry whose glob matches name.
func (t *Tools) Lookup(name string) (ToolSpec, bool) {
	for _, s := range t.Tools {
		if Glob(s.Tool, name) {
			return s, true
		}
	}
	return ToolSpec{}, false
}

// LoadTools loads and parses tools.yaml under h (or the embedded default).
func LoadTools(h home.Home) (*Tools, Source, error) {
	src, err := Load(h, ToolsFile)
	if err != nil {
		return nil, Source{}, fmt.Errorf("load tools.yaml: %w", err)
	}
	t, err := ParseTools(src)
	if err != nil {
		return nil, Source{}, fmt.Errorf("load tools.yaml: %w", err)
	}
	return t, src, nil
}

// ParseTools parses a tools registry. Unknown fields, unknown enum values,
// invalid UTF-8 and malformed YAML are an *Error.
func ParseTools(src Source) (*Tools, error) {
	if _, err := check(src); err != nil {
		return nil, err
	}
	if hasNUL(src.Data) {
		return nil, &Error{Origin: src.Origin, Err: errors.New("NUL byte in policy")}
	}
	var t Tools
	if err := yaml.UnmarshalWithOptions(src.Data, &t, yaml.DisallowUnknownField()); err != nil {
		return nil, &Error{Origin: src.Origin, Err: fmt.Errorf("malformed yaml: %s", firstLine(err.Error()))}
	}
	if err := t.validate(); err != nil {
		return nil, &Error{Origin: src.Origin, Err: err}
	}
	return &t, nil
}

func (t *Tools) validate() error {
	if t.Schema != ToolsSchema {
		return fmt.Errorf("schema: want %q, got %q", ToolsSchema, t.Schema)
	}
	if t.UnknownMCP == "" {
		t.UnknownMCP = ExternalSideEffect
	}
	if t.Unknown == "" {
		t.Unknown = ExternalSideEffect
	}
	if !t.UnknownMCP.Valid() || !t.Unknown.Valid() {
		return errors.New("unknown_mcp/unknown: not a risk class")
	}
	for i := range t.Tools {
		s := &t.Tools[i]
		if s.Tool == "" {
			return fmt.Errorf("tools[%d]: tool pattern missing", i)
		}
		if !s.Risk.Valid() {
			return fmt.Errorf("tools[%d] %s: risk %q is not a risk class", i, s.Tool, s.Risk)
		}
		if s.Execution == "" {
			s.Execution = ExecAuto
		}
		switch s.Execution {
		case ExecAuto, ExecReview, ExecDisabled:
		default:
			return fmt.Errorf("tools[%d] %s: execution %q: want auto, review or disabled", i, s.Tool, s.Execution)
		}
		if s.Validation == "" {
			s.Validation = ValidateIntercept
		}
		switch s.Validation {
		case ValidateMonitor, ValidateIntercept, ValidateStrict:
		default:
			return fmt.Errorf("tools[%d] %s: validation %q: want monitor, intercept or strict", i, s.Tool, s.Validation)
		}
	}
	seen := map[string]bool{}
	for i := range t.Rules {
		r := &t.Rules[i]
		if r.ID == "" {
			return fmt.Errorf("rules[%d]: id missing", i)
		}
		if seen[r.ID] {
			return fmt.Errorf("rules[%d]: duplicate id %q", i, r.ID)
		}
		seen[r.ID] = true
		switch r.Effect {
		case EffectDeny, EffectAllow, EffectEscalate, EffectRevise:
		default:
			return fmt.Errorf("rule %s: effect %q: want deny, allow, escalate or revise", r.ID, r.Effect)
		}
		if r.Rewrite != nil {
			if r.Effect != EffectRevise || r.Rewrite.From == "" {
				return fmt.Errorf("rule %s: rewrite needs effect revise and a non-empty from", r.ID)
			}
			if r.Rewrite.Field == "" {
				r.Rewrite.Field = "command"
			}
		}
		if r.Reason == "" && r.Effect != EffectAllow {
			return fmt.Errorf("rule %s: reason missing (the agent needs one to act on)", r.ID)
		}
		if r.Tool == "" && r.Command == "" && r.Path == "" && r.Action == "" {
			return fmt.Errorf("rule %s: no pattern (tool, command, path or action)", r.ID)
		}
		if r.Action != "" && !slices.Contains(ActionKinds, r.Action) {
			return fmt.Errorf("rule %s: action %q: want one of %s", r.ID, r.Action, strings.Join(ActionKinds, ", "))
		}
		if r.MinClass != "" && !r.MinClass.Valid() {
			return fmt.Errorf("rule %s: min_class %q is not a risk class", r.ID, r.MinClass)
		}
	}
	return nil
}

// Glob reports whether s matches pattern, where '*' matches any run of
// characters (path separators included) and '?' any one character.
// Everything else matches itself. Matching is linear-time backtracking
// over the last star, so no pattern can make it slow.
func Glob(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// hasNUL reports whether b holds a NUL byte, which no policy text needs.
func hasNUL(b []byte) bool { return bytes.IndexByte(b, 0) >= 0 }
