package judge

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"reflect"
	"testing"

	"github.com/docket/docket/internal/canonjson"
)

// The reference encodings: what the proposal digest and the entry body
// were before they were written field by field.
func refProposalCanonical(p *ActionProposal) ([]byte, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return canonjson.Canonical(b)
}

func refDecisionBody(d *Decision) ([]byte, error) { return canonjson.Marshal(d) }

// trickyStrings are strings whose encodings differ between encoders:
// HTML characters, control bytes, invalid UTF-8, U+2028, DEL, quotes.
var trickyStrings = []string{
	"", "plain", "go test ./...", `<script>&"'\`, "a\x00b\x01\x1f\x7f", "\b\f\n\r\t",
	"\u2028\u2029", "é😀", "bad\xffutf8\xc3", "\xed\xa0\x80", "sha256:0123abcd", "x\u00a0y", "\ufffd",
}

// fill sets every exported field reachable from v (json-tagged or not)
// to a random value: nil or empty or filled slices, nil or set pointers,
// tricky strings, numbers of every magnitude. A field added to these
// types later is filled too, so the comparison covers it.
func fill(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(trickyStrings[r.Intn(len(trickyStrings))])
	case reflect.Bool:
		v.SetBool(r.Intn(2) == 0)
	case reflect.Int, reflect.Int64, reflect.Int32:
		switch r.Intn(4) {
		case 0:
			v.SetInt(0)
		case 1:
			v.SetInt(-r.Int63n(1000))
		default:
			v.SetInt(r.Int63() >> uint(r.Intn(60)))
		}
	case reflect.Float64:
		fs := []float64{0, 1, -1, 0.5, 1e-7, 3.14159e-9, 1e21, -2.5e22, 123456789.125, 1.0 / 3, math.SmallestNonzeroFloat64, 0.000001}
		v.SetFloat(fs[r.Intn(len(fs))])
	case reflect.Pointer:
		if depth > 4 || r.Intn(3) == 0 {
			v.SetZero()
			return
		}
		n := reflect.New(v.Type().Elem())
		fill(r, n.Elem(), depth+1)
		v.Set(n)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // json.RawMessage: not on the wire
			return
		}
		switch r.Intn(3) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			n := 1 + r.Intn(3)
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := 0; i < n; i++ {
				fill(r, s.Index(i), depth+1)
			}
			v.Set(s)
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			if t.Field(i).IsExported() {
				fill(r, v.Field(i), depth+1)
			}
		}
	case reflect.Map:
		v.SetZero()
	}
}

func TestProposalCanonicalMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 3000; i++ {
		var p ActionProposal
		fill(r, reflect.ValueOf(&p).Elem(), 0)
		p.Context = ProposalContext{} // not on the wire; may hold maps
		want, err := refProposalCanonical(&p)
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		got := p.appendCanonical(nil)
		if !bytes.Equal(got, want) {
			t.Fatalf("proposal %d:\n got  %s\n want %s", i, got, want)
		}
		if d := p.Digest(); d != canonjson.SHA256(want) {
			t.Fatalf("Digest = %s, want %s", d, canonjson.SHA256(want))
		}
	}
}

func TestDecisionBodyMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 3000; i++ {
		var d Decision
		fill(r, reflect.ValueOf(&d).Elem(), 0)
		d.Proposal = nil
		want, err := refDecisionBody(&d)
		if err != nil {
			t.Fatalf("reference: %v", err)
		}
		got, ok := d.canonicalBody()
		if !ok {
			t.Fatalf("decision %d: canonicalBody refused %+v", i, d)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("decision %d:\n got  %s\n want %s", i, got, want)
		}
		// what the ledger makes of the body: the same bytes
		viaLedger, err := canonjson.Marshal(d.entryBody())
		if err != nil || !bytes.Equal(viaLedger, want) {
			t.Fatalf("decision %d: canonjson.Marshal(entryBody) = %s, %v", i, viaLedger, err)
		}
	}
}

// A score encoding/json refuses is not written by hand: the body falls
// back to the Decision itself, and the ledger reports the error as before.
func TestDecisionBodyBadScoreFallsBack(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		d := &Decision{Tags: Tags{Trust: &TrustNote{Score: f}}}
		if _, ok := d.canonicalBody(); ok {
			t.Errorf("score %v: canonicalBody accepted it", f)
		}
		if b, isDecision := d.entryBody().(*Decision); !isDecision || b != d {
			t.Errorf("score %v: entryBody = %T, want the *Decision", f, d.entryBody())
		}
		if _, err := canonjson.Marshal(d.entryBody()); err == nil {
			t.Errorf("score %v: the ledger's encoding accepted it", f)
		}
	}
}

func TestCanonFloatMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	fs := []float64{0, math.Copysign(0, -1), 1e-6, 9.999999e-7, 1e20, 1e21, 1e-300, -1e300, 5e-324, math.MaxFloat64}
	for i := 0; i < 2000; i++ {
		fs = append(fs, math.Float64frombits(r.Uint64()))
	}
	for _, f := range fs {
		want, err := json.Marshal(f)
		got, ok := canonFloat(nil, f)
		if (err == nil) != ok {
			t.Fatalf("%v: ok = %v, encoding/json err = %v", f, ok, err)
		}
		if ok && string(got) != string(want) {
			t.Fatalf("%v: got %s, want %s", f, got, want)
		}
	}
}

func FuzzCanonStringMatchesCanonjson(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, _ := json.Marshal(s)
		want, err := canonjson.Canonical(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := canonString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("canonString(%q) = %s, want %s", s, got, want)
		}
	})
}

func BenchmarkProposalDigest(b *testing.B) {
	p := benchProposal(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Digest()
	}
}

func BenchmarkProposalDigestReflect(b *testing.B) {
	p := benchProposal(b)
	b.ReportAllocs()
	for b.Loop() {
		c, _ := refProposalCanonical(p)
		_ = canonjson.SHA256(c)
	}
}

func benchProposal(b *testing.B) *ActionProposal {
	r := rand.New(rand.NewSource(4))
	var p ActionProposal
	fill(r, reflect.ValueOf(&p).Elem(), 0)
	p.Context = ProposalContext{}
	return &p
}

func BenchmarkDecisionBody(b *testing.B) {
	d := benchDecision()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := canonjson.Marshal(d.entryBody()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecisionBodyReflect(b *testing.B) {
	d := benchDecision()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := refDecisionBody(d); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDecision is a routine allow as docket-judge records it.
func benchDecision() *Decision {
	return &Decision{Outcome: Allow, RawOutcome: Allow, EnforcementAction: EnforceNone, Mode: "enforce", JudgeID: "policy",
		Judges: []string{"policy"}, PolicyVersion: "sha256:5e2b0c0d8a7f", ToolDefinitionHash: "sha256:8f14e45fceea167a5a36dedd4bea2543",
		ArgumentsHash: "sha256:21c00fd72806fdae3e6160a9e9da8ed8cdd509bd69d4b902f712d21d2d2245ff", ToolUseID: "toolu_bench",
		ActionID: "toolu_bench", IdempotencyKey: "sha256:9b74c9897bac770ffc029102a200c5de", RiskClass: "reversible_write",
		ClassReasons: []string{"go test runs the project's tests"}, Reason: "no policy objects", MemoriesUsed: []MemoryUse{},
		Recall: "not_needed", CostSource: "judge", Cost: Cost{Source: "judge"}, ProposalDigest: "sha256:e3b0c44298fc1c149afbf4c8996fb924",
		SideChannel: SideChannelMissing, DurationMicros: 412,
		Tags: Tags{RTag: "reversible_write", OTag: "user", VPol: &VPol{Version: "sha256:5e2b0c0d8a7f", Rule: "class:reversible_write"},
			Trust: &TrustNote{Agent: "claude/main", Level: 2, Score: 0.5, Scope: "agent", Mode: "observe", Action: "none"}}}
}

func BenchmarkDecisionCanonicalBody(b *testing.B) {
	d := benchDecision()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := d.canonicalBody(); !ok {
			b.Fatal("refused")
		}
	}
}
