package install

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// The end-to-end test builds the real binaries once, in TestMain.
var (
	e2eBin      string
	e2eBuildErr = map[string]error{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(func() int {
		if !testing.Short() && !fuzzing() {
			dir, err := os.MkdirTemp("", "docket-e2e-bin-")
			if err != nil {
				fmt.Fprintln(os.Stderr, "e2e: ", err)
				return 1
			}
			defer os.RemoveAll(dir)
			e2eBin = dir
			buildBinaries(dir)
		}
		return m.Run()
	}())
}

// fuzzing reports whether this process runs or serves a fuzz target,
// which never needs the binaries.
func fuzzing() bool {
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}

// buildBinaries builds docket and the hook binaries into dir, statically
// (CGO_ENABLED=0), recording each one's build error.
func buildBinaries(dir string) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, b := range append([]string{"docket"}, Binaries...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(goTool, "build", "-trimpath", "-o", filepath.Join(dir, b), "./cmd/"+b)
			cmd.Dir = ".."
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			out, err := cmd.CombinedOutput()
			if err != nil {
				mu.Lock()
				e2eBuildErr[b] = fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// needBinaries stops the test when the binaries did not build.
func needBinaries(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: skipped in -short mode (it builds the binaries)")
	}
	for _, b := range append([]string{"docket"}, Binaries...) {
		if err := e2eBuildErr[b]; err != nil {
			t.Fatalf("end-to-end: build %s: %v", b, err)
		}
	}
}

// e2eSandbox is one fresh user: HOME, a project, a state root.
type e2eSandbox struct {
	home, project, state string
	env                  []string
}

func newE2ESandbox(t *testing.T) *e2eSandbox {
	root := t.TempDir()
	s := &e2eSandbox{home: filepath.Join(root, "home"), project: filepath.Join(root, "project"), state: filepath.Join(root, "state")}
	// go telemetry off: `docket init` asks go for its version, and the go
	// command writes telemetry under $HOME from a child that outlives it
	for _, d := range []string{s.project, filepath.Join(s.home, ".config", "go", "telemetry")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(s.home, ".config", "go", "telemetry", "mode"), []byte("off\n"), 0o644)
	s.env = []string{"HOME=" + s.home, "DOCKET_HOME=" + s.state, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + os.TempDir(), "LANG=C.UTF-8"}
	return s
}

// docket runs the built docket CLI in the sandbox's project.
func (s *e2eSandbox) docket(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(e2eBin, "docket"), args...)
	cmd.Dir, cmd.Env = s.project, s.env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run docket %v: %v", args, err)
	}
	return code, so.String(), se.String()
}

// e2eTranscripts are the real sessions replayed (testdata/hooks/SOURCES.md).
var e2eTranscripts = []struct {
	file    string
	session string
	// claim: the final message makes this claim with no evidence in the
	// ledger, so the gate has to block the stop and name it.
	claim string
}{
	{"claude-code-log__cbc0f75b-b36d-4efd-a7da-ac800ea30eb6.jsonl", "cbc0f75b-b36d-4efd-a7da-ac800ea30eb6", "claim tests_pass"},
	{"claude-code-log__b25638d7-b104-4f06-a797-70ac33d069ed.jsonl", "b25638d7-b104-4f06-a797-70ac33d069ed", "claim done"},
}

// TestEndToEndWiring proves the wiring, not only the binaries: `docket
// install` writes a settings file, and a runtime driver replays real
// sessions through exactly the command lines in it.
func TestEndToEndWiring(t *testing.T) {
	needBinaries(t)
	for _, rt := range hooks.Runtimes {
		for _, tr := range e2eTranscripts {
			t.Run(string(rt)+"/"+tr.session[:8], func(t *testing.T) {
				endToEnd(t, rt, tr.file, tr.session, tr.claim)
			})
		}
	}
}

func endToEnd(t *testing.T, rt hooks.Runtime, file, session, claim string) {
	s := newE2ESandbox(t)
	if code, out, errs := s.docket(t, "init"); code != 0 {
		t.Fatalf("docket init: exit %d\n%s%s", code, out, errs)
	}
	args := []string{"install", "--runtime", string(rt), "--scope", "project", "--bin", e2eBin}
	if rt == hooks.Codex {
		// Codex runs a project's hooks only in a trusted project
		args = append(args, "--trust-project")
	}
	if code, out, errs := s.docket(t, args...); code != 0 {
		t.Fatalf("docket install: exit %d\n%s%s", code, out, errs)
	}
	path, err := SettingsPath(rt, Project, s.home, s.project)
	if err != nil {
		t.Fatal(err)
	}
	settings, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the settings file docket install wrote: %v", err)
	}
	transcript, err := os.ReadFile(filepath.Join("..", "testdata", "hooks", "transcripts", file))
	if err != nil {
		t.Fatal(err)
	}
	tpath := filepath.Join(s.home, ".claude", "projects", "-project", session+".jsonl")
	os.MkdirAll(filepath.Dir(tpath), 0o755)
	os.WriteFile(tpath, transcript, 0o600)

	d := newRuntimeDriver(t, rt, settings, s.env, s.project, session, tpath)
	ex, stops := d.replay(t, transcript)

	// Every configured command ran, answered in time, exited 0, and said
	// nothing but its runtime's JSON on stdout.
	byBin := map[string]int{}
	failureCalls := 0
	for _, c := range d.calls {
		byBin[DocketBinary(c.Command)]++
		if c.Event == hooks.PostToolUseFailure {
			failureCalls++
		}
		if c.Code != 0 || c.TimedOut {
			t.Errorf("hook failed: %v", c)
		}
		checkAnswer(t, rt, c)
	}
	wantFailureCalls := 0
	if rt == hooks.Claude {
		wantFailureCalls = ex.Failures
	}
	if byBin[JudgeBin] != ex.Judged || byBin[LedgerBin] != ex.Recorded || failureCalls != wantFailureCalls ||
		len(stops) != 1 || DocketBinary(stops[0].Command) != GateBin || byBin[GateBin] != 1 {
		t.Errorf("hook calls %v (%d failure events, %d stop handlers); want %d judge, %d ledger (%d failure events), 1 gate",
			byBin, failureCalls, len(stops), ex.Judged, ex.Recorded, wantFailureCalls)
	}

	// Every call was judged and recorded.
	h, _ := home.At(s.state)
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := l.ReadVerified(session)
	if err != nil {
		t.Fatalf("ledger of %s does not verify: %v", session, err)
	}
	kinds := map[ledger.Kind]int{}
	judged := map[string]bool{}
	for _, e := range entries {
		kinds[e.Kind]++
		if e.Kind == ledger.KindJudgeDecision {
			judged[e.ToolUseID] = true
		}
	}
	if got := kinds[ledger.KindToolCall] + kinds[ledger.KindToolFailure]; got != ex.Recorded {
		t.Errorf("ledger holds %d tool_call + tool_failure entries, want one per recorded tool result: %d", got, ex.Recorded)
	}
	if (rt == hooks.Claude || rt == hooks.Gemini) && kinds[ledger.KindToolFailure] != ex.Failures {
		t.Errorf("ledger holds %d tool_failure entries, want %d", kinds[ledger.KindToolFailure], ex.Failures)
	}
	if kinds[ledger.KindJudgeDecision] != ex.Judged {
		t.Errorf("ledger holds %d judge_decision entries, want one per judged call: %d", kinds[ledger.KindJudgeDecision], ex.Judged)
	}
	if (rt == hooks.Claude || rt == hooks.Codex) && len(judged) != ex.Judged {
		t.Errorf("judge_decision entries name %d distinct tool_use ids, want %d", len(judged), ex.Judged)
	}

	// The final claim was gated.
	gate := stops[0]
	reason := blockReason(t, rt, gate.Stdout)
	blocked := reason != ""
	switch {
	case !blocked:
		t.Errorf("the gate let an unsupported claim through: %q\n%v", ex.FinalMessage[:min(len(ex.FinalMessage), 120)], gate)
	case rt == hooks.Cursor:
		// Cursor's stop payload carries no final message: the gate
		// cannot see the claim and fails closed.
	case !strings.Contains(reason, claim):
		t.Errorf("the gate's reason does not name %q: %s", claim, reason)
	}
	if kinds[ledger.KindGateDecision] < 1 {
		t.Errorf("no gate_decision entry in the ledger: the stop was not recorded (kinds %v)", kinds)
	}

	// An auditor's verification passes, and so does the doctor.
	if code, out, errs := s.docket(t, "verify", "--all"); code != 0 {
		t.Errorf("docket verify --all: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := s.docket(t, "doctor"); code != 0 || !strings.Contains(out, "1 ledger verified") {
		t.Errorf("docket doctor: exit %d\n%s%s", code, out, errs)
	} else if os.Getenv("DOCKET_E2E_VERBOSE") != "" {
		t.Log(out)
	}
	if os.Getenv("DOCKET_E2E_VERBOSE") != "" {
		for _, c := range d.calls {
			t.Log(c)
		}
	}
	t.Logf("%s %s: %d calls judged (%d judge_decision), %d results recorded (%d tool_call, %d tool_failure), gate blocked=%v, %d entries verify",
		rt, session[:8], ex.Judged, kinds[ledger.KindJudgeDecision], ex.Recorded, kinds[ledger.KindToolCall], kinds[ledger.KindToolFailure], blocked, len(entries))
}

// blockReason returns the reason of a gate's block in rt's answer shape,
// or "" when the gate allowed the stop.
func blockReason(t *testing.T, rt hooks.Runtime, stdout string) string {
	t.Helper()
	out := strings.TrimSpace(stdout)
	if out == "" {
		return ""
	}
	var a struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
		Followup string `json:"followup_message"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Errorf("gate printed non-JSON: %q", out)
		return ""
	}
	want := hooks.Block
	switch rt {
	case hooks.Gemini:
		want = hooks.Deny
	case hooks.Cursor:
		if strings.TrimSpace(a.Followup) == "" {
			t.Errorf("cursor gate answer without followup_message: %q", out)
		}
		return a.Followup
	}
	if a.Decision != want || strings.TrimSpace(a.Reason) == "" {
		t.Errorf("gate answer %q, want decision %q with a reason", out, want)
	}
	return a.Reason
}

// checkAnswer checks that a hook printed nothing, or one JSON answer
// its runtime accepts.
func checkAnswer(t *testing.T, rt hooks.Runtime, c hookCall) {
	t.Helper()
	out := strings.TrimSpace(c.Stdout)
	if out == "" {
		return
	}
	var a struct {
		Decision   string `json:"decision"`
		Reason     string `json:"reason"`
		Permission string `json:"permission"`
		AgentMsg   string `json:"agent_message"`
		Followup   string `json:"followup_message"`
		HSO        *struct {
			HookEventName string          `json:"hookEventName"`
			Decision      string          `json:"permissionDecision"`
			Reason        string          `json:"permissionDecisionReason"`
			UpdatedInput  json.RawMessage `json:"updatedInput"`
		} `json:"hookSpecificOutput"`
	}
	if !json.Valid([]byte(out)) || json.Unmarshal([]byte(out), &a) != nil {
		t.Errorf("%s printed non-JSON on stdout: %v", c.Command, c)
		return
	}
	judge := DocketBinary(c.Command) == JudgeBin
	switch {
	case judge && (rt == hooks.Claude || rt == hooks.Codex):
		if a.HSO == nil || a.HSO.HookEventName != hooks.PreToolUse {
			t.Errorf("judge answer without hookSpecificOutput.hookEventName: %v", c)
			return
		}
		switch a.HSO.Decision {
		case hooks.Deny:
			if strings.TrimSpace(a.HSO.Reason) == "" {
				t.Errorf("deny without a reason: %v", c)
			}
		case hooks.Ask:
			if rt == hooks.Codex {
				t.Errorf("Codex rejects permissionDecision ask: %v", c)
			}
		case hooks.Allow:
			if rt == hooks.Codex && a.HSO.UpdatedInput == nil {
				t.Errorf("Codex rejects a bare permissionDecision allow: %v", c)
			}
		default:
			t.Errorf("judge decision %q: %v", a.HSO.Decision, c)
		}
	case judge && rt == hooks.Gemini:
		if a.Decision != hooks.Allow && a.Decision != hooks.Deny || a.Decision == hooks.Deny && strings.TrimSpace(a.Reason) == "" {
			t.Errorf("Gemini judge answer: %v", c)
		}
	case judge && rt == hooks.Cursor:
		if a.Permission != hooks.Allow && a.Permission != hooks.Deny && a.Permission != hooks.Ask ||
			a.Permission == hooks.Deny && strings.TrimSpace(a.AgentMsg) == "" {
			t.Errorf("Cursor judge answer: %v", c)
		}
	case DocketBinary(c.Command) == LedgerBin:
		t.Errorf("the ledger answered on stdout: %v", c)
	}
}
