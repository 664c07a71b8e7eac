package policies

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func src(data string) Source { return Source{Name: JudgesFile, Origin: "test", Data: []byte(data)} }

func TestDefaultJudges(t *testing.T) {
	b, err := Default(JudgesFile)
	if err != nil {
		t.Fatal(err)
	}
	j, err := ResolveJudges(Source{Name: JudgesFile, Origin: "embedded:judges.md", Data: b})
	if err != nil {
		t.Fatal(err)
	}
	if j.Mode != ModeEnforce || !j.Classes[HighRisk].Human || j.Classes[ReadOnly].LLM || !j.Classes[ExternalSideEffect].LLM {
		t.Errorf("class defaults: %+v", j.Classes)
	}
	for _, k := range FailureKinds {
		if j.FailurePolicy[k] != OutcomeBlock {
			t.Errorf("failure %s = %s, want block", k, j.FailurePolicy[k])
		}
	}
	if j.EscalationTimeout != 120*time.Second || j.Model.Provider != "none" || !strings.Contains(j.Prose, "project floor") {
		t.Errorf("defaults: %v %q", j.EscalationTimeout, j.Model.Provider)
	}
}

func TestParseJudgesErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"no front matter", "# hello\n", "front matter"},
		{"unclosed", "---\nschema: docket.judges.v1\n", "not closed"},
		{"bad yaml", "---\nschema: [\n---\n", "malformed yaml"},
		{"unknown field", "---\nschema: docket.judges.v1\nfoo: 1\n---\n", "malformed yaml"},
		{"wrong schema", "---\nschema: v0\n---\n", "schema"},
		{"bad class", "---\nschema: docket.judges.v1\nclasses: {nope: {llm: true}}\n---\n", "unknown class"},
		{"bad outcome", "---\nschema: docket.judges.v1\nfailure_policy: {unavailable: revise}\n---\n", "want allow"},
		{"bad failure", "---\nschema: docket.judges.v1\nfailure_policy: {oops: block}\n---\n", "unknown failure"},
		{"bad chain", "---\nschema: docket.judges.v1\nchain: [llm, policy]\n---\n", "must come first"},
		{"bad timeout", "---\nschema: docket.judges.v1\nescalation: {timeout: soon}\n---\n", "positive duration"},
		{"bad utf8", "---\nschema: docket.judges.v1\n---\n\xff\n", "UTF-8"},
		{"nul", "---\nschema: docket.judges.v1\n---\n\x00\n", "NUL"},
		{"bad provider", "---\nschema: docket.judges.v1\nmodel: {provider: acme}\n---\n", "provider"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ResolveJudges(src(tc.data))
			var pe *Error
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want a policy error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestFloor(t *testing.T) {
	base := src("---\nschema: docket.judges.v1\nclasses: {reversible_write: {llm: true}}\naudit_required: true\n---\n")
	tests := []struct {
		name, front, field string
	}{
		{"tighten", "classes: {read_only: {human: true}}\nescalation: {timeout: 10s}", ""},
		{"relax class", "classes: {reversible_write: {llm: false}}", "classes.reversible_write.llm"},
		{"relax audit", "audit_required: false", "audit_required"},
		{"relax failure", "failure_policy: {budget_exhausted: escalate}", "failure_policy.budget_exhausted"},
		{"relax mode", "mode: read_audit", "mode"},
		{"model", "model: {provider: none}", "model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j, err := ResolveJudges(base, src("---\nschema: docket.judges.v1\n"+tc.front+"\n---\n"))
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !j.Classes[ReadOnly].Human || j.EscalationTimeout != 10*time.Second || len(j.Sources) != 2 {
					t.Errorf("tightening not applied: %+v", j.Classes[ReadOnly])
				}
				return
			}
			var fe *FloorError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Errorf("err = %v, want a floor error on %s", err, tc.field)
			}
		})
	}
	// the version covers every source
	j1, _ := ResolveJudges(base)
	j2, _ := ResolveJudges(base, src("---\nschema: docket.judges.v1\n---\nstricter prose\n"))
	if j1.Version() == j2.Version() {
		t.Error("delegate did not change the version")
	}
}

func FuzzJudgesFrontMatter(f *testing.F) {
	b, _ := Default(JudgesFile)
	f.Add(b)
	f.Add([]byte("---\nschema: docket.judges.v1\n---\n"))
	f.Add([]byte("---\r\nschema: docket.judges.v1\r\n---\r\nx"))
	f.Add([]byte("---\n---"))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := ResolveJudges(Source{Name: JudgesFile, Origin: "fuzz", Data: data})
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error is not a policy error: %v", err)
			}
			return
		}
		// a parsed file is complete: every class and failure kind is set
		if len(j.Classes) != 4 || len(j.FailurePolicy) != len(FailureKinds) {
			t.Fatalf("incomplete: %+v", j)
		}
		for _, o := range j.FailurePolicy {
			if o.Strictness() < 0 || o == OutcomeRevise {
				t.Fatalf("failure outcome %q", o)
			}
		}
		front, prose, err := SplitFrontMatter(data)
		if err != nil || len(front)+len(prose) > len(data) {
			t.Fatalf("split: %v", err)
		}
	})
}
