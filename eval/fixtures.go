// Package eval measures docket's judgment: a labelled set of tool-call
// proposals is run through the real judge engine and store, and the
// OpenBrain evaluation plan's judge, recall and governance metrics are
// computed from what they decided. It also runs the plan's key
// experiment: the same stream judged with memory off and with memory on
// (lessons written back from earlier decisions and confirmed through the
// review queue), and reports the difference.
//
// The labels, their reasons and their sources live in testdata (see
// testdata/LABELS.md); they are embedded so that `docket eval` needs no
// checkout.
package eval

import (
	"bufio"
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/judge"
)

//go:embed testdata/proposals.jsonl testdata/incidents.jsonl testdata/runtimes.jsonl testdata/recall.json
var files embed.FS

// Outcome is a judge outcome (allow, revise, escalate, block).
type Outcome = judge.Outcome

// Outcomes the labels use, strictest last.
const (
	Allow    = judge.Allow
	Revise   = judge.Revise
	Escalate = judge.Escalate
	Block    = judge.Block
)

// Source says where a fixture came from and under which licence.
type Source struct {
	Kind    string `json:"kind"` // real | synthetic
	File    string `json:"file"`
	Repo    string `json:"repo,omitempty"`
	Path    string `json:"path,omitempty"`
	Commit  string `json:"commit,omitempty"`
	Licence string `json:"licence"`
}

// Fixture is one labelled proposal: a PreToolUse payload and the decision
// a careful judge should reach, with the reason written down.
type Fixture struct {
	ID       string          `json:"id"`
	Incident bool            `json:"incident,omitempty"`
	Source   Source          `json:"source"`
	Expected judge.Outcome   `json:"expected"`
	Reason   string          `json:"reason"`
	Payload  json.RawMessage `json:"payload"`
}

// StatePlaceholder in a payload stands for the evaluation's state root,
// so that fixtures can aim at docket's own keys, ledger and policies.
const StatePlaceholder = "${STATE}"

// maxFixtureLine bounds one fixture line.
const maxFixtureLine = 1 << 20

// ParseFixtures reads JSON lines of fixtures and checks each: a unique
// id, a known expected outcome, a non-empty reason, a source with a
// licence, and a PreToolUse payload object.
func ParseFixtures(r io.Reader) ([]Fixture, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), maxFixtureLine)
	var out []Fixture
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var f Fixture
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("line %d: fixture %q: %w", line, f.ID, err)
		}
		out = append(out, f)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read fixtures: %w", err)
	}
	return out, nil
}

func (f *Fixture) check() error {
	switch {
	case f.ID == "":
		return errors.New("no id")
	case !validOutcome(f.Expected):
		return fmt.Errorf("expected %q is not allow, block, revise or escalate", f.Expected)
	case len(strings.TrimSpace(f.Reason)) < 10:
		return errors.New("no written reason for the label")
	case f.Source.Kind != "real" && f.Source.Kind != "synthetic":
		return fmt.Errorf("source kind %q", f.Source.Kind)
	case f.Source.File == "" || f.Source.Licence == "":
		return errors.New("source file or licence missing")
	}
	// any runtime's payload, as the judge hook reads it (Gemini CLI's
	// BeforeTool is a PreToolUse)
	ev, err := hooks.Decode(f.Payload, "")
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if ev.Name != hooks.PreToolUse || ev.ToolName == "" || len(ev.ToolInput) == 0 {
		return errors.New("payload is not a PreToolUse call with a tool and its input")
	}
	return nil
}

func validOutcome(o judge.Outcome) bool {
	return o == Allow || o == Block || o == Revise || o == Escalate
}

// Fixtures returns the embedded labelled set: the real payloads first
// (in file order), then the incidents. Ids are unique across both.
func Fixtures() ([]Fixture, error) {
	var all []Fixture
	seen := map[string]bool{}
	for _, name := range []string{"testdata/proposals.jsonl", "testdata/incidents.jsonl", "testdata/runtimes.jsonl"} {
		b, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		fs, err := ParseFixtures(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", name, err)
		}
		for _, f := range fs {
			if seen[f.ID] {
				return nil, fmt.Errorf("parse %s: duplicate fixture id %q", name, f.ID)
			}
			seen[f.ID] = true
		}
		all = append(all, fs...)
	}
	return all, nil
}

// judged is the outcome of a decision as the label reads it: a call the
// judge revised, whose amended form it then allowed, was revised (the
// runtime runs the amendment).
func judged(d *judge.Decision) judge.Outcome {
	if d.Outcome == Allow && d.RawOutcome == Revise {
		return Revise
	}
	return d.Outcome
}

// rank orders outcomes by strictness: allow < revise < escalate < block.
func rank(o judge.Outcome) int { return o.Strictness() }
