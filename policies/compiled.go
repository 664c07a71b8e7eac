package policies

import (
	"fmt"

	"github.com/docket/docket/internal/home"
)

// The compiled-policy cache: the parsed forms the hooks need (the gate's
// claims lexicon with its derived literal prefilters and its claim
// binding; the judge's policy set per project) and the approval verdict,
// stored under run/policy-compiled/ and keyed on a fingerprint of every
// file they were built from, so that a hook pays a few stats, one small
// read and a decode instead of reading, parsing and checking the policy
// files and the approval. See compiled_linux.go for the file, its
// fingerprint and its MAC; a cache that fails any check is ignored and
// the policies are loaded from the files, as without a cache.

// CompiledKindGate and CompiledKindJudge name the two compiled forms.
const (
	CompiledKindGate  = "gate"
	CompiledKindJudge = "judge"
)

// LoadGate returns the claim lexicon and claim binding in force under h
// after checking that the policy files are approved (CheckApproval): from
// the compiled-policy cache when it holds them for exactly the files in
// force, else from the files (and then it caches them). Its errors say
// which step failed, as the gate reports them.
func LoadGate(h home.Home) (*Claims, *Binding, error) {
	if payload, ok := ReadCompiled(h, CompiledKindGate, nil); ok {
		d := decoder{s: payload}
		lex := decodeCompiledClaims(&d)
		b := decodeCompiledBinding(&d)
		if d.err == nil && d.s == "" && lex != nil && b != nil {
			return lex, b, nil
		}
	}
	snap := SnapshotCompiled(h, nil)
	if err := CheckApproval(h); err != nil {
		return nil, nil, fmt.Errorf("refuse to run on an unapproved policy: %w", err)
	}
	lex, err := LoadClaims(h)
	if err != nil {
		return nil, nil, fmt.Errorf("load claim lexicon: %w", err)
	}
	b, err := LoadBinding(h)
	if err != nil {
		return nil, nil, fmt.Errorf("load claim binding: %w", err)
	}
	if snap.ok() {
		var e encoder
		encodeClaims(&e, lex)
		if encodeBinding(&e, b) {
			WriteCompiled(h, CompiledKindGate, nil, snap, e.b)
		}
	}
	return lex, b, nil
}
