package policies

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
)

// DirectivesFile is the prime directives' file name.
const DirectivesFile = "directives.yaml"

// DirectivesSchema is the schema directives.yaml must declare.
const DirectivesSchema = "docket.directives.v1"

// Directive checks.
const (
	CheckOutboundPII     = "outbound_pii"
	CheckOutboundSecrets = "outbound_secrets"
	CheckSafety          = "safety"
)

// The default directives; a replacement file must keep them.
const (
	DirectivePrivacy = "PRIVACY_NO_PII"
	DirectiveSecrets = "NO_SECRETS_OUTBOUND"
	DirectiveSafety  = "SAFETY_FIRST"
)

// PIIKinds are the personal-data kinds an outbound_pii directive may name.
var PIIKinds = []string{"email", "phone", "payment_card", "iban", "national_id", "street_address"}

// Directive is one prime directive.
type Directive struct {
	ID          string   `yaml:"id" json:"id"`
	Priority    int      `yaml:"priority" json:"priority"`
	Check       string   `yaml:"check" json:"check"`
	Action      Outcome  `yaml:"action" json:"action"`
	Description string   `yaml:"description" json:"description,omitempty"`
	Kinds       []string `yaml:"kinds" json:"kinds,omitempty"`
	Terms       []string `yaml:"terms" json:"terms,omitempty"`
}

// Directives is a parsed directives.yaml: the directives in priority order
// (higher first, then by id) and the tools whose inputs leave the machine.
type Directives struct {
	Schema        string      `yaml:"schema" json:"schema"`
	Directives    []Directive `yaml:"directives" json:"directives"`
	OutboundTools []string    `yaml:"outbound_tools" json:"outbound_tools"`
	// Source is the file they came from.
	Source Source `yaml:"-" json:"-"`
}

// Outbound reports whether every string input of tool leaves the machine.
func (d *Directives) Outbound(tool string) bool {
	for _, g := range d.OutboundTools {
		if Glob(strings.ToLower(g), strings.ToLower(tool)) {
			return true
		}
	}
	return false
}

// ParseDirectives parses directives.yaml. Unknown fields, unknown checks
// and actions, a missing default directive, or a default whose check was
// changed or whose action was weakened are an *Error.
func ParseDirectives(src Source) (*Directives, error) {
	if _, err := check(src); err != nil {
		return nil, err
	}
	if hasNUL(src.Data) {
		return nil, &Error{Origin: src.Origin, Err: errors.New("NUL byte in policy")}
	}
	var d Directives
	if err := yaml.UnmarshalWithOptions(src.Data, &d, yaml.DisallowUnknownField()); err != nil {
		return nil, &Error{Origin: src.Origin, Err: fmt.Errorf("malformed yaml: %s", firstLine(err.Error()))}
	}
	if err := d.validate(); err != nil {
		return nil, &Error{Origin: src.Origin, Err: err}
	}
	d.Source = src
	return &d, nil
}

// DefaultDirectives parses the embedded directives.yaml.
func DefaultDirectives() *Directives {
	data, _ := Default(DirectivesFile)
	d, err := ParseDirectives(Source{Name: DirectivesFile, Origin: "embedded:" + DirectivesFile, Data: data})
	if err != nil {
		panic("embedded directives.yaml: " + err.Error())
	}
	return d
}

// requiredDirectives are the default directives with the check each must keep and
// the weakest action it may have.
var requiredDirectives = map[string]struct {
	check  string
	action Outcome
}{
	DirectivePrivacy: {CheckOutboundPII, OutcomeRevise},
	DirectiveSecrets: {CheckOutboundSecrets, OutcomeRevise},
	DirectiveSafety:  {CheckSafety, OutcomeEscalate},
}

func (d *Directives) validate() error {
	if d.Schema != DirectivesSchema {
		return fmt.Errorf("schema: want %q, got %q", DirectivesSchema, d.Schema)
	}
	seen := map[string]bool{}
	for i := range d.Directives {
		r := &d.Directives[i]
		if r.ID == "" {
			return fmt.Errorf("directive %d: id required", i+1)
		}
		if seen[r.ID] {
			return fmt.Errorf("directive %s: duplicate id", r.ID)
		}
		seen[r.ID] = true
		if r.Priority < 1 || r.Priority > 100 {
			return fmt.Errorf("directive %s: priority %d not in 1..100", r.ID, r.Priority)
		}
		switch r.Check {
		case CheckOutboundPII:
			if len(r.Kinds) == 0 {
				r.Kinds = append([]string(nil), PIIKinds...)
			}
			for _, k := range r.Kinds {
				if !contains(PIIKinds, k) {
					return fmt.Errorf("directive %s: unknown kind %q (want one of %s)", r.ID, k, strings.Join(PIIKinds, ", "))
				}
			}
		case CheckOutboundSecrets:
		case CheckSafety:
			if len(r.Terms) == 0 {
				return fmt.Errorf("directive %s: a safety check needs terms", r.ID)
			}
			for j, t := range r.Terms {
				r.Terms[j] = strings.ToLower(strings.TrimSpace(t))
				if r.Terms[j] == "" {
					return fmt.Errorf("directive %s: empty term", r.ID)
				}
			}
		default:
			return fmt.Errorf("directive %s: unknown check %q", r.ID, r.Check)
		}
		switch r.Action {
		case OutcomeRevise, OutcomeEscalate, OutcomeBlock:
		default:
			return fmt.Errorf("directive %s: action %q must be revise, escalate or block", r.ID, r.Action)
		}
		if r.Check == CheckSafety && r.Action == OutcomeRevise {
			return fmt.Errorf("directive %s: a safety check cannot be revised; use escalate or block", r.ID)
		}
		if req, ok := requiredDirectives[r.ID]; ok {
			if r.Check != req.check {
				return fmt.Errorf("directive %s: check must stay %s", r.ID, req.check)
			}
			if r.Action.Strictness() < req.action.Strictness() {
				return fmt.Errorf("directive %s: action %s is weaker than the floor %s", r.ID, r.Action, req.action)
			}
		}
	}
	for id := range requiredDirectives {
		if !seen[id] {
			return fmt.Errorf("directive %s is required (prime directives cannot be removed)", id)
		}
	}
	for _, g := range d.OutboundTools {
		if strings.TrimSpace(g) == "" {
			return errors.New("outbound_tools: empty pattern")
		}
	}
	sort.SliceStable(d.Directives, func(i, j int) bool {
		if d.Directives[i].Priority != d.Directives[j].Priority {
			return d.Directives[i].Priority > d.Directives[j].Priority
		}
		return d.Directives[i].ID < d.Directives[j].ID
	})
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
