package gate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/docket/docket/hooks"
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

// entryKind is a tool entry's kind: the tool_kind docket-ledger recorded
// in its body, else (entries written before it did) the kind its tool
// name maps to.
func entryKind(e *ledger.Entry) hooks.ToolKind {
	var b struct {
		ToolKind string `json:"tool_kind"`
	}
	if json.Unmarshal(e.Body, &b) == nil && b.ToolKind != "" {
		return hooks.ToolKind(b.ToolKind)
	}
	return hooks.KindOf(e.Tool)
}

// LastWrite returns the last tool_call or tool_failure entry after seq
// `after` that modified files, or nil: a call of a writing kind
// (file_write, file_edit, patch), a tool the lexicon's write policy names,
// or a shell call whose command the lexicon marks as a write, whatever
// the runtime called its tools. A shell call whose command cannot be read
// counts as a write: stale evidence only costs a re-run.
func LastWrite(ev Evidence, entries []*ledger.Entry, after uint64, lex *policies.Claims) *Write {
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		if e.Seq <= after {
			break
		}
		if e.Kind != ledger.KindToolCall && e.Kind != ledger.KindToolFailure {
			continue
		}
		kind := entryKind(e)
		if kind.Writes() || lex.IsWriteTool(e.Tool) {
			return &Write{Seq: e.Seq, Tool: e.Tool, What: e.Tool}
		}
		if kind != hooks.KindShell {
			continue
		}
		cmd, err := readCommand(ev, e)
		if err != nil {
			return &Write{Seq: e.Seq, Tool: e.Tool, What: e.Tool + " (command unreadable: " + err.Error() + ")"}
		}
		if lex.IsWriteCommand(cmd) {
			return &Write{Seq: e.Seq, Tool: e.Tool, What: e.Tool + ": " + truncate(oneLine(cmd), 120)}
		}
	}
	return nil
}

func readCommand(ev Evidence, e *ledger.Entry) (string, error) {
	f, err := ev.OpenArtifact(e, "input.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxCommandRead+1))
	if err != nil {
		return "", err
	}
	if len(b) > MaxCommandRead {
		return "", fmt.Errorf("input.json over %d bytes", MaxCommandRead)
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
	Supported  Status = "supported"
	Missing    Status = "missing"     // no validator_pass for the claim
	Stale      Status = "stale"       // the latest allowed pass precedes a write
	NotAllowed Status = "not_allowed" // passes exist, none from an allowed validator
	NoBinding  Status = "no_binding"  // the policy allows no validator at all
)

// Verdict is the gate's finding for one claim type of the message.
type Verdict struct {
	Type   string
	Claims []Claim // every sentence making the claim
	Status Status
	// Pass is the validator_pass entry relied on (Supported) or found
	// stale (Stale).
	Pass      *ledger.Entry
	Validator string
	// Write is the write that made Pass stale.
	Write *Write
	// Rules are the validators the binding allows, for the block reason.
	Rules []policies.ValidatorRule
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

// Decide matches claims against verified entries: a claim type is
// supported only by a validator_pass entry whose body names that claim
// and result "pass", whose validator the binding allows for the claim,
// and that is newer than the last write (lastWrite, nil for none). It is
// pure: all I/O happened before.
func Decide(claims []Claim, entries []*ledger.Entry, lastWrite *Write, b Binding) Decision {
	var d Decision
	for _, ty := range ClaimTypesOf(claims) {
		v := Verdict{Type: ty, Rules: b.Validators(ty)}
		for _, c := range claims {
			if c.Type == ty {
				v.Claims = append(v.Claims, c)
			}
		}
		pass, validator, disallowed := latestPass(entries, ty, b)
		switch {
		case len(v.Rules) == 0:
			v.Status = NoBinding
		case pass == nil && disallowed != "":
			v.Status, v.Validator = NotAllowed, disallowed
		case pass == nil:
			v.Status = Missing
		case lastWrite != nil && lastWrite.Seq > pass.Seq:
			v.Status, v.Pass, v.Validator, v.Write = Stale, pass, validator, lastWrite
		default:
			v.Status, v.Pass, v.Validator = Supported, pass, validator
		}
		d.Verdicts = append(d.Verdicts, v)
	}
	return d
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
