package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/worktree"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

// memLedger is an in-memory Evidence. Its zero value is an empty, intact
// ledger store.
type memLedger struct {
	entries   map[string][]*ledger.Entry
	artifacts map[*ledger.Entry]map[string][]byte
	readErr   error
	appendErr error
	// home and proj are the state root and the project passes are made
	// in; pass creates them on first use.
	home home.Home
	proj string
}

// Home and Keys make the gate use the fake's state root for working-tree
// manifests (no keys: no stat cache).
func (m *memLedger) Home() home.Home    { return m.home }
func (m *memLedger) Keys() *ledger.Keys { return nil }

// project returns the project directory (a git work tree holding a.go
// and a_test.go), creating it and the state root on first use.
func (m *memLedger) project(t testing.TB) string {
	t.Helper()
	if m.proj == "" {
		m.proj = t.TempDir()
		m.home, _ = home.At(t.TempDir())
		for name, data := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", "a.go": "package a\n", "a_test.go": "package a\n"} {
			p := filepath.Join(m.proj, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return m.proj
}

// edit rewrites a file of the project.
func (m *memLedger) edit(t testing.TB, name, data string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(m.project(t), name), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (m *memLedger) ReadVerified(session string) ([]*ledger.Entry, error) {
	if m.readErr != nil {
		return nil, m.readErr
	}
	return append([]*ledger.Entry(nil), m.entries[session]...), nil
}

func (m *memLedger) Append(session string, r ledger.Record) (*ledger.Entry, error) {
	if m.appendErr != nil {
		return nil, m.appendErr
	}
	if m.entries == nil {
		m.entries = map[string][]*ledger.Entry{}
		m.artifacts = map[*ledger.Entry]map[string][]byte{}
	}
	e := &ledger.Entry{V: 1, Seq: uint64(len(m.entries[session])), Session: session, Kind: r.Kind, Tool: r.Tool, Event: r.Event, AgentID: r.AgentID}
	if r.Body != nil {
		b, err := json.Marshal(r.Body)
		if err != nil {
			return nil, err
		}
		e.Body = b
	}
	arts := map[string][]byte{}
	for _, a := range r.Artifacts {
		b, err := io.ReadAll(a.Data)
		if err != nil {
			return nil, err
		}
		arts[a.Name] = b
	}
	m.artifacts[e] = arts
	m.entries[session] = append(m.entries[session], e)
	return e, nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func (m *memLedger) OpenArtifact(e *ledger.Entry, name string) (ledger.ReadSeekCloser, error) {
	b, ok := m.artifacts[e][name]
	if !ok {
		return nil, fmt.Errorf("entry %d has no artifact %q", e.Seq, name)
	}
	return nopCloser{bytes.NewReader(b)}, nil
}

func (m *memLedger) tool(t *testing.T, session, tool string, input any) {
	t.Helper()
	in, _ := json.Marshal(input)
	if _, err := m.Append(session, ledger.Record{Kind: ledger.KindToolCall, Tool: tool,
		Artifacts: []ledger.Artifact{{Name: "input.json", Data: bytes.NewReader(in)}}}); err != nil {
		t.Fatal(err)
	}
}

// pass records a validator entry made in the project, with the digest
// of its tree as it is now (as the runner records it).
func (m *memLedger) pass(t testing.TB, session, claim, validator, result string) {
	t.Helper()
	m.passIn(t, m.project(t), session, claim, validator, result)
}

// passIn records a validator entry made in dir.
func (m *memLedger) passIn(t testing.TB, dir, session, claim, validator, result string) {
	t.Helper()
	m.project(t)
	kind := ledger.KindValidatorPass
	if result != "pass" {
		kind = ledger.KindValidatorFail
	}
	if _, err := m.Append(session, ledger.Record{Kind: kind, Tool: validator, Body: map[string]any{
		"claim": claim, "validator": validator, "args": map[string]any{"package": "./..."}, "cwd": dir, "result": result,
		"worktree": worktree.LedgerStore(m).Record(dir),
	}}); err != nil {
		t.Fatal(err)
	}
}

func (m *memLedger) decisions(session string) []string {
	var out []string
	for _, e := range m.entries[session] {
		if e.Kind == ledger.KindGateDecision {
			var b struct {
				Decision string `json:"decision"`
			}
			json.Unmarshal(e.Body, &b)
			out = append(out, b.Decision)
		}
	}
	return out
}

func testGate(t testing.TB, l Evidence) *Gate {
	t.Helper()
	lex, err := policies.DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	data, err := policies.Default(policies.BindingFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := policies.ParseBinding(policies.Source{Name: policies.BindingFile, Origin: "embedded", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := home.At(t.TempDir())
	return &Gate{Home: h, Lexicon: lex, Binding: b, OpenLedger: func() (Evidence, error) { return l, nil }}
}

// stopEvent is a Stop in the fake's project (no cwd when m is nil).
func stopEvent(msg string, m ...*memLedger) *hooks.Event {
	ev := &hooks.Event{Runtime: hooks.Claude, Name: hooks.Stop, RawName: hooks.Stop, SessionID: "s1",
		LastAssistantMessage: msg, HasLastAssistantMessage: true}
	if len(m) > 0 && m[0] != nil {
		ev.Cwd = m[0].proj
	}
	return ev
}

func TestGateDecisions(t *testing.T) {
	const claimMsg = "All done, tests pass."
	tests := []struct {
		name      string
		msg       string
		setup     func(t *testing.T, m *memLedger)
		want      Outcome
		reason    []string // substrings of the block reason
		decisions []string
	}{
		{name: "no claims", msg: "I read the parser; it splits lines on newlines.", want: Allow},
		{name: "claims without evidence", msg: claimMsg, want: Block, decisions: []string{"block"},
			reason: []string{"claim done", "claim tests_pass", "no validator_pass for done",
				`docket validate --session s1 --claim done --validator go_test_pass --args '{"package":"./...","required_runs":1}'`,
				`docket validate --session s1 --claim tests_pass --validator pytest_pass`}},
		{name: "edit then passes", msg: claimMsg, want: Allow, decisions: []string{"allow"}, setup: func(t *testing.T, m *memLedger) {
			m.tool(t, "s1", "Edit", map[string]any{"file_path": "/w/a.go"})
			m.edit(t, "a.go", "package a // edited\n")
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
		}},
		{name: "edit after pass is stale", msg: claimMsg, want: Block, decisions: []string{"block"},
			reason: []string{"stale: the working tree ", "changed since validator_pass at seq 0 (go_test_pass): modified a.go (1 path(s) changed)",
				"the last file-modifying call after it was seq 2 (Write)", "re-validate: docket validate --session s1 --cwd "},
			setup: func(t *testing.T, m *memLedger) {
				m.pass(t, "s1", "done", "go_test_pass", "pass")
				m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
				m.tool(t, "s1", "Write", map[string]any{"file_path": "/w/a.go"})
				m.edit(t, "a.go", "package a // edited\n")
			}},
		{name: "read-only bash after pass stays fresh", msg: claimMsg, want: Allow, setup: func(t *testing.T, m *memLedger) {
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
			m.tool(t, "s1", "Bash", map[string]any{"command": "go test ./... 2>&1 | tail -5"})
			m.tool(t, "s1", "Bash", map[string]any{"command": "docket validate --claim done --validator go_test_pass --args '{\"package\":\"./...\"}'"})
			m.tool(t, "s1", "Read", map[string]any{"file_path": "/w/a.go"})
		}, decisions: []string{"allow"}},
		{name: "bash write after pass is stale", msg: claimMsg, want: Block, reason: []string{"modified a.go", "Bash: sed -i s/a/b/ a.go"}, setup: func(t *testing.T, m *memLedger) {
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
			m.tool(t, "s1", "Bash", map[string]any{"command": "sed -i s/a/b/ a.go"})
			m.edit(t, "a.go", "pbckbge b\n")
		}, decisions: []string{"block"}},
		// Content decides, not command names: a writer the lexicon misses
		// is caught, and a recognised writer that changed nothing is not.
		{name: "unrecognised writer is stale", msg: claimMsg, want: Block, reason: []string{"modified a.go", "added gen.go"}, setup: func(t *testing.T, m *memLedger) {
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
			m.tool(t, "s1", "Bash", map[string]any{"command": "python3 fix.py"})
			m.edit(t, "a.go", "package a // fixed by a script\n")
			m.edit(t, "gen.go", "package a\n")
		}, decisions: []string{"block"}},
		{name: "write that changed nothing stays fresh", msg: claimMsg, want: Allow, setup: func(t *testing.T, m *memLedger) {
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
			m.tool(t, "s1", "Bash", map[string]any{"command": "gofmt -w ."})
			m.edit(t, "a.go", "package a\n")
		}, decisions: []string{"allow"}},
		{name: "bash with unreadable input changes nothing", msg: claimMsg, want: Allow, setup: func(t *testing.T, m *memLedger) {
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
			if _, err := m.Append("s1", ledger.Record{Kind: ledger.KindToolCall, Tool: "Bash"}); err != nil {
				t.Fatal(err)
			}
		}, decisions: []string{"allow"}},
		{name: "deleted test file is stale", msg: claimMsg, want: Block, reason: []string{"removed a_test.go"}, setup: func(t *testing.T, m *memLedger) {
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
			os.Remove(filepath.Join(m.project(t), "a_test.go"))
		}, decisions: []string{"block"}},
		{name: "an older pass of the current tree backs the claim", msg: claimMsg, want: Allow, setup: func(t *testing.T, m *memLedger) {
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
			m.edit(t, "a.go", "package a // experiment\n")
			m.pass(t, "s1", "done", "go_test_pass", "pass")
			m.edit(t, "a.go", "package a\n")
		}, decisions: []string{"allow"}},
		{name: "pass from another directory", msg: claimMsg, want: Block, reason: []string{"outside this session's project", "evidence from another directory backs nothing"}, setup: func(t *testing.T, m *memLedger) {
			other := t.TempDir()
			os.WriteFile(filepath.Join(other, "go.mod"), []byte("module other\n"), 0o644)
			m.passIn(t, other, "s1", "done", "go_test_pass", "pass")
			m.passIn(t, other, "s1", "tests_pass", "go_test_pass", "pass")
		}, decisions: []string{"block"}},
		{name: "pass from the parent of the project", msg: claimMsg, want: Block, reason: []string{"outside this session's project"}, setup: func(t *testing.T, m *memLedger) {
			m.passIn(t, filepath.Dir(m.project(t)), "s1", "done", "go_test_pass", "pass")
			m.passIn(t, filepath.Dir(m.project(t)), "s1", "tests_pass", "go_test_pass", "pass")
		}, decisions: []string{"block"}},
		{name: "pass from a subdirectory of the project", msg: claimMsg, want: Allow, setup: func(t *testing.T, m *memLedger) {
			sub := filepath.Join(m.project(t), "sub")
			os.Mkdir(sub, 0o755)
			m.passIn(t, sub, "s1", "done", "go_test_pass", "pass")
			m.passIn(t, sub, "s1", "tests_pass", "go_test_pass", "pass")
		}, decisions: []string{"allow"}},
		{name: "pass without a tree digest", msg: claimMsg, want: Block, reason: []string{"records no working-tree digest"}, setup: func(t *testing.T, m *memLedger) {
			for _, c := range []string{"done", "tests_pass"} {
				m.Append("s1", ledger.Record{Kind: ledger.KindValidatorPass, Tool: "go_test_pass", Body: map[string]any{
					"claim": c, "validator": "go_test_pass", "args": map[string]any{"package": "./..."}, "cwd": m.project(t), "result": "pass"}})
			}
		}, decisions: []string{"block"}},
		{name: "forged digest", msg: claimMsg, want: Block, reason: []string{"stale: the working tree", "cannot be named"}, setup: func(t *testing.T, m *memLedger) {
			for _, c := range []string{"done", "tests_pass"} {
				m.Append("s1", ledger.Record{Kind: ledger.KindValidatorPass, Tool: "go_test_pass", Body: map[string]any{
					"claim": c, "validator": "go_test_pass", "args": map[string]any{"package": "./..."}, "cwd": m.project(t), "result": "pass",
					"worktree": map[string]any{"root": m.project(t), "digest": "sha256:" + strings.Repeat("0", 64)}}})
			}
		}, decisions: []string{"block"}},
		{name: "validator not allowed", msg: "CI is green.", want: Block, reason: []string{"comes from file_diff_present, which the claim binding policy does not allow for tests_pass"},
			setup: func(t *testing.T, m *memLedger) { m.pass(t, "s1", "tests_pass", "file_diff_present", "pass") }, decisions: []string{"block"}},
		{name: "failed validation is no evidence", msg: "CI is green.", want: Block, reason: []string{"no validator_pass for tests_pass"},
			setup: func(t *testing.T, m *memLedger) { m.pass(t, "s1", "tests_pass", "go_test_pass", "fail") }, decisions: []string{"block"}},
		{name: "pass for another claim", msg: "Fixed the race.", want: Block, reason: []string{"claim fixed"},
			setup: func(t *testing.T, m *memLedger) { m.pass(t, "s1", "done", "go_test_pass", "pass") }, decisions: []string{"block"}},
		{name: "pass in another session", msg: "Fixed the race.", want: Block,
			setup: func(t *testing.T, m *memLedger) { m.pass(t, "s2", "fixed", "go_test_pass", "pass") }, decisions: []string{"block"}},
		{name: "every claim is listed", msg: "Pushed to main. I'm stuck on the flaky test. Could you send me the staging token?", want: Block,
			reason: []string{"claim shipped", "claim blocked", "claim delegation", "--validator fetch_attempt_proof", "--validator ladder_exhaustion_proof", "--validator http_2xx"}, decisions: []string{"block"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &memLedger{}
			if tt.setup != nil {
				tt.setup(t, m)
			}
			g := testGate(t, m)
			r := g.Stop(stopEvent(tt.msg, m))
			if r.Outcome != tt.want {
				t.Fatalf("outcome %s, want %s; reason: %s", r.Outcome, tt.want, r.Answer.Reason)
			}
			if (r.Answer.Decision == hooks.Block) != (tt.want == Block || tt.want == Fail) {
				t.Errorf("answer decision %q for outcome %s", r.Answer.Decision, r.Outcome)
			}
			for _, s := range tt.reason {
				if !strings.Contains(r.Answer.Reason, s) {
					t.Errorf("reason lacks %q:\n%s", s, r.Answer.Reason)
				}
			}
			if got := strings.Join(m.decisions("s1"), ","); got != strings.Join(tt.decisions, ",") {
				t.Errorf("gate_decision entries %q, want %q", got, tt.decisions)
			}
		})
	}
}

func TestGateFailsClosed(t *testing.T) {
	rec := &memLedger{} // a fresh pass that would allow, if it could be recorded
	rec.pass(t, "s1", "done", "go_test_pass", "pass")
	rec.appendErr = errors.New("disk full")
	tests := []struct {
		name    string
		open    func() (Evidence, error)
		want    []string
		wantErr error
	}{
		{"no key", func() (Evidence, error) { return nil, fmt.Errorf("load keys: %w", ledger.ErrNoKey) }, []string{"docket init"}, ledger.ErrNoKey},
		{"broken chain", func() (Evidence, error) {
			return &memLedger{readErr: &ledger.VerifyError{Session: "s1", Seq: 4, Reason: "prev does not match the hash of seq 3"}}, nil
		}, []string{"fails verification", "seq 4", "docket verify --session s1"}, nil},
		{"unreadable", func() (Evidence, error) {
			return &memLedger{readErr: fmt.Errorf("open ledger: %w", os.ErrPermission)}, nil
		}, []string{"permission denied", "docket verify --session s1"}, os.ErrPermission},
		{"cannot record", func() (Evidence, error) { return rec, nil }, []string{"disk full"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := testGate(t, nil)
			g.OpenLedger = tt.open
			r := g.Stop(stopEvent("All done.", rec))
			if r.Outcome != Fail || r.Answer.Decision != hooks.Block || r.Err == nil {
				t.Fatalf("outcome %s decision %q err %v, want a fail-closed block", r.Outcome, r.Answer.Decision, r.Err)
			}
			for _, s := range tt.want {
				if !strings.Contains(r.Answer.Reason, s) {
					t.Errorf("reason lacks %q:\n%s", s, r.Answer.Reason)
				}
			}
			if tt.wantErr != nil && !errors.Is(r.Err, tt.wantErr) {
				t.Errorf("err %v is not %v", r.Err, tt.wantErr)
			}
			if r.Answer.SystemMessage == "" {
				t.Errorf("the user is not told")
			}
		})
	}
	// Without claims the ledger is not needed: no keys does not block.
	g := testGate(t, nil)
	g.OpenLedger = func() (Evidence, error) { return nil, ledger.ErrNoKey }
	if r := g.Stop(stopEvent("Here is how the parser works.")); r.Outcome != Allow {
		t.Fatalf("claim-free stop without keys: %s", r.Outcome)
	}
}

func TestGateBlockCap(t *testing.T) {
	m := &memLedger{}
	g := testGate(t, m)
	ev := stopEvent("Shipped it.")
	var got []Outcome
	for i := 0; i < 6; i++ {
		ev.StopHookActive = i > 0 // must not bypass anything
		r := g.Stop(ev)
		got = append(got, r.Outcome)
		if r.Outcome == Release {
			if r.Answer.Decision != "" || !strings.Contains(r.Answer.SystemMessage, "UNSUPPORTED") || !strings.Contains(r.Answer.SystemMessage, "shipped") {
				t.Errorf("release answer %+v", r.Answer)
			}
		}
	}
	want := []Outcome{Block, Block, Block, Release, Block, Block}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if d := strings.Join(m.decisions("s1"), ","); d != "block,block,block,release,block,block" {
		t.Fatalf("decisions %s", d)
	}
	// A supported or claim-free stop resets the count.
	g.Stop(stopEvent("Nothing to report."))
	if n := g.blocks(ev); n != 0 {
		t.Fatalf("count after allow = %d", n)
	}
	// Subagents count apart from the main session.
	sub := &hooks.Event{Name: hooks.SubagentStop, SessionID: "s1", AgentID: "a1", LastAssistantMessage: "Shipped it.", HasLastAssistantMessage: true}
	g.Stop(ev)
	g.Stop(sub)
	if g.blocks(ev) != 1 || g.blocks(sub) != 1 {
		t.Fatalf("counts main %d sub %d, want 1 and 1", g.blocks(ev), g.blocks(sub))
	}
}

func writeTranscript(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestGateTranscriptSource(t *testing.T) {
	text := func(id, side, s string) string {
		return `{"type":"assistant","isSidechain":` + side + `,"message":{"id":"` + id + `","content":[{"type":"text","text":"` + s + `"}]}}`
	}
	filler := `{"type":"user","message":{"content":[{"type":"tool_result","content":"` + strings.Repeat("x", 60<<10) + `"}]}}`
	tests := []struct {
		name    string
		ev      func(path string) *hooks.Event
		lines   []string
		want    Outcome
		anomaly string
	}{
		{"stop reads main chain", func(p string) *hooks.Event {
			return &hooks.Event{Name: hooks.Stop, SessionID: "s1", TranscriptPath: p}
		}, []string{text("m1", "false", "All done."), text("s1", "true", "Just notes.")}, Block, ""},
		{"stdin wins over transcript", func(p string) *hooks.Event {
			return &hooks.Event{Name: hooks.Stop, SessionID: "s1", TranscriptPath: p, LastAssistantMessage: "Notes only.", HasLastAssistantMessage: true}
		}, []string{text("m1", "false", "All done.")}, Allow, ""},
		{"empty stdin message falls back", func(p string) *hooks.Event {
			return &hooks.Event{Name: hooks.Stop, SessionID: "s1", TranscriptPath: p, HasLastAssistantMessage: true}
		}, []string{text("m1", "false", "All done.")}, Block, ""},
		{"subagent reads its own transcript", func(p string) *hooks.Event {
			return &hooks.Event{Name: hooks.SubagentStop, SessionID: "s1", AgentID: "a1", AgentTranscriptPath: p, TranscriptPath: "/nonexistent"}
		}, []string{text("a", "true", "Tests pass.")}, Block, ""},
		{"small transcript without text", func(p string) *hooks.Event {
			return &hooks.Event{Name: hooks.Stop, SessionID: "s1", TranscriptPath: p}
		}, []string{`{"type":"summary","summary":"x"}`}, Allow, ""},
		{"large transcript without text is an anomaly", func(p string) *hooks.Event {
			return &hooks.Event{Name: hooks.Stop, SessionID: "s1", TranscriptPath: p}
		}, []string{filler}, Block, "no assistant text found"},
		{"missing transcript is an anomaly", func(p string) *hooks.Event {
			return &hooks.Event{Name: hooks.Stop, SessionID: "s1", TranscriptPath: p + ".gone"}
		}, nil, Block, "does not exist"},
		{"no source at all is an anomaly", func(p string) *hooks.Event {
			return &hooks.Event{Name: hooks.Stop, SessionID: "s1"}
		}, nil, Block, "neither last_assistant_message nor a transcript path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &memLedger{}
			g := testGate(t, m)
			r := g.Stop(tt.ev(writeTranscript(t, tt.lines...)))
			if r.Outcome != tt.want {
				t.Fatalf("outcome %s, want %s (%s)", r.Outcome, tt.want, r.Answer.Reason)
			}
			if !strings.Contains(r.Anomaly, tt.anomaly) || (tt.anomaly == "") != (r.Anomaly == "") {
				t.Fatalf("anomaly %q, want %q", r.Anomaly, tt.anomaly)
			}
			if tt.anomaly != "" && !strings.Contains(r.Answer.Reason, "extraction anomaly") {
				t.Errorf("reason %q", r.Answer.Reason)
			}
		})
	}
}

// Every file the payload names is opened through Gate.Open (the sealed
// daemon's opener refuses one its caller could not read): a refusal is
// the gate's anomaly, never a read with the gate's own rights.
func TestGateOpensThroughOpen(t *testing.T) {
	p := writeTranscript(t, `{"type":"assistant","isSidechain":false,"message":{"id":"m1","content":[{"type":"text","text":"SECRET: all done."}]}}`)
	refused := errors.New("refused by the opener")
	tests := []struct {
		name    string
		ev      *hooks.Event
		want    Outcome
		anomaly string
	}{
		{"stop", &hooks.Event{Runtime: hooks.Claude, Name: hooks.Stop, SessionID: "s1", TranscriptPath: p}, Block, "refused by the opener"},
		{"subagent", &hooks.Event{Runtime: hooks.Claude, Name: hooks.SubagentStop, SessionID: "s1", AgentTranscriptPath: p, TranscriptPath: "/nonexistent"}, Block, "refused by the opener"},
		{"turn behind a stdin message", &hooks.Event{Runtime: hooks.Claude, Name: hooks.Stop, SessionID: "s1", TranscriptPath: p,
			LastAssistantMessage: "Notes only.", HasLastAssistantMessage: true}, Allow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := testGate(t, &memLedger{})
			var opened []string
			g.Open = func(path string) (*os.File, error) {
				opened = append(opened, path)
				return nil, refused
			}
			r := g.Stop(tt.ev)
			if len(opened) != 1 || opened[0] != p {
				t.Fatalf("opened %q, want [%s]", opened, p)
			}
			if r.Outcome != tt.want || !strings.Contains(r.Anomaly, tt.anomaly) || (tt.anomaly == "") != (r.Anomaly == "") {
				t.Fatalf("outcome %s anomaly %q, want %s %q", r.Outcome, r.Anomaly, tt.want, tt.anomaly)
			}
			if strings.Contains(r.Answer.Reason, "SECRET") {
				t.Fatalf("the transcript reached the answer: %s", r.Answer.Reason)
			}
		})
	}
}

func TestAnomalyReleasedAtCap(t *testing.T) {
	m := &memLedger{}
	g := testGate(t, m)
	ev := &hooks.Event{Name: hooks.Stop, SessionID: "s1", TranscriptPath: "/nonexistent/t.jsonl"}
	var got []Outcome
	for i := 0; i < 4; i++ {
		got = append(got, g.Stop(ev).Outcome)
	}
	if fmt.Sprint(got) != fmt.Sprint([]Outcome{Block, Block, Block, Release}) {
		t.Fatalf("outcomes %v", got)
	}
	if d := strings.Join(m.decisions("s1"), ","); d != "block,block,block,release" {
		t.Fatalf("decisions %s", d)
	}
}

func TestBlockReasonCapped(t *testing.T) {
	m := &memLedger{}
	g := testGate(t, m)
	msg := strings.Repeat("All done with step "+strings.Repeat("x", 300)+". ", 200)
	r := g.Stop(stopEvent(msg))
	if r.Outcome != Block || len(r.Answer.Reason) > MaxReason {
		t.Fatalf("outcome %s, reason %d bytes", r.Outcome, len(r.Answer.Reason))
	}
	out, _, err := hooks.EncodeClaude(r.Answer)
	if err != nil || !json.Valid(out) {
		t.Fatalf("encode: %v", err)
	}
}

func TestGateRejectsBadEvents(t *testing.T) {
	g := testGate(t, &memLedger{})
	for _, ev := range []*hooks.Event{
		{Name: hooks.PreToolUse, SessionID: "s1"},
		{Name: hooks.Stop, SessionID: "../etc"},
	} {
		if r := g.Stop(ev); r.Outcome != Fail || r.Answer.Decision != hooks.Block {
			t.Errorf("%+v: outcome %s", ev, r.Outcome)
		}
	}
}

func testHome(tb testing.TB) home.Home {
	h, _ := home.At(tb.TempDir())
	return h
}

func FuzzGateStop(f *testing.F) {
	f.Add("All done, tests pass.", true)
	f.Add("| a | ✅ |\n```\ndone\n```", false)
	f.Fuzz(func(t *testing.T, msg string, active bool) {
		m := &memLedger{}
		m.pass(t, "s1", "done", "go_test_pass", "pass")
		g := testGate(t, m)
		ev := stopEvent(msg)
		ev.StopHookActive = active
		r := g.Stop(ev)
		out, _, err := hooks.EncodeClaude(r.Answer)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) > 0 && !json.Valid(out) {
			t.Fatalf("invalid answer %q", out)
		}
		if (r.Outcome == Block) != (r.Answer.Decision == hooks.Block) {
			t.Fatalf("outcome %s with decision %q", r.Outcome, r.Answer.Decision)
		}
		if r.Outcome == Allow && len(ClaimTypesOf(r.Claims)) > 0 && !r.Decision.Allowed() {
			t.Fatal("allowed with unsupported claims")
		}
	})
}

func stopEventTranscript(path string) *hooks.Event {
	return &hooks.Event{Runtime: hooks.Claude, Name: hooks.Stop, RawName: hooks.Stop, SessionID: "s1", TranscriptPath: path}
}

// The counter is rewritten in place: a shorter count leaves no digit of
// a longer one behind, and a reset reads as zero.
func TestBlockCounterInPlace(t *testing.T) {
	g := testGate(t, &memLedger{})
	ev := stopEvent("Done.")
	for _, tc := range []struct {
		set  int // -1: reset
		want int
	}{{12, 12}, {3, 3}, {-1, 0}, {1, 1}, {-1, 0}, {-1, 0}, {100, 100}, {2, 2}} {
		if tc.set < 0 {
			g.resetBlocks(ev)
		} else {
			g.setBlocks(ev, tc.set)
		}
		if got := g.blocks(ev); got != tc.want {
			t.Fatalf("after %d: %d, want %d", tc.set, got, tc.want)
		}
	}
}
