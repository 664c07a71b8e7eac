package policies

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/internal/home"
)

// BindingFile is the claim binding policy's file name.
const BindingFile = "claim_binding.yaml"

// Binding is the claim binding policy: which validators may back each
// claim type, with what minimum arguments, and the escalation ladder a
// "blocked" claim must have climbed.
type Binding struct {
	src    Source
	claims map[string][]ValidatorRule
	ladder []Rung
	// Toolchains are the absolute toolchain paths validators run, from
	// the policy's toolchains section; empty fields fall back to what
	// `docket init` recorded.
	Toolchains Toolchains
	projects   []projectCommands
	// root is set on a binding fitted to one project (ForProject).
	root string
}

// Toolchains names the toolchains validators run. Paths are absolute.
type Toolchains struct {
	Go      string
	Python3 string
	// Path lists extra absolute directories for the fixed PATH command
	// validators run with (after the toolchains' own directories).
	Path []string
}

// projectCommands extends command allow lists for one project root.
type projectCommands struct {
	root     string
	commands map[string][]string // claim -> commands
}

// ValidatorRule allows one validator for a claim type.
type ValidatorRule struct {
	Name string
	// MinArgs are minimum arguments, checked after the validator's
	// defaults are applied: a number means the argument must be a number
	// at least that large; true means it must be present and non-empty.
	MinArgs map[string]any
	// Example is an --args JSON object that meets MinArgs, for hints.
	Example string
	// Scope "project" makes a test validator cover the whole project:
	// go_test_pass runs ./... from the module root, pytest_pass the
	// project's whole test suite. "" allows any package or target.
	Scope string
	// AllowRun lets the request narrow the tests with a run filter
	// (go_test_pass's run). Without it a filter is refused.
	AllowRun bool
	// Commands is the allow list of command validators: the only
	// commands (argv, separated by single spaces) they may run for this
	// claim. Per-project additions come from the policy's projects list.
	Commands []string
	// With names test-class validators one of which must pass in the
	// same validation: the runner runs the first that fits the project
	// after this one, and records a pass only when both pass (e.g.
	// file_diff_present cannot back "fixed" alone).
	With []string
}

// Rung is one step of the escalation ladder. A rung is climbed when the
// ledger holds at least MinAttempts failed tool calls matching it, over
// at least MinRoutes distinct routes (tool and host).
type Rung struct {
	Name        string
	Description string
	Match       []RungMatch
	MinAttempts int
	MinRoutes   int
}

// RungMatch matches a tool call: Tool is a path.Match glob on the tool
// name; Command, when set, is a regexp the call's command (Bash
// tool_input.command) must match.
type RungMatch struct {
	Tool    string
	Command string
}

// Matches reports whether a call of tool with command (empty when the
// tool has none) matches m. A malformed pattern matches nothing;
// LoadBinding rejects those.
func (m RungMatch) Matches(tool, command string) bool {
	ok, err := path.Match(m.Tool, tool)
	if err != nil || !ok {
		return false
	}
	if m.Command == "" {
		return true
	}
	re, err := regexp.Compile(m.Command)
	return err == nil && re.MatchString(command)
}

// LoadBinding loads claim_binding.yaml under h (or the embedded default)
// and checks it. A malformed file is a *Error, never a silent default.
func LoadBinding(h home.Home) (*Binding, error) {
	src, err := Load(h, BindingFile)
	if err != nil {
		return nil, err
	}
	return ParseBinding(src)
}

// ParseBinding decodes and checks a claim binding source.
func ParseBinding(src Source) (*Binding, error) {
	b, err := parseBinding(src.Data)
	if err != nil {
		return nil, &Error{Origin: src.Origin, Err: err}
	}
	b.src = src
	return b, nil
}

// Source returns the policy source the binding was loaded from.
func (b *Binding) Source() Source { return b.src }

// Validators returns the rules for claim, in policy order; nil when the
// claim type is unknown or nothing may back it.
//
// On a binding fitted to a project (ForProject) the list is what to
// suggest there: validators that cannot run in the project (go_test_pass
// without a go.mod, pytest_pass without Python tests, a command validator
// none of whose allowed commands fits, a validator that cannot back the
// claim alone) are left out, and each example fits the project. When
// nothing would remain, the policy's list is returned as is.
func (b *Binding) Validators(claim string) []ValidatorRule {
	rules := b.claims[claim]
	out := make([]ValidatorRule, len(rules))
	for i, r := range rules {
		out[i] = r
		out[i].MinArgs = cloneMap(r.MinArgs)
		out[i].Commands = append([]string(nil), r.Commands...)
		out[i].With = append([]string(nil), r.With...)
	}
	if len(out) == 0 {
		return nil
	}
	if b.root != "" {
		if fit := b.fit(claim, out); len(fit) > 0 {
			return fit
		}
	}
	return out
}

// Rule returns the rule allowing validator for claim, as the policy
// states it (a project-fitted binding changes only suggestions).
func (b *Binding) Rule(claim, validator string) (ValidatorRule, bool) {
	for _, r := range b.claims[claim] {
		if r.Name == validator {
			r.MinArgs = cloneMap(r.MinArgs)
			r.Commands = append([]string(nil), r.Commands...)
			r.With = append([]string(nil), r.With...)
			return r, true
		}
	}
	return ValidatorRule{}, false
}

// Allows reports whether validator may back claim.
func (b *Binding) Allows(claim, validator string) bool {
	_, ok := b.Rule(claim, validator)
	return ok
}

// Ladder returns the escalation ladder, in order.
func (b *Binding) Ladder() []Rung {
	out := make([]Rung, len(b.ladder))
	for i, r := range b.ladder {
		out[i] = r
		out[i].Match = append([]RungMatch(nil), r.Match...)
	}
	return out
}

// The YAML shape of claim_binding.yaml.
type bindingFile struct {
	Version          int                   `yaml:"version"`
	Toolchains       toolchainsFile        `yaml:"toolchains"`
	Projects         []projectFile         `yaml:"projects"`
	Claims           map[string][]ruleFile `yaml:"claims"`
	EscalationLadder []rungFile            `yaml:"escalation_ladder"`
}

type toolchainsFile struct {
	Go      string   `yaml:"go"`
	Python3 string   `yaml:"python3"`
	Path    []string `yaml:"path"`
}

type projectFile struct {
	Root     string              `yaml:"root"`
	Commands map[string][]string `yaml:"commands"`
}

type ruleFile struct {
	Validator string         `yaml:"validator"`
	MinArgs   map[string]any `yaml:"min_args"`
	Example   string         `yaml:"example"`
	Scope     string         `yaml:"scope"`
	AllowRun  bool           `yaml:"allow_run"`
	Commands  []string       `yaml:"commands"`
	With      []string       `yaml:"with"`
}

type rungFile struct {
	Rung        string      `yaml:"rung"`
	Description string      `yaml:"description"`
	MinAttempts *int        `yaml:"min_attempts"`
	MinRoutes   *int        `yaml:"min_routes"`
	Match       []matchFile `yaml:"match"`
}

type matchFile struct {
	Tool    string `yaml:"tool"`
	Command string `yaml:"command"`
}

var errNoVersion = errors.New("version: want 1")

// isDefaultBinding reports whether data is the embedded default
// claim_binding.yaml byte for byte (also as `docket init` installs it).
// Its decoded form is in binding_known.go: YAML decoding is most of what
// loading the binding costs the gate. The checks after decoding run on
// it as on any other file.
func isDefaultBinding(data []byte) bool {
	if len(data) != defaultBindingLen {
		return false
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]) == defaultBindingSum
}

// validName reports whether s is a validator or rung name:
// ^[a-z][a-z0-9_]{0,63}$, checked by hand so that no hook compiles a
// regular expression at start-up for it.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func parseBinding(data []byte) (*Binding, error) { return parseBindingChecked(data, true) }

// parseBindingChecked parses data; with trustDefault, the embedded
// default (recognised by its bytes) skips the checks that only find
// errors (example arguments, ladder expressions), which a test runs on
// it instead of every hook at every start.
func parseBindingChecked(data []byte, trustDefault bool) (*Binding, error) {
	var f bindingFile
	trusted := false
	if isDefaultBinding(data) {
		trusted = trustDefault
		f = *decodedDefaultBinding()
	} else if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if f.Version != 1 {
		return nil, errNoVersion
	}
	b := &Binding{claims: map[string][]ValidatorRule{}}
	names := make([]string, 0, len(f.Claims))
	for c := range f.Claims {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		if !isClaimType(c) {
			return nil, fmt.Errorf("claims: unknown claim type %q (want one of %v)", c, ClaimTypes)
		}
		seen := map[string]bool{}
		var rules []ValidatorRule
		for i, rf := range f.Claims[c] {
			r, err := checkRule(rf, trusted)
			if err != nil {
				return nil, fmt.Errorf("claims.%s[%d]: %w", c, i, err)
			}
			if seen[r.Name] {
				return nil, fmt.Errorf("claims.%s[%d]: validator %q listed twice", c, i, r.Name)
			}
			seen[r.Name] = true
			rules = append(rules, r)
		}
		b.claims[c] = rules
	}
	for _, c := range ClaimTypes {
		if _, ok := f.Claims[c]; !ok {
			return nil, fmt.Errorf("claims: claim type %q missing (list it with [] to let nothing back it)", c)
		}
	}
	seen := map[string]bool{}
	for i, rf := range f.EscalationLadder {
		r, err := checkRung(rf, trusted)
		if err != nil {
			return nil, fmt.Errorf("escalation_ladder[%d]: %w", i, err)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("escalation_ladder[%d]: rung %q listed twice", i, r.Name)
		}
		seen[r.Name] = true
		b.ladder = append(b.ladder, r)
	}
	if len(b.claims["blocked"]) > 0 && len(b.ladder) == 0 {
		return nil, errors.New("escalation_ladder: empty, but claims.blocked lists validators")
	}
	for i, r := range b.claims["fixed"] {
		if r.Name == "file_diff_present" && len(r.With) == 0 {
			return nil, fmt.Errorf("claims.fixed[%d]: file_diff_present cannot back fixed alone (a comment edit is a diff): give it with: [go_test_pass, pytest_pass, ...]", i)
		}
	}
	for c, rules := range b.claims {
		for i, r := range rules {
			for _, w := range r.With {
				if _, ok := b.Rule(c, w); !ok || w == r.Name {
					return nil, fmt.Errorf("claims.%s[%d].with: %q is not another validator listed for %s", c, i, w, c)
				}
				if wr, _ := b.Rule(c, w); len(wr.With) > 0 {
					return nil, fmt.Errorf("claims.%s[%d].with: %q itself needs a companion; companions do not chain", c, i, w)
				}
			}
		}
	}
	tc, err := checkToolchains(f.Toolchains)
	if err != nil {
		return nil, err
	}
	b.Toolchains = tc
	for i, pf := range f.Projects {
		if !filepath.IsAbs(pf.Root) || filepath.Clean(pf.Root) != pf.Root {
			return nil, fmt.Errorf("projects[%d].root: %q is not a clean absolute path", i, pf.Root)
		}
		pc := projectCommands{root: pf.Root, commands: map[string][]string{}}
		for c, cmds := range pf.Commands {
			if !isClaimType(c) {
				return nil, fmt.Errorf("projects[%d].commands: unknown claim type %q", i, c)
			}
			norm, err := checkCommands(cmds)
			if err != nil {
				return nil, fmt.Errorf("projects[%d].commands.%s: %w", i, c, err)
			}
			pc.commands[c] = norm
		}
		b.projects = append(b.projects, pc)
	}
	return b, nil
}

func checkToolchains(f toolchainsFile) (Toolchains, error) {
	tc := Toolchains{Go: f.Go, Python3: f.Python3}
	for name, p := range map[string]string{"go": f.Go, "python3": f.Python3} {
		if p != "" && (!filepath.IsAbs(p) || filepath.Clean(p) != p) {
			return tc, fmt.Errorf("toolchains.%s: %q is not a clean absolute path", name, p)
		}
	}
	for i, d := range f.Path {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d || strings.Contains(d, string(filepath.ListSeparator)) {
			return tc, fmt.Errorf("toolchains.path[%d]: %q is not a clean absolute directory", i, d)
		}
		tc.Path = append(tc.Path, d)
	}
	return tc, nil
}

// checkCommands normalizes an allow list: each command's words joined by
// single spaces. Empty commands and words starting with "-" in the
// command name position are errors.
func checkCommands(cmds []string) ([]string, error) {
	var out []string
	for i, c := range cmds {
		f := strings.Fields(c)
		if len(f) == 0 {
			return nil, fmt.Errorf("[%d]: empty command", i)
		}
		if strings.HasPrefix(f[0], "-") {
			return nil, fmt.Errorf("[%d]: %q: the command name looks like a flag", i, c)
		}
		out = append(out, strings.Join(f, " "))
	}
	return out, nil
}

// Commands returns the commands a command validator may run for claim
// in the project at root: the rule's allow list plus the policy's
// additions for that project root (or a parent of it). Each is argv
// words joined by single spaces.
func (b *Binding) Commands(claim, validator, root string) []string {
	r, ok := b.Rule(claim, validator)
	if !ok {
		return nil
	}
	out := r.Commands
	for _, p := range b.projects {
		if root != "" && within(p.root, root) {
			out = append(out, p.commands[claim]...)
		}
	}
	return out
}

// within reports whether path is dir or inside it (both clean, absolute).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func checkRule(rf ruleFile, trusted bool) (ValidatorRule, error) {
	if !validName(rf.Validator) {
		return ValidatorRule{}, fmt.Errorf("validator: bad name %q", rf.Validator)
	}
	r := ValidatorRule{Name: rf.Validator, MinArgs: map[string]any{}, Example: rf.Example, Scope: rf.Scope, AllowRun: rf.AllowRun, With: rf.With}
	switch rf.Scope {
	case "", "project":
	default:
		return ValidatorRule{}, fmt.Errorf("scope: %q, want project or nothing", rf.Scope)
	}
	if rf.Commands != nil {
		cmds, err := checkCommands(rf.Commands)
		if err != nil {
			return ValidatorRule{}, fmt.Errorf("commands%w", err)
		}
		r.Commands = cmds
	}
	for k, v := range rf.MinArgs {
		n, err := minArgValue(v)
		if err != nil {
			return ValidatorRule{}, fmt.Errorf("min_args.%s: %w", k, err)
		}
		r.MinArgs[k] = n
	}
	if rf.Example == "" {
		return ValidatorRule{}, errors.New("example: missing (the gate shows it in block reasons)")
	}
	if trusted {
		return r, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(rf.Example)))
	dec.UseNumber()
	var ex map[string]any
	if err := dec.Decode(&ex); err != nil || dec.More() {
		return ValidatorRule{}, fmt.Errorf("example: not a JSON object: %q", rf.Example)
	}
	if err := CheckMinArgs(r.MinArgs, ex); err != nil {
		return ValidatorRule{}, fmt.Errorf("example: does not meet min_args: %w", err)
	}
	return r, nil
}

// minArgValue normalizes a min_args value: a non-negative number becomes
// float64, true stays true; anything else is an error.
func minArgValue(v any) (any, error) {
	switch n := v.(type) {
	case bool:
		if !n {
			return nil, errors.New("false is meaningless (omit the key)")
		}
		return true, nil
	case int:
		return minNumber(float64(n))
	case int64:
		return minNumber(float64(n))
	case uint64:
		return minNumber(float64(n))
	case float64:
		return minNumber(n)
	}
	return nil, fmt.Errorf("want a number or true, got %T", v)
}

func minNumber(f float64) (any, error) {
	if f < 0 {
		return nil, fmt.Errorf("negative minimum %v", f)
	}
	return f, nil
}

// CheckMinArgs checks decoded arguments (JSON numbers as json.Number or
// float64/int) against min_args. The error names the first weak argument.
func CheckMinArgs(min map[string]any, args map[string]any) error {
	keys := make([]string, 0, len(min))
	for k := range min {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := args[k]
		switch want := min[k].(type) {
		case bool:
			if !ok || isEmpty(v) {
				return fmt.Errorf("%s is required by the claim binding policy", k)
			}
		case float64:
			got, isNum := number(v)
			if !ok || !isNum {
				return fmt.Errorf("%s must be a number of at least %v", k, want)
			}
			if got < want {
				return fmt.Errorf("%s is %v, the claim binding policy requires at least %v", k, got, want)
			}
		}
	}
	return nil
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case []string:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

func checkRung(rf rungFile, trusted bool) (Rung, error) {
	if !validName(rf.Rung) {
		return Rung{}, fmt.Errorf("rung: bad name %q", rf.Rung)
	}
	r := Rung{Name: rf.Rung, Description: rf.Description, MinAttempts: 1, MinRoutes: 1}
	if rf.MinAttempts != nil {
		if *rf.MinAttempts < 1 {
			return Rung{}, fmt.Errorf("min_attempts: %d, want at least 1", *rf.MinAttempts)
		}
		r.MinAttempts = *rf.MinAttempts
	}
	if rf.MinRoutes != nil {
		if *rf.MinRoutes < 1 || *rf.MinRoutes > r.MinAttempts {
			return Rung{}, fmt.Errorf("min_routes: %d, want 1 to min_attempts (%d)", *rf.MinRoutes, r.MinAttempts)
		}
		r.MinRoutes = *rf.MinRoutes
	}
	if len(rf.Match) == 0 {
		return Rung{}, errors.New("match: empty")
	}
	for i, m := range rf.Match {
		if m.Tool == "" {
			return Rung{}, fmt.Errorf("match[%d].tool: missing", i)
		}
		if trusted {
			r.Match = append(r.Match, RungMatch{Tool: m.Tool, Command: m.Command})
			continue
		}
		if _, err := path.Match(m.Tool, ""); err != nil {
			return Rung{}, fmt.Errorf("match[%d].tool: bad glob %q", i, m.Tool)
		}
		if m.Command != "" {
			if _, err := regexp.Compile(m.Command); err != nil {
				return Rung{}, fmt.Errorf("match[%d].command: %w", i, err)
			}
		}
		r.Match = append(r.Match, RungMatch{Tool: m.Tool, Command: m.Command})
	}
	return r, nil
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
