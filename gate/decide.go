package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/worktree"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

// Evidence is the ledger as the gate uses it; *ledger.Ledger implements
// it, and so does the in-memory fake in the tests.
type Evidence interface {
	// ReadVerified returns every entry of the session's ledger when the
	// chain, MACs, head and artifacts all verify. A session with no
	// ledger yields no entries and no error; a ledger that fails
	// verification yields a *ledger.VerifyError and no entries.
	ReadVerified(session string) ([]*ledger.Entry, error)
	// Append writes one entry and returns it; on error nothing is written.
	Append(session string, r ledger.Record) (*ledger.Entry, error)
	// OpenArtifact opens a named artifact of an entry; an error when the
	// entry has no such artifact.
	OpenArtifact(e *ledger.Entry, name string) (ledger.ReadSeekCloser, error)
}

// Binding is the claim binding policy as the gate needs it;
// *policies.Binding implements it.
type Binding interface {
	// Validators lists the validators that may back claim, with an
	// example --args each; nil when nothing may.
	Validators(claim string) []policies.ValidatorRule
	// Allows reports whether validator may back claim.
	Allows(claim, validator string) bool
}

// passBody is what the gate reads from a validator_pass entry's body.
type passBody struct {
	Claim     string          `json:"claim"`
	Validator string          `json:"validator"`
	Result    string          `json:"result"`
	Args      json.RawMessage `json:"args"`
	Cwd       string          `json:"cwd"`
	// Worktree is the project root and tree digest the pass validated.
	Worktree *worktree.Pass `json:"worktree"`
}

// decide gathers what Decide needs for one stop: the session's project
// root from the payload's cwd, the state root's working-tree store (its
// stat cache MACed with a key from the ledger's keys when l is a real
// ledger), and the command-name hint.
func (g *Gate) decide(ev *hooks.Event, l Evidence, claims []Claim, entries []*ledger.Entry) Decision {
	store := worktree.LedgerStore(l)
	if store.Dir == "" && g.Home.Root != "" {
		store = worktree.StateStore(g.Home, nil) // no key: nothing cached is trusted
	}
	f := Freshness{
		Scan:     store.Scan,
		Manifest: store.Manifest,
		Hint:     func(after uint64) *Write { return LastWrite(l, entries, after, g.Lexicon) },
	}
	if ev.Cwd != "" && filepath.IsAbs(ev.Cwd) {
		f.SessionRoot = worktree.FindRoot(ev.Cwd)
	}
	return Decide(claims, entries, f, policies.ForCwd(g.Binding, ev.Cwd))
}

// Write is the last file-modifying tool call found in a ledger.
type Write struct {
	Seq  uint64
	Tool string
	// What is a short description: the tool name, or the Bash command.
	What string
}

// MaxCommandRead bounds how much of a tool call's input.json the gate
// reads to find a Bash command.
const MaxCommandRead = 1 << 20

// LastWrite returns the last tool_call or tool_failure entry after seq
// `after` that modified files, or nil: a call of a writing kind
// (file_write, file_edit, patch), a tool the lexicon's write policy names,
// or a shell call whose command the lexicon marks as a write, whatever
// the runtime called its tools. A shell call whose command cannot be read
// counts as a write: stale evidence only costs a re-run.
func LastWrite(ev Evidence, entries []*ledger.Entry, after uint64, lex *policies.Claims) *Write {
	var files *ledger.ArtifactFiles // one open pack for every command read
	defer func() {
		if files != nil {
			files.Close()
		}
	}()
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Seq <= after {
			break
		}
		if e.Kind != ledger.KindToolCall && e.Kind != ledger.KindToolFailure {
			continue
		}
		kind := hooks.RecordedKind(e.Tool, e.Body)
		if kind.Writes() || lex.IsWriteTool(e.Tool) {
			return &Write{Seq: e.Seq, Tool: e.Tool, What: e.Tool}
		}
		if m := hooks.RecordedMCPName(e.Tool, e.Body); m != "" && m != e.Tool && lex.IsWriteTool(m) {
			// another runtime's name for an MCP file tool
			return &Write{Seq: e.Seq, Tool: e.Tool, What: e.Tool + " (" + m + ")"}
		}
		if kind != hooks.KindShell {
			continue
		}
		if af, ok := ev.(artifactFiles); ok && files == nil {
			files = af.ArtifactFiles(e.Session)
		}
		cmd, err := readCommand(ev, files, e)
		if err != nil {
			return &Write{Seq: e.Seq, Tool: e.Tool, What: e.Tool + " (command unreadable: " + err.Error() + ")"}
		}
		if lex.IsWriteCommand(cmd) {
			return &Write{Seq: e.Seq, Tool: e.Tool, What: e.Tool + ": " + truncate(oneLine(cmd), 120)}
		}
	}
	return nil
}

// artifactFiles is implemented by *ledger.Ledger: it reads several
// entries' artifacts through one open pack.
type artifactFiles interface {
	ArtifactFiles(session string) *ledger.ArtifactFiles
}

// readCommand returns the shell command of e's input.json, read through
// files when there is one.
func readCommand(ev Evidence, files *ledger.ArtifactFiles, e *ledger.Entry) (string, error) {
	var b []byte
	if files != nil && files.Session() == e.Session {
		var err error
		if b, err = files.ReadFile(e, "input.json", MaxCommandRead); err != nil {
			return "", err
		}
	} else {
		f, err := ev.OpenArtifact(e, "input.json")
		if err != nil {
			return "", err
		}
		defer f.Close()
		b, err = io.ReadAll(io.LimitReader(f, MaxCommandRead+1))
		if err != nil {
			return "", err
		}
		if len(b) > MaxCommandRead {
			return "", fmt.Errorf("input.json over %d bytes", MaxCommandRead)
		}
	}
	if !json.Valid(b) {
		return "", fmt.Errorf("input.json: not JSON")
	}
	if s, ok := hooks.ShellCommandOf(b); ok {
		return s, nil
	}
	return "", fmt.Errorf("input.json: no command")
}

// Status says whether a claim type is supported.
type Status string

const (
	Supported    Status = "supported"
	Missing      Status = "missing"       // no validator_pass for the claim
	Stale        Status = "stale"         // the tree changed since the latest allowed pass
	NotAllowed   Status = "not_allowed"   // passes exist, none from an allowed validator
	NoBinding    Status = "no_binding"    // the policy allows no validator at all
	OtherProject Status = "other_project" // allowed passes exist, none for this session's project
)

// Verdict is the gate's finding for one claim type of the message.
type Verdict struct {
	Type   string
	Claims []Claim // every sentence making the claim
	Status Status
	// Pass is the validator_pass entry relied on (Supported) or found
	// stale (Stale, OtherProject).
	Pass      *ledger.Entry
	Validator string
	// Tree is how the working tree compares with what Pass validated.
	Tree *TreeCheck
	// Write is the last file-modifying call after a stale Pass, if the
	// command-name lexicon recognised one: a hint for the reason only.
	Write *Write
	// Rules are the validators the binding allows, for the block reason.
	Rules []policies.ValidatorRule
	// Revalidate is the docket validate command that re-runs Pass.
	Revalidate string
	// SessionRoot is the project the session runs in; Cwd is where Pass
	// ran (OtherProject).
	SessionRoot, Cwd string
}

// TreeCheck compares a pass's working-tree digest with the tree now.
type TreeCheck struct {
	Root      string // the project root the pass validated
	Validated string // its recorded digest ("" when none was recorded)
	Current   string // the digest now ("" when it could not be computed)
	// Changes are the differences, when the validated manifest is still
	// stored; Unknown says it is not (the paths cannot be named).
	Changes []worktree.Change
	Unknown bool
	// Err says why freshness could not be established.
	Err string
}

// Decision is the gate's finding for a whole message.
type Decision struct {
	Verdicts []Verdict
}

// Unsupported returns the verdicts that are not Supported.
func (d Decision) Unsupported() []Verdict {
	var out []Verdict
	for _, v := range d.Verdicts {
		if v.Status != Supported {
			out = append(out, v)
		}
	}
	return out
}

// Allowed reports whether every claim is supported.
func (d Decision) Allowed() bool { return len(d.Unsupported()) == 0 }

// Freshness is what Decide needs beyond the ledger: the project the
// session runs in and the working tree as it is now.
type Freshness struct {
	// SessionRoot is the project root of the stop payload's cwd (see
	// worktree.FindRoot); "" when the payload names no directory, and
	// then no pass can back a claim.
	SessionRoot string
	// Scan returns the tree at a project root as it is now.
	Scan func(root string) (*worktree.Tree, error)
	// Manifest returns the files of a validated tree by digest, to name
	// what changed; nil or an error leaves the paths unnamed.
	Manifest func(digest string) ([]worktree.File, error)
	// Hint returns the last file-modifying call after seq (see
	// LastWrite); nil for none.
	Hint func(after uint64) *Write
}

// Decide matches claims against verified entries: a claim type is
// supported only by a validator_pass entry whose body names that claim
// and result "pass", whose validator the binding allows for the claim,
// whose working directory and project root lie inside the session's
// project root, and whose recorded working-tree digest equals the
// tree's digest now. Which command changed the tree does not matter;
// f.Hint only names a likely one. The newest pass that is fresh wins;
// when none is, the verdict describes the newest candidate.
func Decide(claims []Claim, entries []*ledger.Entry, f Freshness, b Binding) Decision {
	var d Decision
	m := newDecisionMemo(f)
	for _, ty := range ClaimTypesOf(claims) {
		v := Verdict{Type: ty, SessionRoot: f.SessionRoot}
		for _, c := range claims {
			if c.Type == ty {
				v.Claims = append(v.Claims, c)
			}
		}
		decideType(&v, entries, f, b, m)
		// A supported claim has a rule that allowed its pass. The rules
		// fitted to the project (which probe its files) are only for the
		// block reason: not looked up when nothing blocks.
		if v.Status != Supported {
			if v.Rules = b.Validators(ty); len(v.Rules) == 0 {
				v = Verdict{Type: ty, Claims: v.Claims, SessionRoot: f.SessionRoot, Status: NoBinding}
			}
		}
		d.Verdicts = append(d.Verdicts, v)
	}
	return d
}

type scanResult struct {
	tree *worktree.Tree
	err  error
}

// decisionMemo is what one decision works out at most once, however
// many claim types and passes ask: the tree scan of each root, the
// decoded body of each pass, the resolved form of each path.
type decisionMemo struct {
	f      Freshness
	scans  map[string]scanResult
	bodies map[*ledger.Entry]*passBody
	paths  map[string]string
}

func newDecisionMemo(f Freshness) *decisionMemo {
	return &decisionMemo{f: f, scans: map[string]scanResult{}, bodies: map[*ledger.Entry]*passBody{}, paths: map[string]string{}}
}

func (m *decisionMemo) scan(root string) scanResult {
	if r, ok := m.scans[root]; ok {
		return r
	}
	var r scanResult
	if m.f.Scan == nil {
		r.err = errors.New("no tree scanner")
	} else {
		r.tree, r.err = m.f.Scan(root)
	}
	m.scans[root] = r
	return r
}

// body is e's pass body, nil when it does not decode.
func (m *decisionMemo) body(e *ledger.Entry) *passBody {
	if pb, ok := m.bodies[e]; ok {
		return pb
	}
	pb := &passBody{}
	if err := json.Unmarshal(e.Body, pb); err != nil {
		pb = nil
	}
	m.bodies[e] = pb
	return pb
}

// resolve is p cleaned, with its symlinks resolved when it exists.
func (m *decisionMemo) resolve(p string) string {
	if r, ok := m.paths[p]; ok {
		return r
	}
	r := filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(r); err == nil {
		r = real
	}
	m.paths[p] = r
	return r
}

func decideType(v *Verdict, entries []*ledger.Entry, f Freshness, b Binding, m *decisionMemo) {
	var disallowed string
	var stale, elsewhere *Verdict
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind != ledger.KindValidatorPass {
			continue
		}
		pb := m.body(e)
		if pb == nil {
			continue
		}
		body := *pb
		if body.Claim != v.Type || body.Result != "pass" {
			continue
		}
		if !b.Allows(v.Type, body.Validator) {
			if disallowed == "" {
				disallowed = body.Validator
			}
			continue
		}
		cand := *v
		cand.Pass, cand.Validator, cand.Cwd = e, body.Validator, body.Cwd
		cand.Revalidate = revalidate(e.Session, v.Type, body)
		if !inProject(f.SessionRoot, body, m.resolve) {
			if elsewhere == nil {
				cand.Status = OtherProject
				elsewhere = &cand
			}
			continue
		}
		tc := &TreeCheck{}
		if body.Worktree != nil {
			tc.Root, tc.Validated = body.Worktree.Root, body.Worktree.Digest
		}
		cand.Tree = tc
		switch {
		case body.Worktree == nil || tc.Root == "":
			tc.Err = "the pass records no working-tree digest (made by an older docket)"
		case tc.Validated == "":
			tc.Err = "the pass has no working-tree digest: " + body.Worktree.Error
		default:
			r := m.scan(tc.Root)
			if r.err != nil {
				tc.Err = "the working tree cannot be digested now: " + r.err.Error()
				break
			}
			tc.Current = r.tree.Digest
			if tc.Current == tc.Validated {
				cand.Status = Supported
				*v = cand
				return
			}
		}
		if stale == nil {
			cand.Status = Stale
			if tc.Current != "" {
				tc.Changes, tc.Unknown = changes(f, tc.Validated, m.scan(tc.Root).tree)
			}
			if f.Hint != nil {
				cand.Write = f.Hint(e.Seq)
			}
			stale = &cand
		}
	}
	switch {
	case stale != nil:
		*v = *stale
	case elsewhere != nil:
		*v = *elsewhere
	case disallowed != "":
		v.Status, v.Validator = NotAllowed, disallowed
	default:
		v.Status = Missing
	}
}

// changes names what differs between the validated tree and cur.
func changes(f Freshness, validated string, cur *worktree.Tree) ([]worktree.Change, bool) {
	if f.Manifest == nil || cur == nil {
		return nil, true
	}
	old, err := f.Manifest(validated)
	if err != nil {
		return nil, true
	}
	return worktree.Diff(old, cur.Files), false
}

// inProject reports whether a pass was made inside the session's
// project: its cwd and its recorded project root both lie within
// sessionRoot (symlinks resolved where the paths still exist).
func inProject(sessionRoot string, body passBody, resolve func(string) string) bool {
	if sessionRoot == "" || body.Cwd == "" || !filepath.IsAbs(body.Cwd) {
		return false
	}
	if !worktree.Within(sessionRoot, resolve(body.Cwd)) {
		return false
	}
	if body.Worktree != nil && body.Worktree.Root != "" && !worktree.Within(sessionRoot, resolve(body.Worktree.Root)) {
		return false
	}
	return true
}

// revalidate is the docket validate command that re-runs a pass.
func revalidate(session, claim string, body passBody) string {
	args := string(body.Args)
	if args == "" {
		args = "{}"
	}
	cmd := fmt.Sprintf("docket validate --session %s", session)
	if body.Cwd != "" {
		cmd += " --cwd " + shellQuote(body.Cwd)
	}
	return cmd + fmt.Sprintf(" --claim %s --validator %s --args %s", claim, body.Validator, shellQuote(args))
}

// latestPass returns the newest validator_pass for claim from an allowed
// validator, and otherwise the validator of the newest pass that was not
// allowed.
func latestPass(entries []*ledger.Entry, claim string, b Binding) (pass *ledger.Entry, validator, disallowed string) {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Kind != ledger.KindValidatorPass {
			continue
		}
		var body passBody
		if err := json.Unmarshal(e.Body, &body); err != nil {
			continue
		}
		if body.Claim != claim || body.Result != "pass" {
			continue
		}
		if !b.Allows(claim, body.Validator) {
			if disallowed == "" {
				disallowed = body.Validator
			}
			continue
		}
		return e, body.Validator, ""
	}
	return nil, "", disallowed
}

// MinRelevantSeq is the oldest seq a write must follow to matter: the
// oldest among the newest allowed passes of each claimed type. Writes at
// or before it cannot make any of those passes stale.
func MinRelevantSeq(claims []Claim, entries []*ledger.Entry, b Binding) uint64 {
	var min uint64
	first := true
	for _, ty := range ClaimTypesOf(claims) {
		p, _, _ := latestPass(entries, ty, b)
		if p == nil {
			continue
		}
		if first || p.Seq < min {
			min, first = p.Seq, false
		}
	}
	if first { // no pass at all: no write can matter
		if n := len(entries); n > 0 {
			return entries[n-1].Seq
		}
	}
	return min
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// MaxNamedChanges is how many changed paths a block reason names.
const MaxNamedChanges = 5

// staleWhy explains a Stale verdict for the block reason.
func staleWhy(v Verdict) string {
	var b strings.Builder
	tc := v.Tree
	if tc == nil {
		tc = &TreeCheck{Err: "no working-tree check"}
	}
	if tc.Err != "" {
		fmt.Fprintf(&b, "stale: validator_pass at seq %d (%s) cannot be shown to match the working tree: %s", v.Pass.Seq, v.Validator, oneLine(tc.Err))
	} else {
		fmt.Fprintf(&b, "stale: the working tree %s changed since validator_pass at seq %d (%s)", tc.Root, v.Pass.Seq, v.Validator)
		if tc.Unknown || len(tc.Changes) == 0 {
			b.WriteString(" (the validated file list is no longer stored, so the changed paths cannot be named)")
		} else {
			b.WriteString(": ")
			for i, c := range tc.Changes {
				if i == MaxNamedChanges {
					break
				}
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%s %s", c.Kind, c.Path)
			}
			if n := len(tc.Changes); n > MaxNamedChanges {
				fmt.Fprintf(&b, " and %d more (%d paths changed)", n-MaxNamedChanges, n)
			} else {
				fmt.Fprintf(&b, " (%d path(s) changed)", n)
			}
		}
	}
	if v.Write != nil {
		fmt.Fprintf(&b, "; the last file-modifying call after it was seq %d (%s)", v.Write.Seq, v.Write.What)
	}
	if v.Revalidate != "" {
		b.WriteString("\n  re-validate: " + v.Revalidate)
	}
	return b.String()
}

// otherProjectWhy explains an OtherProject verdict.
func otherProjectWhy(v Verdict) string {
	if v.SessionRoot == "" {
		return fmt.Sprintf("the stop payload names no working directory, so validator_pass at seq %d (%s) cannot be tied to this session's project", v.Pass.Seq, v.Validator)
	}
	project := v.SessionRoot
	return fmt.Sprintf("the newest validator_pass for %s (seq %d, %s) ran in %s, outside this session's project %s; evidence from another directory backs nothing here. Validate inside the project (docket validate --cwd DIR)", v.Type, v.Pass.Seq, v.Validator, v.Cwd, project)
}

// treeBody adds the working-tree comparison to a gate_decision claim body.
func treeBody(m map[string]any, tc *TreeCheck) {
	if tc == nil {
		return
	}
	m["tree_root"] = tc.Root
	if tc.Validated != "" {
		m["tree_validated"] = tc.Validated
	}
	if tc.Current != "" {
		m["tree_current"] = tc.Current
	}
	if tc.Err != "" {
		m["tree_error"] = truncate(tc.Err, 200)
	}
	if len(tc.Changes) > 0 {
		var paths []string
		for i, c := range tc.Changes {
			if i == 20 {
				break
			}
			paths = append(paths, c.Kind+" "+c.Path)
		}
		m["tree_changes"] = paths
		m["tree_changed"] = len(tc.Changes)
	}
}
