package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the whole `make demo` story against freshly built
// binaries and checks each step's outcome.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs the whole story")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", bin+string(filepath.Separator),
		"github.com/docket/docket/cmd/docket", "github.com/docket/docket/cmd/docket-judge",
		"github.com/docket/docket/cmd/docket-ledger", "github.com/docket/docket/cmd/docket-gate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var story bytes.Buffer
	o, err := run(ctx, options{bin: bin, repo: "..", out: &story})
	defer func() {
		if t.Failed() {
			t.Logf("the story so far:\n%s", story.String())
		}
	}()
	if err != nil {
		t.Fatalf("demo: %v", err)
	}

	// 2. the real session: every call judged and recorded, its claim gated
	if o.ReplayCalls == 0 || o.ReplayJudged != o.ReplayCalls || o.ReplayRecorded != o.ReplayCalls-o.ReplayNotRun {
		t.Errorf("replay: %d calls, %d judged, %d recorded, %d not run; want every call judged and every call that ran recorded",
			o.ReplayCalls, o.ReplayJudged, o.ReplayRecorded, o.ReplayNotRun)
	}
	if !o.ReplayStopBlocked {
		t.Errorf("replay: the real session's unbacked \"All tests are now passing\" was not blocked")
	}

	// 3. judged calls
	if o.PushDecision != "ask" {
		t.Errorf("git push origin main: decision %q, want ask (escalated); reason %q", o.PushDecision, o.PushReason)
	}
	if o.KeyDecision != "deny" || !strings.Contains(o.KeyReason, "keys") {
		t.Errorf("read of keys/hmac.key: decision %q reason %q, want deny naming the keys", o.KeyDecision, o.KeyReason)
	}
	if !strings.HasPrefix(o.Precedent, "mem_") {
		t.Errorf("second push to main cites no precedent memory")
	}
	if !o.LessonConfirmed {
		t.Errorf("docket review confirm did not make the lesson user_confirmed")
	}
	if o.SafeDecision == "deny" || o.SafeDecision == "ask" {
		t.Errorf("push to a feature branch: decision %q, want allowed", o.SafeDecision)
	}
	if !o.LessonRecalled {
		t.Errorf("the allowed call's recall did not return the confirmed lesson %s", o.Precedent)
	}

	// 4. an unbacked claim is blocked, naming the commands that back it
	if !o.EditRecorded {
		t.Errorf("the Edit call was not recorded in the ledger")
	}
	for _, want := range []string{"claim done", "claim tests_pass", "docket validate --session " + demoSession + " --claim done --validator go_test_pass"} {
		if !strings.Contains(o.BlockReason, want) {
			t.Errorf("block reason lacks %q:\n%s", want, o.BlockReason)
		}
	}

	// 5. validators pass; the same stop is allowed
	if !slices.Contains(o.Validated, "done") || !slices.Contains(o.Validated, "tests_pass") {
		t.Errorf("validated claims %v, want done and tests_pass", o.Validated)
	}
	if !o.StopAllowedAfter {
		t.Errorf("the stop was still blocked after the validators passed")
	}

	// 6. the auditor
	if !o.VerifyOK {
		t.Errorf("docket verify --all failed on the untouched state root")
	}
	if !o.TamperCaught {
		t.Errorf("the tampered copy was not caught at the edited seq: %q", o.TamperReport)
	}
	if !strings.Contains(o.Checkpoint, "docket/ledger/"+demoSession) || !o.CheckpointOK {
		t.Errorf("checkpoint %q, verify against it ok=%v", o.Checkpoint, o.CheckpointOK)
	}
}

func TestSplitWords(t *testing.T) {
	got := splitWords(`docket validate --claim done --args '{"package":"./...","required_runs":1}'`)
	want := []string{"docket", "validate", "--claim", "done", "--args", `{"package":"./...","required_runs":1}`}
	if !slices.Equal(got, want) {
		t.Errorf("splitWords = %q, want %q", got, want)
	}
}
