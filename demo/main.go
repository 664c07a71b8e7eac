// Command demo is `make demo`: docket's story told with the real binaries.
//
// In a temporary state root ($DOCKET_HOME) and a temporary project (a tiny
// Go module with one passing test) it
//
//  1. runs `docket init` and `docket install --runtime claude --scope project`;
//  2. replays a real Claude Code session through the hooks that install
//     wrote, as Claude Code would run them (runtime.go);
//  3. shows the judge escalating a push to main, denying a read of
//     docket's HMAC key, and — after a human confirmed a lesson in the
//     review queue — allowing a routine push with that lesson recalled;
//  4. shows the stop gate blocking "All done — tests pass." without evidence;
//  5. runs the validators the gate named, and the same stop is allowed;
//  6. verifies the ledger, catches a tampered copy, and keeps a checkpoint.
//
// Usage: go run ./demo [-bin DIR] [-keep]   (from the repository root,
// after `make build`; demo/run.sh does both).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/docket/docket/internal/transcript"
)

// The real session replayed in step 2, and the project directory it ran
// in (rewritten to the demo's project).
const (
	realTranscript = "testdata/hooks/transcripts/claude-code-log__cbc0f75b-b36d-4efd-a7da-ac800ea30eb6.jsonl"
	realSession    = "cbc0f75b-b36d-4efd-a7da-ac800ea30eb6"
	realCwd        = "/Users/dain/workspace/claude-code-log"
)

// demoSession is the scripted session of steps 3 to 6.
const demoSession = "demo-session-1"

type options struct {
	bin  string    // directory holding docket, docket-judge, docket-ledger, docket-gate
	repo string    // repository root, for testdata
	keep bool      // keep the temporary directory
	out  io.Writer // where the story goes
}

// outcome is what the story showed; demo_test.go checks each field.
type outcome struct {
	ReplayCalls, ReplayJudged, ReplayRecorded int
	ReplayNotRun                              int // denied or escalated, so not run
	ReplayStopBlocked                         bool

	PushDecision, PushReason string // git push origin main
	KeyDecision, KeyReason   string // Read of keys/hmac.key
	Precedent                string // the memory the second push cited
	LessonConfirmed          bool
	SafeDecision             string // "" (no objection) or "allow"
	LessonRecalled           bool   // the safe call's recall returned the lesson

	EditRecorded     bool
	BlockReason      string   // the gate's reason for "All done — tests pass."
	Validated        []string // claims backed by a PASS
	StopAllowedAfter bool

	VerifyOK     bool
	TamperCaught bool
	TamperReport string
	Checkpoint   string
	CheckpointOK bool
}

func main() {
	flags := flag.NewFlagSet("demo", flag.ExitOnError)
	bin := flags.String("bin", "bin", "directory with the docket binaries (make build)")
	keep := flags.Bool("keep", false, "keep the temporary state root and project")
	flags.Parse(os.Args[1:])
	abs, err := filepath.Abs(*bin)
	if err == nil {
		_, err = run(context.Background(), options{bin: abs, repo: ".", keep: *keep, out: os.Stdout})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: error: %v\n", err)
		if !*keep {
			fmt.Fprintf(os.Stderr, "hint: ./demo/run.sh -keep keeps the state root and project for a look\n")
		}
		os.Exit(1)
	}
}

// demo holds the story's state.
type demo struct {
	options
	root, home, project string
	env                 []string
	settings            []handler
	sess                *runtime // the scripted session
	lastCode            int      // exit code of the last docket command
	o                   outcome
}

func run(ctx context.Context, opt options) (*outcome, error) {
	start := time.Now()
	d := &demo{options: opt}
	for _, b := range []string{"docket", "docket-judge", "docket-ledger", "docket-gate"} {
		if _, err := os.Stat(filepath.Join(d.bin, b)); err != nil {
			return nil, fmt.Errorf("%v\nhint: run `make build` first (or `make demo`)", err)
		}
	}
	root, err := os.MkdirTemp("", "docket-demo-")
	if err != nil {
		return nil, err
	}
	d.root, d.home, d.project = root, filepath.Join(root, "state"), filepath.Join(root, "project")
	if !d.keep {
		defer os.RemoveAll(root)
	}
	d.env = demoEnv(d.home)

	fmt.Fprintf(d.out, "docket demo — a coding agent's tool calls judged, recorded and gated\n\n")
	fmt.Fprintf(d.out, "  state root  %s   ($DOCKET_HOME, temporary)\n", d.home)
	fmt.Fprintf(d.out, "  project     %s   (a tiny Go module with one passing test)\n", d.project)
	for _, step := range []func(context.Context) error{d.setup, d.replay, d.judged, d.gate, d.validate, d.audit} {
		if err := step(ctx); err != nil {
			return &d.o, err
		}
	}
	fmt.Fprintf(d.out, "\nDone in %.1fs.", time.Since(start).Seconds())
	if d.keep {
		fmt.Fprintf(d.out, " Everything is kept in %s.", root)
	}
	fmt.Fprintln(d.out)
	return &d.o, nil
}

// demoEnv is the environment every command runs in: the caller's, with
// its own docket settings removed, the temporary state root, no network
// for Go, and a git identity for the project's first commit.
func demoEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "DOCKET_") || strings.HasPrefix(k, "GIT_") || k == "GOFLAGS" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DOCKET_HOME="+home, "GOFLAGS=", "GOTOOLCHAIN=local", "GOPROXY=off",
		"GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@example.invalid",
		"GIT_COMMITTER_NAME=demo", "GIT_COMMITTER_EMAIL=demo@example.invalid",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
}

// ── 1 ──────────────────────────────────────────────────────────────────

func (d *demo) setup(ctx context.Context) error {
	d.heading(1, "docket init, then docket install into the project")
	files := map[string]string{
		"go.mod":      "module example.com/add\n\ngo 1.22\n",
		"add.go":      "package add\n\nfunc Add(a, b int) int { return a + b }\n",
		"add_test.go": "package add\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif got := Add(2, 2); got != 4 {\n\t\tt.Fatalf(\"Add(2, 2) = %d, want 4\", got)\n\t}\n}\n",
	}
	if err := os.MkdirAll(d.project, 0o755); err != nil {
		return err
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(d.project, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"commit", "-q", "-m", "add: Add and its test"}} {
		if _, err := d.exec(ctx, "git", args...); err != nil {
			return err
		}
	}

	d.say("project: go.mod, add.go, add_test.go (TestAdd passes), committed on branch main")

	out, err := d.docket(ctx, 0, "init")
	if err != nil {
		return err
	}
	vkey := lineWith(out, "docket-checkpoint+")
	// Validators build with the state root's own cache; the demo's state
	// root is temporary, so it shares your build cache rather than
	// rebuild the standard library (a real state root builds it once).
	if gc, err := d.exec(ctx, "go", "env", "GOCACHE"); err == nil && filepath.IsAbs(strings.TrimSpace(gc)) {
		cache := filepath.Join(d.home, "cache")
		if err := os.MkdirAll(cache, 0o700); err == nil {
			_ = os.Symlink(strings.TrimSpace(gc), filepath.Join(cache, "go-build"))
		}
	}
	d.say("docket init: HMAC key and Ed25519 checkpoint key (mode 0400), default policies")
	d.say("  checkpoint verifier key, for auditors: %s", vkey)

	if _, err := d.docket(ctx, 0, "install", "--runtime", "claude", "--scope", "project", "--bin", d.bin); err != nil {
		return err
	}
	path := filepath.Join(d.project, ".claude", "settings.json")
	if d.settings, err = readSettings(path); err != nil {
		return err
	}
	d.say("docket install wrote .claude/settings.json; Claude Code will now run:")
	for _, event := range []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop"} {
		for _, h := range d.settings {
			if h.Event == event {
				m := ""
				if h.Matcher != "" {
					m = " " + h.Matcher
				}
				d.say("  %-22s → %-45s (timeout %v)", event+m, strings.TrimPrefix(h.Command, d.bin+string(filepath.Separator)), h.Timeout)
			}
		}
	}
	d.sess = &runtime{handlers: d.settings, env: d.env, cwd: d.project, session: demoSession,
		transcript: filepath.Join(d.root, "claude", "projects", "demo", demoSession+".jsonl")}
	return os.MkdirAll(filepath.Dir(d.sess.transcript), 0o755)
}

// ── 2 ──────────────────────────────────────────────────────────────────

func (d *demo) replay(ctx context.Context) error {
	d.heading(2, "A real Claude Code session, replayed through that wiring")
	data, err := os.ReadFile(filepath.Join(d.repo, realTranscript))
	if err != nil {
		return err
	}
	// The session ran in realCwd; point every path at the demo's project.
	data = bytes.ReplaceAll(data, []byte(realCwd), []byte(d.project))
	transcriptPath := filepath.Join(d.root, "claude", "projects", "replay", realSession+".jsonl")
	if err := os.MkdirAll(filepath.Dir(transcriptPath), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(transcriptPath, data, 0o644); err != nil {
		return err
	}
	steps, err := transcript.Steps(data)
	if err != nil {
		return err
	}
	d.say("%s", filepath.Base(realTranscript))
	d.say("  from %s", d.source(realTranscript))
	d.say("Each tool call goes through the configured commands as Claude Code runs them: PreToolUse")
	d.say("→ docket-judge, then PostToolUse/PostToolUseFailure → docket-ledger; at the end Stop → docket-gate.")
	d.say("(Paths under %s now point into the project.)", realCwd)

	rt := &runtime{handlers: d.settings, env: d.env, cwd: d.project, session: realSession, transcript: transcriptPath}
	answers := map[string]int{}
	stopped := map[string]bool{} // calls the judge denied or escalated: Claude Code would not run them here
	var tools []string
	var last, reason string
	for _, s := range steps {
		switch s.Kind {
		case transcript.Use:
			decision, _, err := rt.preToolUse(ctx, s.ID, s.Tool, s.Input)
			if err != nil {
				return err
			}
			d.o.ReplayCalls++
			answers[orNoObjection(decision)]++
			stopped[s.ID] = decision == "deny" || decision == "ask"
			tools = append(tools, s.Tool)
		case transcript.Result:
			if stopped[s.ID] {
				d.o.ReplayNotRun++
				continue
			}
			if err := rt.postToolUse(ctx, s.ID, s.Tool, s.Input, s.Response, s.Error); err != nil {
				return err
			}
		case transcript.Stop:
			last = s.Text
			if reason, err = rt.stop(ctx, s.Text); err != nil {
				return err
			}
		}
	}

	kinds, err := d.ledgerKinds(realSession)
	if err != nil {
		return err
	}
	d.o.ReplayJudged = kinds["judge_decision"]
	d.o.ReplayRecorded = kinds["tool_call"] + kinds["tool_failure"]
	d.o.ReplayStopBlocked = reason != ""
	d.say("%d tool calls (%s)", d.o.ReplayCalls, strings.Join(tools, ", "))
	d.say("  %d judged by docket-judge (%s)", d.o.ReplayJudged, tally(answers))
	d.say("  %d recorded by docket-ledger in ledger/%s.jsonl", d.o.ReplayRecorded, realSession)
	if d.o.ReplayNotRun > 0 {
		d.say("  %d not run: the judge denied or escalated them", d.o.ReplayNotRun)
	}
	d.say("  (that ledger also holds the judge's %d decisions and the gate's; every entry hash-chained and HMAC'd)", d.o.ReplayJudged)
	d.say("its last message: %q", firstLine(last, 70))
	if reason != "" {
		d.say("  → docket-gate BLOCKED the stop: %s", strings.Join(claimLines(reason), "; "))
		d.say("    (the session ran tests, but no validator run by docket backs the claim)")
	} else {
		d.say("  → docket-gate allowed the stop")
	}
	return nil
}

// ── 3 ──────────────────────────────────────────────────────────────────

func (d *demo) judged(ctx context.Context) error {
	d.heading(3, "The judge: escalate, deny, and allow with a precedent")
	d.say("A new session (%s) in the same project; each call goes through PreToolUse → docket-judge.", demoSession)

	push := bashInput("git push origin main")
	dec, reason, err := d.sess.preToolUse(ctx, "toolu_demo_01", "Bash", push)
	if err != nil {
		return err
	}
	d.o.PushDecision, d.o.PushReason = dec, reason
	d.say("Bash `git push origin main` → %s", verdict(dec))
	d.wrap(reason)

	key := filepath.Join(d.home, "keys", "hmac.key")
	dec, reason, err = d.sess.preToolUse(ctx, "toolu_demo_02", "Read", mustJSON(map[string]any{"file_path": key}))
	if err != nil {
		return err
	}
	d.o.KeyDecision, d.o.KeyReason = dec, reason
	d.say("Read $DOCKET_HOME/keys/hmac.key → %s", verdict(dec))
	d.wrap(reason)

	// The judge wrote the first escalation back to the store; asked
	// again, it recalls it and cites it as precedent.
	dec, reason, err = d.sess.preToolUse(ctx, "toolu_demo_03", "Bash", push)
	if err != nil {
		return err
	}
	m := regexp.MustCompile(`precedent \[(mem_[0-9A-Za-z]+)\]: (.*)`).FindStringSubmatch(reason)
	if m == nil || !strings.Contains(m[2], "git push origin main") {
		return fmt.Errorf("the second escalation does not cite the first as precedent: %q", reason)
	}
	d.o.Precedent = m[1]
	d.say("Bash `git push origin main`, asked again → %s, citing the first escalation,", verdict(dec))
	d.say("which the judge wrote back to the store and its recall now returns:")
	d.wrap("precedent [" + m[1] + "]: " + m[2])

	// A human turns that precedent into a confirmed lesson.
	lesson := "Pushing to main needs a human; pushing a feature branch (git push origin feature/...) is routine"
	if _, err := d.docket(ctx, 0, "review", "edit", d.o.Precedent, "--summary", lesson, "--by", "alice", "--note", "state the rule, not the event"); err != nil {
		return err
	}
	// The precedent came from an escalation; the lesson says what it
	// requires: routine pushes are allowed (a confirmed allow never
	// relaxes the class policy that escalates a push to main).
	out, err := d.docket(ctx, 0, "review", "confirm", d.o.Precedent, "--as", "instruction", "--behavior", "allow", "--by", "alice", "--note", "team rule for this repo")
	if err != nil {
		return err
	}
	d.o.LessonConfirmed = strings.Contains(out, "user_confirmed")
	d.say("Reviewer alice: docket review edit %s --summary …; docket review confirm %s --as instruction --behavior allow", d.o.Precedent, d.o.Precedent)
	d.say("  %s", strings.TrimSpace(out))
	d.say("  lesson: %q", lesson)

	dec, reason, err = d.sess.preToolUse(ctx, "toolu_demo_04", "Bash", bashInput("git push origin feature/add-doc"))
	if err != nil {
		return err
	}
	d.o.SafeDecision = dec
	d.say("Bash `git push origin feature/add-doc` → %s", verdict(dec))
	if reason != "" {
		d.wrap(reason)
	}
	used, err := d.recalledBy(ctx, d.o.Precedent, "toolu_demo_04")
	if err != nil {
		return err
	}
	d.o.LessonRecalled = used != ""
	if used != "" {
		d.say("  the judge's recall returned the confirmed lesson [%s] (%s; see docket inspect %s)", d.o.Precedent, used, d.o.Precedent)
	} else {
		d.say("  the judge's recall did not return the lesson")
	}
	if jd, err := d.judgeDecision(demoSession, "toolu_demo_04"); err == nil {
		d.wrap(fmt.Sprintf("the judge_decision it recorded: outcome %s, class %s, recall %q, reason %q", jd.Outcome, jd.RiskClass, jd.Recall, jd.Reason))
	}
	return nil
}

// judgeDecision is the body of a judge_decision ledger entry.
type judgeDecision struct {
	Outcome   string `json:"outcome"`
	RiskClass string `json:"risk_class"`
	Recall    string `json:"recall"`
	Reason    string `json:"reason"`
}

// judgeDecision returns what the judge recorded for one tool call.
func (d *demo) judgeDecision(session, toolUseID string) (judgeDecision, error) {
	data, err := os.ReadFile(filepath.Join(d.home, "ledger", session+".jsonl"))
	if err != nil {
		return judgeDecision{}, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		var e struct {
			Kind      string        `json:"kind"`
			ToolUseID string        `json:"tool_use_id"`
			Body      judgeDecision `json:"body"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind == "judge_decision" && e.ToolUseID == toolUseID {
			return e.Body, nil
		}
	}
	return judgeDecision{}, fmt.Errorf("no judge_decision for %s in session %s", toolUseID, session)
}

// recalledBy asks `docket inspect` whether the recall for action returned
// memory id, and how.
func (d *demo) recalledBy(ctx context.Context, id, action string) (string, error) {
	out, err := d.docket(ctx, 0, "inspect", id, "--json")
	if err != nil {
		return "", err
	}
	var in struct {
		Recalls []struct {
			ActionID   string `json:"action_id"`
			Rank       int    `json:"rank"`
			ReturnedAs string `json:"returned_as"`
			UsedAs     string `json:"used_as"`
		} `json:"recalls"`
	}
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		return "", fmt.Errorf("docket inspect --json: %w", err)
	}
	for _, r := range in.Recalls {
		if r.ActionID == action {
			s := fmt.Sprintf("rank %d, as %s", r.Rank, strings.ReplaceAll(r.ReturnedAs, "_", " "))
			if r.UsedAs != "" {
				s += ", used as " + r.UsedAs
			}
			return s, nil
		}
	}
	return "", nil
}

// ── 4 ──────────────────────────────────────────────────────────────────

func (d *demo) gate(ctx context.Context) error {
	d.heading(4, "Evidence: a claim the ledger cannot back is blocked")
	const old, new = "func Add(a, b int) int", "// Add returns the sum of a and b.\nfunc Add(a, b int) int"
	path := filepath.Join(d.project, "add.go")
	edit := mustJSON(map[string]any{"file_path": path, "old_string": old, "new_string": new})
	dec, _, err := d.sess.preToolUse(ctx, "toolu_demo_05", "Edit", edit)
	if err != nil {
		return err
	}
	if dec == "deny" || dec == "ask" {
		return fmt.Errorf("the judge answered %s to a plain edit of add.go", dec)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, bytes.Replace(src, []byte(old), []byte(new), 1), 0o644); err != nil {
		return err
	}
	resp := mustJSON(map[string]any{"filePath": path, "oldString": old, "newString": new, "replaceAll": false, "userModified": false})
	if err := d.sess.postToolUse(ctx, "toolu_demo_05", "Edit", edit, resp, ""); err != nil {
		return err
	}
	kinds, err := d.ledgerKinds(demoSession)
	if err != nil {
		return err
	}
	d.o.EditRecorded = kinds["tool_call"] == 1
	d.say("Edit add.go (adds a doc comment) → %s; the edit is made and docket-ledger records it", verdict(dec))

	const final = "All done — tests pass."
	reason, err := d.sess.stop(ctx, final)
	if err != nil {
		return err
	}
	d.o.BlockReason = reason
	if reason == "" {
		d.say("Stop %q → allowed (unexpected)", final)
		return nil
	}
	d.say("Stop %q → docket-gate BLOCKED it; the reason it gives the agent:", final)
	for _, l := range strings.Split(strings.TrimSpace(reason), "\n") {
		if len(l) <= 100 || strings.HasPrefix(strings.TrimSpace(l), "docket validate") {
			d.say("  │ %s", l)
			continue
		}
		for _, w := range wrapText(l, 96) {
			d.say("  │ %s", w)
		}
	}
	return nil
}

// ── 5 ──────────────────────────────────────────────────────────────────

func (d *demo) validate(ctx context.Context) error {
	d.heading(5, "docket validate runs the validator itself and signs the result")
	cmds := validateCommands(d.o.BlockReason, "go_test_pass")
	if len(cmds) == 0 {
		return errors.New("the block reason names no go_test_pass command")
	}
	for _, argv := range cmds {
		d.say("$ %s", strings.Join(quoteArgs(argv), " "))
		out, err := d.docket(ctx, -1, argv[1:]...)
		if err != nil {
			return err
		}
		d.say("  %s", strings.TrimSpace(out))
		if strings.HasPrefix(out, "PASS ") {
			d.o.Validated = append(d.o.Validated, flagValue(argv, "--claim"))
		}
	}
	const final = "All done — tests pass."
	reason, err := d.sess.stop(ctx, final)
	if err != nil {
		return err
	}
	d.o.StopAllowedAfter = reason == ""
	if reason == "" {
		d.say("Stop %q again → docket-gate ALLOWED it: every claim has a fresh signed validator_pass", final)
	} else {
		d.say("Stop %q again → still blocked:\n%s", final, reason)
	}
	return nil
}

// ── 6 ──────────────────────────────────────────────────────────────────

func (d *demo) audit(ctx context.Context) error {
	d.heading(6, "The auditor: verify, catch tampering, keep a checkpoint")
	out, err := d.docket(ctx, -1, "verify", "--all")
	if err != nil {
		return err
	}
	d.o.VerifyOK = d.lastCode == 0
	d.say("$ docket verify --all   (exit %d)", d.lastCode)
	d.indent(out)

	// Copy the state root, as an auditor would, and hide the edit.
	cp := filepath.Join(d.root, "tampered-copy")
	if err := copyTree(d.home, cp); err != nil {
		return err
	}
	seq, err := tamper(filepath.Join(cp, "ledger", demoSession+".jsonl"))
	if err != nil {
		return err
	}
	out, err = d.docket(ctx, -1, "verify", "--dir", cp, "--all")
	if err != nil {
		return err
	}
	d.o.TamperCaught = d.lastCode == 1 && strings.Contains(out, "seq "+strconv.Itoa(seq))
	d.o.TamperReport = lineWith(out, "FAIL")
	d.say("A copy of the state root with entry seq %d edited (\"tool\":\"Edit\" → \"Read\", hiding the edit):", seq)
	d.say("$ docket verify --dir tampered-copy --all   (exit %d)", d.lastCode)
	d.indent(out)

	cpt, err := d.docket(ctx, 0, "checkpoint", "--session", demoSession)
	if err != nil {
		return err
	}
	d.o.Checkpoint = cpt
	file := filepath.Join(d.root, "auditor", "checkpoint.txt")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file, []byte(cpt), 0o644); err != nil {
		return err
	}
	d.say("$ docket checkpoint --session %s > checkpoint.txt   (signed note; the auditor keeps it)", demoSession)
	d.indent(cpt)
	out, err = d.docket(ctx, -1, "verify", "--session", demoSession, "--checkpoint", file)
	if err != nil {
		return err
	}
	d.o.CheckpointOK = d.lastCode == 0
	d.say("$ docket verify --session %s --checkpoint checkpoint.txt   (exit %d)", demoSession, d.lastCode)
	d.indent(out)
	return nil
}

// tamper edits the first recorded Edit call in a ledger file to claim it
// was a Read, and returns the entry's seq.
func tamper(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	lines := strings.SplitAfter(string(data), "\n")
	for i, l := range lines {
		if !strings.Contains(l, `"kind":"tool_call"`) || !strings.Contains(l, `"tool":"Edit"`) {
			continue
		}
		var e struct{ Seq int }
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			return 0, err
		}
		lines[i] = strings.Replace(l, `"tool":"Edit"`, `"tool":"Read"`, 1)
		if err := os.Chmod(path, 0o644); err != nil {
			return 0, err
		}
		return e.Seq, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644)
	}
	return 0, fmt.Errorf("%s: no recorded Edit call to tamper with", path)
}

// ── helpers ────────────────────────────────────────────────────────────

func (d *demo) heading(n int, title string) { fmt.Fprintf(d.out, "\n%d. %s\n", n, title) }

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, "   "+format+"\n", args...)
}

// wrap prints text indented and wrapped at 96 columns.
func (d *demo) wrap(text string) {
	for _, l := range wrapText(text, 96) {
		d.say("  %s", l)
	}
}

// wrapText breaks text into lines of at most width runes at spaces.
func wrapText(text string, width int) []string {
	var lines []string
	var cur []string
	n := 0
	for _, w := range strings.Fields(text) {
		if n > 0 && n+1+len([]rune(w)) > width {
			lines = append(lines, strings.Join(cur, " "))
			cur, n = nil, 0
		}
		if n > 0 {
			n++
		}
		cur, n = append(cur, w), n+len([]rune(w))
	}
	if len(cur) > 0 {
		lines = append(lines, strings.Join(cur, " "))
	}
	return lines
}

func (d *demo) indent(text string) {
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		d.say("  %s", l)
	}
}

// docket runs bin/docket in the project and returns its stdout. want is
// the exit code required (-1: any; d.lastCode holds it).
func (d *demo) docket(ctx context.Context, want int, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(d.bin, "docket"), args...)
	cmd.Dir, cmd.Env = d.project, d.env
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	d.lastCode = 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		d.lastCode = ee.ExitCode()
	case err != nil:
		return "", err
	}
	if want >= 0 && d.lastCode != want {
		return so.String(), fmt.Errorf("docket %s: exit %d, want %d\n%s%s", strings.Join(args, " "), d.lastCode, want, so.String(), se.String())
	}
	return so.String(), nil
}

// exec runs a helper program (git) in the project.
func (d *demo) exec(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = d.project, d.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ledgerKinds counts a session's ledger entries by kind.
func (d *demo) ledgerKinds(session string) (map[string]int, error) {
	data, err := os.ReadFile(filepath.Join(d.home, "ledger", session+".jsonl"))
	if err != nil {
		return nil, err
	}
	kinds := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e struct{ Kind string }
		if json.Unmarshal([]byte(l), &e) == nil {
			kinds[e.Kind]++
		}
	}
	return kinds, nil
}

// source finds the row of a testdata file in the SOURCES.md beside it:
// the repository and licence it was copied from.
func (d *demo) source(file string) string {
	data, err := os.ReadFile(filepath.Join(d.repo, filepath.Dir(filepath.Dir(file)), "SOURCES.md"))
	if err != nil {
		return "(SOURCES.md missing)"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if !strings.Contains(l, filepath.Base(file)) {
			continue
		}
		cols := strings.Split(l, "|")
		if len(cols) < 6 {
			break
		}
		repo, _, _ := strings.Cut(strings.TrimSpace(cols[2]), " (")
		commit := strings.TrimSpace(cols[4])
		if len(commit) > 7 {
			commit = commit[:7]
		}
		return fmt.Sprintf("github.com/%s @%s, %s licence (testdata/hooks/SOURCES.md)", repo, commit, strings.TrimSpace(cols[5]))
	}
	return "(not listed in SOURCES.md)"
}

// validateCommands returns the `docket validate` command lines in a gate
// block reason that use validator, as argv.
func validateCommands(reason, validator string) [][]string {
	var out [][]string
	for _, l := range strings.Split(reason, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "docket validate ") {
			continue
		}
		argv := splitWords(l)
		if flagValue(argv, "--validator") == validator {
			out = append(out, argv)
		}
	}
	return out
}

// claimLines returns the "claim X: "…"" lines of a gate block reason.
func claimLines(reason string) []string {
	var out []string
	for _, l := range strings.Split(reason, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "- claim ") {
			out = append(out, strings.TrimPrefix(l, "- "))
		}
	}
	return out
}

// splitWords splits a command line the way sh would for plain words and
// single- or double-quoted strings (no escapes or expansions).
func splitWords(s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// quoteArgs quotes the words that need it, for printing.
func quoteArgs(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = a
		if strings.ContainsAny(a, " {}\"'$") {
			out[i] = "'" + a + "'"
		}
	}
	return out
}

func flagValue(argv []string, name string) string {
	for i, a := range argv {
		if a == name && i+1 < len(argv) {
			return argv[i+1]
		}
	}
	return ""
}

func verdict(decision string) string {
	switch decision {
	case "ask":
		return "ESCALATED (ask: a human decides)"
	case "deny":
		return "DENIED"
	case "allow":
		return "ALLOWED (auto-approved)"
	}
	return "ALLOWED (no objection)"
}

func orNoObjection(decision string) string {
	if decision == "" {
		return "no objection"
	}
	return decision
}

func tally(m map[string]int) string {
	var parts []string
	for _, k := range []string{"no objection", "allow", "ask", "deny"} {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
	}
	return strings.Join(parts, ", ")
}

func bashInput(command string) json.RawMessage {
	return mustJSON(map[string]any{"command": command, "description": "demo"})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func lineWith(text, substr string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, substr) {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// copyTree copies a directory tree, keeping file modes.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		info, err := e.Info()
		if err != nil {
			return err
		}
		if e.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, info.Mode().Perm())
	})
}
