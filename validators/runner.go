// Package validators is docket's validator runner: the only producer of
// validator_pass entries. Given a claim, a validator name and arguments,
// it checks the claim binding policy and the validator's argument schema
// (refusing wrong validators and weak arguments), executes the validator
// itself — it never trusts an agent's report of a run — stores the
// validator's own outputs as artifacts and appends a signed
// validator_pass (or validator_fail) entry to the session's ledger.
//
// Validator definitions are YAML files (see defs/) naming a Go class and
// its argument schema; the classes live in this package, one file each.
package validators

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
	"github.com/docket/docket/trust"
)

// Outcome is a validation's result.
type Outcome string

const (
	Pass    Outcome = "pass"
	Fail    Outcome = "fail"
	Refused Outcome = "refused"
)

// MaxArgsSize bounds the --args JSON.
const MaxArgsSize = 64 << 10

// Request asks the runner to back a claim with a validator.
type Request struct {
	Session   string
	Claim     string
	Validator string
	Args      json.RawMessage // a JSON object
	Cwd       string          // absolute working directory the validator runs in
	// ProjectRoot is the root of the project the session runs in (see
	// policies.ProjectRoot of the directory the hooks first saw the
	// session in); Cwd must lie inside it. Empty means the project of Cwd.
	ProjectRoot string
}

// Result is what a validation produced. Refusals and failures are
// Results, not errors; an error means the validator could not be run.
type Result struct {
	Outcome   Outcome `json:"result"`
	Reason    string  `json:"reason,omitempty"`
	Hint      string  `json:"hint,omitempty"`
	Session   string  `json:"session"`
	Claim     string  `json:"claim"`
	Validator string  `json:"validator"`
	Class     string  `json:"class,omitempty"`
	// Args are the effective arguments (defaults applied), canonical.
	Args       json.RawMessage `json:"args,omitempty"`
	Cwd        string          `json:"cwd"`
	Runs       int             `json:"runs"`
	TestsRun   int             `json:"tests_run"`
	DurationMS int64           `json:"duration_ms"`
	// Entry is the appended validator_pass / validator_fail entry.
	Entry *ledger.Entry `json:"-"`
	Seq   *uint64       `json:"seq,omitempty"`
	Hash  string        `json:"hash,omitempty"`
}

// Runner runs validators. All fields are required.
type Runner struct {
	Binding     *policies.Binding
	Definitions map[string]*Definition
	Ledger      Ledger
	// Toolchain is what validators run with (LoadToolchain).
	Toolchain *Toolchain
	// RunAs, when set, is the user the validator's processes run as.
	RunAs *RunAs
	// OTag, when set, gives the O-Tag of a session's current causal
	// chain, recorded as the entry's o_tag (NewRunner:
	// trust.CurrentOTag with the ledger's keys).
	OTag func(session string) string
}

// NewRunner loads the claim binding policy and the validator definitions
// under h, to run against l.
func NewRunner(h home.Home, l Ledger) (*Runner, error) {
	b, err := policies.LoadBinding(h)
	if err != nil {
		return nil, err
	}
	defs, err := LoadDefinitions(h)
	if err != nil {
		return nil, err
	}
	tc, err := LoadToolchain(context.Background(), h, b.Toolchains)
	if err != nil {
		return nil, err
	}
	r := &Runner{Binding: b, Definitions: defs, Ledger: l, Toolchain: tc}
	if k, ok := l.(interface{ Keys() *ledger.Keys }); ok {
		r.OTag = func(session string) string { return trust.CurrentOTag(h, k.Keys(), session) }
	}
	return r, nil
}

// Run checks req against the binding policy and the definition, runs the
// validator and appends its entry. A refusal appends nothing.
func (r *Runner) Run(ctx context.Context, req Request) (*Result, error) {
	res := &Result{Session: req.Session, Claim: req.Claim, Validator: req.Validator, Cwd: req.Cwd}
	if !home.ValidSessionID(req.Session) {
		return nil, fmt.Errorf("run validator: invalid session id %q", req.Session)
	}
	if !filepath.IsAbs(req.Cwd) {
		return nil, fmt.Errorf("run validator: working directory %q is not absolute", req.Cwd)
	}
	if r.Toolchain == nil {
		return nil, errors.New("run validator: no toolchain (use NewRunner)")
	}
	root, refusal := r.checkProject(&req, res)
	if refusal != nil {
		return refusal, nil
	}
	res.Cwd = req.Cwd
	def, args, rule, refusal := r.check(req, res)
	if refusal != nil {
		return refusal, nil
	}
	res.Class = def.Class
	canon, err := canonjson.Marshal(jsonArgs(args))
	if err != nil {
		return nil, fmt.Errorf("run validator: %w", err)
	}
	res.Args = canon

	tmp, err := os.MkdirTemp("", "docket-validate-")
	if err != nil {
		return nil, fmt.Errorf("run validator: %w", err)
	}
	defer os.RemoveAll(tmp)
	x := r.execution(req, def, args, rule, root, tmp, "")
	tree := recordTree(r.Ledger, req.Cwd)
	start := time.Now()
	out, refused, err := x.prepareAndRun(ctx)
	if err == nil && refused == "" && out.pass && len(rule.With) > 0 {
		out, refused, err = r.runCompanion(ctx, req, x, out)
	}
	res.DurationMS = time.Since(start).Milliseconds()
	if err != nil {
		return nil, fmt.Errorf("run validator: %w", err)
	}
	if refused != "" {
		res.Outcome, res.Reason, res.Hint = Refused, refused, r.exampleHint(req.Claim, rule, root)
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("run validator: interrupted: %w", ctx.Err())
	}
	res.Cwd = x.cwd
	res.Outcome, res.Reason, res.Runs, res.TestsRun = Fail, out.reason, out.runs, out.testsRun
	kind := ledger.KindValidatorFail
	if out.pass {
		res.Outcome, kind = Pass, ledger.KindValidatorPass
	}
	body := map[string]any{
		"claim":             req.Claim,
		"validator":         req.Validator,
		"class":             def.Class,
		"args":              jsonArgs(args),
		"cwd":               x.cwd,
		"project_root":      root,
		"result":            string(res.Outcome),
		"runs":              out.runs,
		"tests_run":         out.testsRun,
		"duration_ms":       res.DurationMS,
		"definition_digest": def.Digest,
		"binding_version":   policies.Version(r.Binding.Source()),
		"worktree":          tree.Finish(),
	}
	if out.reason != "" {
		body["reason"] = out.reason
	}
	if len(out.detail) > 0 {
		body["detail"] = out.detail
	}
	if tools := x.toolRecords(); len(tools) > 0 {
		body["toolchain"] = tools
	}
	if out.with != nil {
		body["with"] = out.with
	}
	if r.OTag != nil {
		if t := r.OTag(req.Session); t != "" {
			body["o_tag"] = t
		}
	}
	arts, closeAll, err := x.openArtifacts()
	if err != nil {
		return nil, fmt.Errorf("run validator: %w", err)
	}
	e, err := r.Ledger.Append(req.Session, ledger.Record{
		Kind: kind, Runtime: "docket", Event: "validate", Tool: req.Validator,
		Args: canon, Body: body, Artifacts: arts,
	})
	closeAll()
	if err != nil {
		return nil, fmt.Errorf("run validator: append %s: %w", kind, err)
	}
	res.Entry = e
	seq := e.Seq
	res.Seq, res.Hash = &seq, e.Hash
	return res, nil
}

// check applies the binding policy and the definition's schema. It
// returns a Result when the request is refused.
func (r *Runner) check(req Request, res *Result) (*Definition, Args, policies.ValidatorRule, *Result) {
	refuse := func(hint, format string, a ...any) (*Definition, Args, policies.ValidatorRule, *Result) {
		res.Outcome, res.Reason, res.Hint = Refused, fmt.Sprintf(format, a...), hint
		return nil, nil, policies.ValidatorRule{}, res
	}
	rules := r.Binding.Validators(req.Claim)
	if rules == nil {
		return refuse("", "unknown claim type %q, or nothing may back it (claim types: %s)", req.Claim, strings.Join(policies.ClaimTypes, ", "))
	}
	rule, ok := r.Binding.Rule(req.Claim, req.Validator)
	if !ok {
		var names []string
		for _, ru := range rules {
			names = append(names, ru.Name)
		}
		return refuse(r.exampleHint(req.Claim, r.suggest(req.Claim, req.ProjectRoot, rules[0]), req.ProjectRoot), "validator %q may not back claim %q; allowed: %s", req.Validator, req.Claim, strings.Join(names, ", "))
	}
	hint := r.exampleHint(req.Claim, rule, req.ProjectRoot)
	def, ok := r.Definitions[req.Validator]
	if !ok {
		return refuse("", "unknown validator %q: no definition installed for it", req.Validator)
	}
	args, err := parseArgs(def, req.Args)
	if err != nil {
		return refuse(hint, "weak or invalid arguments: %v", err)
	}
	if err := policies.CheckMinArgs(rule.MinArgs, jsonArgs(args)); err != nil {
		return refuse(hint, "weak arguments: %v", err)
	}
	if err := def.cls.check(args, def); err != nil {
		return refuse(hint, "weak arguments: %v", err)
	}
	if err := r.checkRule(req, rule, def, args); err != nil {
		return refuse(hint, "%v", err)
	}
	return def, args, rule, nil
}

// checkRule applies the rule's own limits: no run filter unless the
// rule allows one, and a command validator's command must be on the
// allow list for the claim and project.
func (r *Runner) checkRule(req Request, rule policies.ValidatorRule, def *Definition, args Args) error {
	if args.str("run") != "" && !rule.AllowRun {
		return fmt.Errorf("the claim binding policy allows no run filter for %s with %s: a filter can leave out the failing test; run the whole package set (drop \"run\")", req.Claim, req.Validator)
	}
	if _, ok := def.cls.(commandClass); ok {
		return checkAllowed(args, r.Binding.Commands(req.Claim, req.Validator, req.ProjectRoot), req.Claim)
	}
	return nil
}

// suggest returns the rule as fitted to the project (its example), or
// rule itself when the project has no fitted version of it.
func (r *Runner) suggest(claim, root string, rule policies.ValidatorRule) policies.ValidatorRule {
	if root == "" {
		return rule
	}
	fitted := r.Binding.ForProject(root).Validators(claim)
	for _, f := range fitted {
		if f.Name == rule.Name {
			return f
		}
	}
	if len(fitted) > 0 && len(rule.With) > 0 {
		return fitted[0]
	}
	return rule
}

func (r *Runner) exampleHint(claim string, rule policies.ValidatorRule, root string) string {
	rule = r.suggest(claim, root, rule)
	return fmt.Sprintf("docket validate --claim %s --validator %s --args '%s'", claim, rule.Name, rule.Example)
}

// Args are a request's arguments after schema checks, each of its
// Param's Go type, defaults applied.
type Args map[string]any

func (a Args) str(k string) string        { s, _ := a[k].(string); return s }
func (a Args) integer(k string) int64     { n, _ := a[k].(int64); return n }
func (a Args) strs(k string) []string     { l, _ := a[k].([]string); return l }
func (a Args) dur(k string) time.Duration { d, _ := a[k].(time.Duration); return d }

// parseArgs decodes the --args object and checks it against the schema:
// unknown arguments, wrong types, missing required ones and values out of
// range are errors.
func parseArgs(def *Definition, raw json.RawMessage) (Args, error) {
	if len(raw) > MaxArgsSize {
		return nil, fmt.Errorf("arguments larger than %d bytes", MaxArgsSize)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var in map[string]any
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("--args is not a JSON object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("--args has data after the JSON object")
	}
	if in == nil {
		return nil, errors.New("--args is null, want a JSON object")
	}
	args := Args{}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p, ok := def.Params[k]
		if !ok {
			return nil, fmt.Errorf("unknown argument %q (%s takes: %s)", k, def.Name, strings.Join(paramNames(def), ", "))
		}
		v, err := coerce(p.Type, in[k])
		if err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		if err := inRange(p, v); err != nil {
			return nil, fmt.Errorf("%s: %v", k, err)
		}
		args[k] = v
	}
	for _, k := range paramNames(def) {
		p := def.Params[k]
		if _, ok := args[k]; ok {
			continue
		}
		if p.Required {
			return nil, fmt.Errorf("missing required argument %q", k)
		}
		if p.Default != nil {
			args[k] = p.Default
		}
	}
	return args, nil
}

func paramNames(def *Definition) []string {
	names := make([]string, 0, len(def.Params))
	for n := range def.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// jsonArgs renders args as JSON-ready values: durations as Go duration
// strings, integers as numbers.
func jsonArgs(a Args) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		switch x := v.(type) {
		case time.Duration:
			out[k] = x.String()
		case []string:
			l := make([]any, len(x))
			for i, s := range x {
				l[i] = s
			}
			out[k] = l
		default:
			out[k] = x
		}
	}
	return out
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		return n, err == nil
	case int:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x > 1<<62 {
			return 0, false
		}
		return int64(x), true
	case float64:
		if x != float64(int64(x)) {
			return 0, false
		}
		return int64(x), true
	}
	return 0, false
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, int, int64, uint64, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// paramSpec is what a class needs an argument to be.
type paramSpec struct {
	typ      string
	required bool
}

// class is a Go validator class. Implementations live one per file.
type class interface {
	// params lists the arguments the class understands.
	params() map[string]paramSpec
	// config decodes the definition's config section (strictly); raw is
	// nil when the section is absent.
	config(raw yaml.RawMessage) (any, error)
	// check refuses weak arguments. It does no I/O.
	check(a Args, d *Definition) error
	// run executes the validator. An error means it could not be run;
	// a failed validation is an outcome with pass false.
	run(ctx context.Context, x *execution) (*outcome, error)
}

var classes = map[string]class{}

func classNames() []string {
	var names []string
	for n := range classes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// noConfig is the config decoder of classes that take none.
func noConfig(raw yaml.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) > 0 && strings.TrimSpace(string(raw)) != "null" && strings.TrimSpace(string(raw)) != "{}" {
		return nil, errors.New("this class takes no configuration")
	}
	return nil, nil
}

// decodeConfig strictly decodes raw into v (a pointer).
func decodeConfig(raw yaml.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	return yaml.UnmarshalWithOptions(raw, v, yaml.Strict())
}

// outcome is what a class's run found.
type outcome struct {
	pass     bool
	reason   string
	runs     int
	testsRun int
	detail   map[string]any
	with     map[string]any // the companion validator's run (rule.With)
}

func failf(format string, a ...any) *outcome {
	return &outcome{reason: fmt.Sprintf(format, a...)}
}

// execution is one validator run's context.
type execution struct {
	args    Args
	def     *Definition
	cwd     string
	session string
	ledger  EntryReader
	binding *policies.Binding
	tmp     string // private scratch directory, removed after the run
	arts    *[]string

	claim  string
	rule   policies.ValidatorRule
	root   string     // the session's project root; cwd lies inside it
	tc     *Toolchain // the toolchains and caches to run with
	prefix string     // artifact name prefix (a companion's runs)
	tools  map[string]*Tool
	state  any // what a class's prepare found, for its run
	runAs  *RunAs
	head   *headAnswer // headCommit's, asked once per run
}

// artifactFile creates a scratch file that becomes the named artifact.
func (x *execution) artifactFile(name string) (*os.File, error) {
	name = x.prefix + name
	f, err := os.Create(filepath.Join(x.tmp, name))
	if err != nil {
		return nil, err
	}
	*x.arts = append(*x.arts, name)
	return f, nil
}

// dropArtifact keeps a captured output out of the ledger: bulk a run
// read and that its record makes reproducible (the files of a git
// commit it names).
func (x *execution) dropArtifact(name string) {
	name = x.prefix + name
	*x.arts = slices.DeleteFunc(*x.arts, func(n string) bool { return n == name })
	os.Remove(filepath.Join(x.tmp, name))
}

// writeArtifact stores data as the named artifact.
func (x *execution) writeArtifact(name string, data []byte) error {
	f, err := x.artifactFile(name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// openArtifacts opens the artifacts for streaming into the ledger.
func (x *execution) openArtifacts() ([]ledger.Artifact, func(), error) {
	var arts []ledger.Artifact
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	for _, name := range *x.arts {
		f, err := os.Open(filepath.Join(x.tmp, name))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		files = append(files, f)
		arts = append(arts, ledger.Artifact{Name: name, Data: f})
	}
	return arts, closeAll, nil
}
