// Package validatorstest holds the conformance test every
// validators.Ledger implementation must pass, as sumdb/storage's
// TestStorage does for storage backends.
package validatorstest

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/validators"
)

// TestLedger checks l as the runner uses it: appends return the entry
// with consecutive seqs per session, canonical body and args digest;
// ReadVerified returns a session's entries in order, none for an unknown
// session; OpenArtifact returns what was stored and fs.ErrNotExist for an
// absent name. l must be empty.
func TestLedger(t *testing.T, l validators.Ledger) {
	t.Helper()
	if es, err := l.ReadVerified("conf-none"); err != nil || len(es) != 0 {
		t.Fatalf("ReadVerified(unknown session) = %d entries, %v; want none, nil", len(es), err)
	}
	args := json.RawMessage(`{"b":1, "a":"x"}`)
	var appended []*ledger.Entry
	for i, kind := range []ledger.Kind{ledger.KindToolFailure, ledger.KindValidatorPass, ledger.KindValidatorFail} {
		e, err := l.Append("conf-s1", ledger.Record{
			Kind: kind, Runtime: "docket", Event: "validate", Tool: "go_test_pass", Args: args,
			Body:      map[string]any{"result": "pass", "claim": "done", "runs": i},
			Artifacts: []ledger.Artifact{{Name: "run1.stdout", Data: strings.NewReader("out " + string(kind))}},
		})
		if err != nil {
			t.Fatalf("Append #%d: %v", i, err)
		}
		if e.Seq != uint64(i) || e.Kind != kind || e.Session != "conf-s1" || e.Tool != "go_test_pass" {
			t.Fatalf("Append #%d returned %+v", i, e)
		}
		appended = append(appended, e)
	}
	if _, err := l.Append("conf-s2", ledger.Record{Kind: ledger.KindToolCall, Tool: "Bash"}); err != nil {
		t.Fatalf("Append to a second session: %v", err)
	}
	es, err := l.ReadVerified("conf-s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 {
		t.Fatalf("ReadVerified = %d entries, want 3", len(es))
	}
	wantDigest, _ := canonjson.Digest(args)
	for i, e := range es {
		if e.Seq != uint64(i) || e.Kind != appended[i].Kind {
			t.Errorf("entry %d = seq %d kind %s", i, e.Seq, e.Kind)
		}
		if e.Args != wantDigest {
			t.Errorf("entry %d args digest = %q, want %q", i, e.Args, wantDigest)
		}
		if want := `{"claim":"done","result":"pass","runs":` + string(rune('0'+i)) + `}`; string(e.Body) != want {
			t.Errorf("entry %d body = %s, want canonical %s", i, e.Body, want)
		}
		f, err := l.OpenArtifact(e, "run1.stdout")
		if err != nil {
			t.Fatalf("OpenArtifact(%d): %v", i, err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != "out "+string(e.Kind) {
			t.Errorf("artifact %d = %q", i, b)
		}
		if _, err := l.OpenArtifact(e, "input.json"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("OpenArtifact(absent) = %v, want fs.ErrNotExist", err)
		}
	}
	if es, _ := l.ReadVerified("conf-s2"); len(es) != 1 || es[0].Seq != 0 {
		t.Errorf("second session = %d entries", len(es))
	}
}
