package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
)

// transcript builds Claude Code transcript lines.
type transcript struct {
	lines []string
	n     int
}

func (tr *transcript) prompt(text string) *transcript {
	tr.n++
	b, _ := json.Marshal(text)
	tr.lines = append(tr.lines, fmt.Sprintf(`{"type":"user","isSidechain":false,"uuid":"u%d","message":{"role":"user","content":%s}}`, tr.n, b))
	return tr
}

func (tr *transcript) say(id string, texts ...string) *transcript {
	for _, s := range texts {
		tr.n++
		b, _ := json.Marshal(s)
		tr.lines = append(tr.lines, fmt.Sprintf(`{"type":"assistant","isSidechain":false,"uuid":"a%d","message":{"id":%q,"role":"assistant","content":[{"type":"text","text":%s}]}}`, tr.n, id, b))
	}
	return tr
}

func (tr *transcript) tool(id string) *transcript {
	tr.n++
	tr.lines = append(tr.lines,
		fmt.Sprintf(`{"type":"assistant","isSidechain":false,"uuid":"a%d","message":{"id":%q,"role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"go test ./..."}}]}}`, tr.n, id, tr.n),
		fmt.Sprintf(`{"type":"user","isSidechain":false,"uuid":"r%d","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"FAIL"}]},"toolUseResult":{"stdout":"FAIL"}}`, tr.n, tr.n))
	return tr
}

func (tr *transcript) meta(text string) *transcript {
	tr.n++
	b, _ := json.Marshal(text)
	tr.lines = append(tr.lines, fmt.Sprintf(`{"type":"user","isSidechain":false,"isMeta":true,"uuid":"u%d","message":{"role":"user","content":%s}}`, tr.n, b))
	return tr
}

func (tr *transcript) sidechain(prompt, text string) *transcript {
	tr.n++
	p, _ := json.Marshal(prompt)
	b, _ := json.Marshal(text)
	tr.lines = append(tr.lines,
		fmt.Sprintf(`{"type":"user","isSidechain":true,"uuid":"su%d","message":{"role":"user","content":%s}}`, tr.n, p),
		fmt.Sprintf(`{"type":"assistant","isSidechain":true,"uuid":"sa%d","message":{"id":"side%d","role":"assistant","content":[{"type":"text","text":%s}]}}`, tr.n, tr.n, b))
	return tr
}

func (tr *transcript) write(t *testing.T, path string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(tr.lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadTurn(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		tr   *transcript
		want []string
		last string
	}{
		{"one message", new(transcript).prompt("fix it").say("m1", "All done."), []string{"All done."}, "All done."},
		{"earlier messages of the turn", new(transcript).prompt("fix it").say("m1", "Fixed the parser.").tool("m1").say("m2", "I looked at the logs.").tool("m2").say("m3", "Here is a summary.", "Nothing else."),
			[]string{"Fixed the parser.", "I looked at the logs.", "Here is a summary.\n\nNothing else."}, "Here is a summary.\n\nNothing else."},
		{"previous turn left out", new(transcript).prompt("one").say("m1", "Pushed to main.").prompt("two").say("m2", "Here is the answer."),
			[]string{"Here is the answer."}, "Here is the answer."},
		{"queued prompt after the final message", new(transcript).prompt("x").say("m1", "Fixed it.").prompt("and also"),
			[]string{"Fixed it."}, "Fixed it."},
		{"meta user line is not a prompt", new(transcript).prompt("x").say("m1", "Fixed it.").meta("<local-command-stdout>ok</local-command-stdout>").say("m2", "Summary."),
			[]string{"Fixed it.", "Summary."}, "Summary."},
		{"sidechain lines are another chain", new(transcript).prompt("x").say("m1", "Fixed it.").sidechain("sub task", "Pushed.").say("m2", "Summary."),
			[]string{"Fixed it.", "Summary."}, "Summary."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.tr.write(t, filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".jsonl"))
			turn, err := ReadTurn(p, MainChain)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%q", turn.Texts()) != fmt.Sprintf("%q", tt.want) {
				t.Errorf("texts %q, want %q", turn.Texts(), tt.want)
			}
			if turn.Text != tt.last {
				t.Errorf("final %q, want %q", turn.Text, tt.last)
			}
			m, err := ReadLastAssistant(p, MainChain)
			if err != nil || m.Text != turn.Text {
				t.Errorf("ReadLastAssistant %q (%v), ReadTurn final %q", m.Text, err, turn.Text)
			}
		})
	}
}

// TestTurnMessageText: after a block, what follows the blocked message
// is judged, or the final message when nothing follows it.
func TestTurnMessageText(t *testing.T) {
	bt := func(s string) blockedText { return blockedText{len: len(s), sum: TextDigest(s)} }
	msgs := [][]string{{"Running the tests."}, {"All done.", "Tests pass."}, {"Sorry, not verified."}}
	tests := []struct {
		name string
		m    turnMessage
		bt   blockedText
		want string
	}{
		{"nothing blocked", turnMessage{msgs: msgs, final: "Sorry, not verified.", retry: true}, blockedText{}, "Running the tests.\n\nAll done.\n\nTests pass.\n\nSorry, not verified."},
		{"after the blocked message", turnMessage{msgs: msgs, final: "Sorry, not verified.", retry: true}, bt("All done.\n\nTests pass."), "Sorry, not verified."},
		{"not the stop after a block", turnMessage{msgs: msgs, final: "Sorry, not verified."}, bt("All done.\n\nTests pass."), "Running the tests.\n\nAll done.\n\nTests pass.\n\nSorry, not verified."},
		{"blocked blocks joined by a newline", turnMessage{msgs: msgs, final: "Sorry, not verified.", retry: true}, bt("All done.\nTests pass."), "Sorry, not verified."},
		{"blocked message is the final one", turnMessage{msgs: msgs[:2], final: "All done.\n\nTests pass.", retry: true}, bt("All done.\n\nTests pass."), "All done.\n\nTests pass."},
		{"blocked text not in the turn", turnMessage{msgs: msgs, final: "Sorry, not verified.", retry: true}, bt("Pushed."), "Running the tests.\n\nAll done.\n\nTests pass.\n\nSorry, not verified."},
		{"accumulated retry", turnMessage{final: "A. Done.\nB.", accumulated: true, retry: true}, bt("A. Done."), "\nB."},
		{"accumulated, not a retry", turnMessage{final: "A. Done.\nB.", accumulated: true}, bt("A. Done."), "A. Done.\nB."},
		{"accumulated, prefix differs", turnMessage{final: "A. Done!\nB.", accumulated: true, retry: true}, bt("A. Done."), "A. Done!\nB."},
		{"accumulated, nothing new", turnMessage{final: "A. Done. ", accumulated: true, retry: true}, bt("A. Done."), "A. Done. "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.text(tt.bt); got != tt.want {
				t.Errorf("text = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadTurnCodex reads a Codex rollout: agent_message events of the
// turn, bounded by user_message.
func TestReadTurnCodex(t *testing.T) {
	lines := []string{
		`{"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`,
		`{"type":"event_msg","payload":{"type":"user_message","message":"first"}}`,
		`{"type":"event_msg","payload":{"type":"agent_message","message":"Pushed to main.","phase":"final_answer"}}`,
		`{"type":"event_msg","payload":{"type":"task_started","turn_id":"t2"}}`,
		`{"type":"event_msg","payload":{"type":"user_message","message":"make the tests pass"}}`,
		`{"type":"event_msg","payload":{"type":"agent_message","message":"All tests pass now.","phase":"commentary"}}`,
		`{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"All tests pass now."}]}}`,
		`{"type":"event_msg","payload":{"type":"agent_message","message":"Summary of the change.","phase":"final_answer"}}`,
	}
	p := filepath.Join(t.TempDir(), "rollout.jsonl")
	os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	turn, err := ReadTurn(p, MainChain)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%q", turn.Texts()) != `["All tests pass now." "Summary of the change."]` {
		t.Fatalf("texts %q", turn.Texts())
	}
}

// TestGateTurnScope: the gate judges every assistant text of the turn
// after its last block, not the final message only.
func TestGateTurnScope(t *testing.T) {
	dir := t.TempDir()
	claude := func(path, last string, active bool) *hooks.Event {
		ev := stopEventTranscript(path)
		ev.StopHookActive = active
		if last != "" {
			ev.LastAssistantMessage, ev.HasLastAssistantMessage = last, true
		}
		return ev
	}
	t.Run("claim in an earlier message, stdin final message clean", func(t *testing.T) {
		p := new(transcript).prompt("fix the parser").say("m1", "Fixed the parser; all tests pass.").tool("m1").
			say("m2", "Here is what I changed in parse.go.").write(t, filepath.Join(dir, "earlier.jsonl"))
		g := testGate(t, &memLedger{})
		r := g.Stop(claude(p, "Here is what I changed in parse.go.", false))
		if r.Outcome != Block || fmt.Sprint(ClaimTypesOf(r.Claims)) != "[fixed tests_pass]" {
			t.Fatalf("outcome %s claims %v, want a block on fixed and tests_pass", r.Outcome, ClaimTypesOf(r.Claims))
		}
	})
	t.Run("claim in an earlier message, transcript only", func(t *testing.T) {
		p := new(transcript).prompt("ship it").say("m1", "Pushed to main.").tool("m1").say("m2", "That is all.").write(t, filepath.Join(dir, "earlier2.jsonl"))
		g := testGate(t, &memLedger{})
		if r := g.Stop(claude(p, "", false)); r.Outcome != Block {
			t.Fatalf("outcome %s, want block", r.Outcome)
		}
	})
	t.Run("claim in the previous turn is not judged", func(t *testing.T) {
		p := new(transcript).prompt("one").say("m1", "Pushed to main.").prompt("two").say("m2", "Here is the answer.").write(t, filepath.Join(dir, "prev.jsonl"))
		g := testGate(t, &memLedger{})
		if r := g.Stop(claude(p, "Here is the answer.", false)); r.Outcome != Allow {
			t.Fatalf("outcome %s (%v), want allow", r.Outcome, r.Claims)
		}
	})
	t.Run("final message not yet in the transcript", func(t *testing.T) {
		p := new(transcript).prompt("x").say("m1", "Looking at it.").write(t, filepath.Join(dir, "unflushed.jsonl"))
		g := testGate(t, &memLedger{})
		if r := g.Stop(claude(p, "All done.", false)); r.Outcome != Block {
			t.Fatalf("outcome %s, want block", r.Outcome)
		}
	})
	t.Run("retracted after a block", func(t *testing.T) {
		path := filepath.Join(dir, "retract.jsonl")
		tr := new(transcript).prompt("make the tests pass").say("m1", "Running the tests.").tool("m1").say("m2", "All done — tests pass.")
		tr.write(t, path)
		g := testGate(t, &memLedger{})
		if r := g.Stop(claude(path, "All done — tests pass.", false)); r.Outcome != Block {
			t.Fatalf("first stop: %s, want block", r.Outcome)
		}
		// The block reason reaches the model; it retracts.
		tr.say("m3", "I ran the test command once; nothing else was checked.").write(t, path)
		r := g.Stop(claude(path, "I ran the test command once; nothing else was checked.", true))
		if r.Outcome != Allow {
			t.Fatalf("after retraction: %s (%v), want allow", r.Outcome, r.Claims)
		}
	})
	t.Run("repeated after a block", func(t *testing.T) {
		path := filepath.Join(dir, "repeat.jsonl")
		tr := new(transcript).prompt("make the tests pass").say("m1", "All done — tests pass.")
		tr.write(t, path)
		g := testGate(t, &memLedger{})
		g.Stop(claude(path, "All done — tests pass.", false))
		tr.say("m2", "All done — tests pass.").write(t, path)
		if r := g.Stop(claude(path, "All done — tests pass.", true)); r.Outcome != Block {
			t.Fatalf("repeated claim: %s, want block", r.Outcome)
		}
	})
	t.Run("no new text after a block", func(t *testing.T) {
		path := filepath.Join(dir, "notext.jsonl")
		tr := new(transcript).prompt("ship").say("m1", "Pushed to main.")
		tr.write(t, path)
		g := testGate(t, &memLedger{})
		g.Stop(claude(path, "", false))
		tr.tool("m2").write(t, path) // a tool call, no text
		if r := g.Stop(claude(path, "", true)); r.Outcome != Block {
			t.Fatalf("no new text: %s, want block on the standing claim", r.Outcome)
		}
	})
	t.Run("blocked claim repeated in a new turn", func(t *testing.T) {
		path := filepath.Join(dir, "newturn.jsonl")
		tr := new(transcript).prompt("x").say("m1", "All done.")
		tr.write(t, path)
		g := testGate(t, &memLedger{})
		g.Stop(claude(path, "All done.", false))
		// The user interrupts and asks again; the agent says the same.
		tr.prompt("really?").say("m2", "All done.").tool("m2").say("m3", "See the diff above.").write(t, path)
		if r := g.Stop(claude(path, "See the diff above.", false)); r.Outcome != Block {
			t.Fatalf("new turn: %s, want block", r.Outcome)
		}
	})
	t.Run("new claim after a block", func(t *testing.T) {
		path := filepath.Join(dir, "newclaim.jsonl")
		tr := new(transcript).prompt("x").say("m1", "All done.")
		tr.write(t, path)
		g := testGate(t, &memLedger{})
		g.Stop(claude(path, "All done.", false))
		tr.say("m2", "Sorry, I overstated that.").tool("m2").say("m3", "Pushed to main anyway.").write(t, path)
		r := g.Stop(claude(path, "Pushed to main anyway.", true))
		if r.Outcome != Block || fmt.Sprint(ClaimTypesOf(r.Claims)) != "[shipped]" {
			t.Fatalf("outcome %s claims %v, want a block on shipped only", r.Outcome, ClaimTypesOf(r.Claims))
		}
	})
}

func geminiEvent(t *testing.T, name string) *hooks.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := hooks.DecodeGemini(b)
	if err != nil {
		t.Fatal(err)
	}
	ev.SessionID = "s1"
	return ev
}

// TestGateGeminiAccumulated: Gemini's prompt_response holds all model
// text of the turn across retries; after a block only the retry's text
// is judged (real payloads from Gemini CLI 0.61.0).
func TestGateGeminiAccumulated(t *testing.T) {
	first := geminiEvent(t, "gemini-AfterAgent-first.json")
	retry := geminiEvent(t, "gemini-AfterAgent-retry-accumulated.json")
	if !strings.HasPrefix(retry.LastAssistantMessage, first.LastAssistantMessage) || !retry.StopHookActive {
		t.Fatal("captured payloads no longer show an accumulated retry")
	}
	t.Run("retraction allowed", func(t *testing.T) {
		g := testGate(t, &memLedger{})
		if r := g.Stop(first); r.Outcome != Block {
			t.Fatalf("first: %s, want block", r.Outcome)
		}
		if r := g.Stop(retry); r.Outcome != Allow {
			t.Fatalf("retry: %s (%v), want allow", r.Outcome, r.Claims)
		}
	})
	t.Run("claim repeated in the retry", func(t *testing.T) {
		g := testGate(t, &memLedger{})
		g.Stop(first)
		ev := *retry
		ev.LastAssistantMessage = first.LastAssistantMessage + "\nAll done — tests pass."
		if r := g.Stop(&ev); r.Outcome != Block {
			t.Fatalf("repeated: %s, want block", r.Outcome)
		}
	})
	t.Run("without a block the whole text is judged", func(t *testing.T) {
		g := testGate(t, &memLedger{})
		if r := g.Stop(retry); r.Outcome != Block {
			t.Fatalf("retry with no block on record: %s, want block", r.Outcome)
		}
	})
	t.Run("not a retry", func(t *testing.T) {
		g := testGate(t, &memLedger{})
		g.Stop(first)
		ev := *retry
		ev.StopHookActive = false
		if r := g.Stop(&ev); r.Outcome != Block {
			t.Fatalf("new turn starting with the blocked text: %s, want block", r.Outcome)
		}
	})
	t.Run("blocked text altered", func(t *testing.T) {
		g := testGate(t, &memLedger{})
		g.Stop(first)
		ev := *retry
		ev.LastAssistantMessage = strings.Replace(retry.LastAssistantMessage, "Running", "Running all", 1)
		if r := g.Stop(&ev); r.Outcome != Block {
			t.Fatalf("altered prefix: %s, want block", r.Outcome)
		}
	})
	t.Run("block state forged on disk", func(t *testing.T) {
		g := testGate(t, &memLedger{})
		first := first.LastAssistantMessage
		p := g.counterPath(retry)
		os.MkdirAll(filepath.Dir(p), 0o700)
		os.WriteFile(p, []byte(fmt.Sprintf("1 %d %s\n", len(first), TextDigest(first))), 0o600)
		if r := g.Stop(retry); r.Outcome != Block {
			t.Fatalf("with no signed block: %s, want block", r.Outcome)
		}
	})
	t.Run("a subagent's block does not scope the session", func(t *testing.T) {
		g := testGate(t, &memLedger{})
		sub := *first
		sub.Name, sub.AgentID = hooks.SubagentStop, "agent1"
		if r := g.Stop(&sub); r.Outcome != Block {
			t.Fatalf("subagent: %s, want block", r.Outcome)
		}
		if r := g.Stop(retry); r.Outcome != Block {
			t.Fatalf("session retry after a subagent block: %s, want block", r.Outcome)
		}
	})
	t.Run("last decision an allow", func(t *testing.T) {
		m := &memLedger{}
		g := testGate(t, m)
		g.Stop(first)
		m.pass(t, "s1", "done", "go_test_pass", "pass")
		m.pass(t, "s1", "tests_pass", "go_test_pass", "pass")
		inProject := *first
		inProject.Cwd = m.proj
		if r := g.Stop(&inProject); r.Outcome != Allow {
			t.Fatalf("with evidence: %s (%s)", r.Outcome, r.Answer.Reason)
		}
		ev := *retry
		ev.Cwd = m.proj
		ev.LastAssistantMessage = first.LastAssistantMessage + "\nPushed to main."
		if r := g.Stop(&ev); r.Outcome != Block || fmt.Sprint(ClaimTypesOf(r.Claims)) != "[done tests_pass shipped]" {
			t.Fatalf("outcome %s claims %v, want the whole text judged", r.Outcome, ClaimTypesOf(r.Claims))
		}
	})
	t.Run("nothing added", func(t *testing.T) {
		g := testGate(t, &memLedger{})
		g.Stop(first)
		ev := *retry
		ev.LastAssistantMessage = first.LastAssistantMessage + "\n  "
		if r := g.Stop(&ev); r.Outcome != Block {
			t.Fatalf("no new text: %s, want block", r.Outcome)
		}
	})
}

func TestReadTurnSidechain(t *testing.T) {
	p := new(transcript).prompt("x").say("m1", "Fixed it.").sidechain("sub task", "Pushed.").say("m2", "Summary.").write(t, filepath.Join(t.TempDir(), "side.jsonl"))
	turn, err := ReadTurn(p, Sidechain)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%q", turn.Texts()) != `["Pushed."]` {
		t.Fatalf("texts %q", turn.Texts())
	}
}

// FuzzReadTurn: ReadTurn finds the same final message as
// ReadLastAssistant, and it is the turn's last message.
func FuzzReadTurn(f *testing.F) {
	f.Add(strings.Join(new(transcript).prompt("x").say("m1", "Fixed.").tool("m1").say("m2", "Done.", "More.").lines, "\n"))
	f.Add(strings.Join(new(transcript).say("m1", "A.").prompt("p").say("m1", "B.").lines, "\n"))
	f.Add(`{"type":"event_msg","payload":{"type":"agent_message","message":"done"}}` + "\n" + `{"type":"user","message":{"content":"hi"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		data := []byte(s)
		turn, err := readTurn(bytes.NewReader(data), int64(len(data)), MainChain, MaxScanBytes, MaxTurnBytes)
		if err != nil {
			t.Fatal(err)
		}
		m, err := lastAssistant(bytes.NewReader(data), int64(len(data)), MainChain, MaxScanBytes)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Text != m.Text {
			t.Fatalf("ReadTurn final %q, ReadLastAssistant %q", turn.Text, m.Text)
		}
		texts := turn.Texts()
		if (turn.Text == "") != (len(texts) == 0) || len(texts) > 0 && texts[len(texts)-1] != turn.Text {
			t.Fatalf("final %q, messages %q", turn.Text, texts)
		}
	})
}

// TestGateCodexEarlierMessage: a Codex Stop carries the final message
// only; a claim in an earlier agent_message of the turn (the rollout) is
// judged too.
func TestGateCodexEarlierMessage(t *testing.T) {
	lines := []string{
		`{"type":"event_msg","payload":{"type":"task_started","turn_id":"t1"}}`,
		`{"type":"event_msg","payload":{"type":"user_message","message":"make the tests pass"}}`,
		`{"type":"event_msg","payload":{"type":"agent_message","message":"All tests pass now.","phase":"commentary"}}`,
		`{"type":"event_msg","payload":{"type":"agent_message","message":"Summary of the change.","phase":"final_answer"}}`,
	}
	p := filepath.Join(t.TempDir(), "rollout.jsonl")
	os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	g := testGate(t, &memLedger{})
	ev := &hooks.Event{Runtime: hooks.Codex, Name: hooks.Stop, RawName: hooks.Stop, SessionID: "s1", TranscriptPath: p,
		LastAssistantMessage: "Summary of the change.", HasLastAssistantMessage: true}
	if r := g.Stop(ev); r.Outcome != Block || fmt.Sprint(ClaimTypesOf(r.Claims)) != "[tests_pass]" {
		t.Fatalf("outcome %s claims %v, want a block on tests_pass", r.Outcome, ClaimTypesOf(r.Claims))
	}
	// Another runtime's transcript format is not read: Cursor's final
	// message alone.
	ev.Runtime = hooks.Cursor
	if r := g.Stop(ev); r.Outcome != Allow {
		t.Fatalf("cursor: %s", r.Outcome)
	}
}
