package gate

import (
	"fmt"
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

// TestGateRealLedger runs the gate over the real ledger and a real
// project (with the state root inside it, as when DOCKET_HOME is a
// project directory): an edit, a block, validator passes, an allow, a
// stale block, and a replayed validator_pass line that verification
// catches.
func TestGateRealLedger(t *testing.T) {
	proj := t.TempDir()
	for name, data := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", "a.go": "package a\n"} {
		os.MkdirAll(filepath.Dir(filepath.Join(proj, name)), 0o755)
		if err := os.WriteFile(filepath.Join(proj, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := home.At(filepath.Join(proj, ".docket"))
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(h)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	edit := func() {
		t.Helper()
		n++
		if err := os.WriteFile(filepath.Join(proj, "a.go"), []byte(fmt.Sprintf("package a // %d\n", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append("s1", ledger.Record{Kind: ledger.KindToolCall, Runtime: "claude", Event: "PostToolUse", Tool: "Edit",
			Artifacts: []ledger.Artifact{{Name: "input.json", Data: strings.NewReader(`{"file_path":"/w/a.go","old_string":"a","new_string":"b"}`)}}}); err != nil {
			t.Fatal(err)
		}
	}
	pass := func(claim string) {
		t.Helper()
		if _, err := l.Append("s1", ledger.Record{Kind: ledger.KindValidatorPass, Runtime: "docket", Event: "validate", Tool: "go_test_pass",
			Body: map[string]any{"claim": claim, "validator": "go_test_pass", "args": map[string]any{"package": "./...", "required_runs": 2}, "cwd": proj, "result": "pass",
				"worktree": worktree.LedgerStore(l).Record(proj)}}); err != nil {
			t.Fatal(err)
		}
	}
	ev := &hooks.Event{Runtime: hooks.Claude, Name: hooks.Stop, SessionID: "s1", Cwd: proj, LastAssistantMessage: "All done, tests pass.", HasLastAssistantMessage: true}
	step := func(want Outcome, reason string) {
		t.Helper()
		r := g.Stop(ev)
		if r.Outcome != want || !strings.Contains(r.Answer.Reason, reason) {
			t.Fatalf("outcome %s, want %s; reason %q lacks %q", r.Outcome, want, r.Answer.Reason, reason)
		}
	}
	edit()
	step(Block, "no validator_pass for done")
	pass("done")
	pass("tests_pass")
	step(Allow, "")
	edit()
	step(Block, "modified a.go")
	pass("done")
	pass("tests_pass")
	step(Allow, "")

	// Replay the last validator_pass line at the end of the file.
	p := h.LedgerPath("s1")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	var replay string
	for _, ln := range lines {
		if strings.Contains(ln, `"kind":"validator_pass"`) {
			replay = ln
		}
	}
	edit() // makes the passes stale, so only a replayed pass could help
	if err := os.WriteFile(p, append(b, replay...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReadVerified("s1"); err == nil {
		t.Fatal("replayed line verified")
	}
	step(Fail, "docket verify --session s1")
}

// LastWrite over the real ledger reads each shell call's command through
// one open pack, checked: the newest write after the pass is found past
// calls that write nothing, and a call whose input.json changed in the
// pack counts as a write whose command cannot be read.
func TestLastWriteRealLedger(t *testing.T) {
	h, _ := home.At(t.TempDir())
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	lex, err := policies.LoadClaims(h)
	if err != nil {
		t.Fatal(err)
	}
	bash := func(cmd string) *ledger.Entry {
		t.Helper()
		in := fmt.Sprintf(`{"command":%q}`, cmd)
		e, err := l.Append("s1", ledger.Record{Kind: ledger.KindToolCall, Runtime: "claude", Event: "PostToolUse", Tool: "Bash",
			Body:      map[string]any{"tool_kind": "shell"},
			Artifacts: []ledger.Artifact{{Name: "input.json", Data: strings.NewReader(in)}}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	bash("sed -i s/a/b/ old.go")
	pass, err := l.Append("s1", ledger.Record{Kind: ledger.KindValidatorPass, Runtime: "docket", Body: map[string]any{"claim": "done", "result": "pass"}})
	if err != nil {
		t.Fatal(err)
	}
	write := bash("sed -i s/a/b/ a.go")
	bash("go vet ./pkg1")
	bash("go vet ./pkg2")
	for i := 0; i < 5; i++ {
		l.Append("s1", ledger.Record{Kind: ledger.KindGateDecision, Runtime: "claude", Event: "Stop", Body: map[string]any{"decision": "block"}})
	}
	read := func() []*ledger.Entry {
		t.Helper()
		es, err := l.ReadRelevant("s1", func([]*ledger.Entry) uint64 { return pass.Seq })
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	if w := LastWrite(l, read(), pass.Seq, lex); w == nil || w.Seq != write.Seq || !strings.Contains(w.What, "a.go") {
		t.Fatalf("LastWrite = %+v, want seq %d", w, write.Seq)
	}
	pack := filepath.Join(h.SessionArtifactsDir("s1"), ledger.PackName)
	b, _ := os.ReadFile(pack)
	os.WriteFile(pack, []byte(strings.Replace(string(b), "go vet ./pkg2", "go vet ./pkg3", 1)), 0o600)
	w := LastWrite(l, read(), pass.Seq, lex)
	if w == nil || w.Seq != write.Seq+2 || !strings.Contains(w.What, "unreadable") {
		t.Fatalf("LastWrite over an edited input.json = %+v", w)
	}
}
