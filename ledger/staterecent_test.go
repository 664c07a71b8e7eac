package ledger

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
)

func appendGate(t testing.TB, l *Ledger, session, event, agent string) *Entry {
	t.Helper()
	e, err := l.Append(session, Record{Kind: KindGateDecision, Runtime: "claude", Event: event, AgentID: agent, Body: map[string]any{"decision": "block"}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// gateView is what the gate uses of ReadRelevant's result: the indexed
// entries and the last, the tool entries after a, and the last gate
// decision of each event and agent after a.
func gateView(es []*Entry, a uint64) []uint64 {
	lastGate := map[string]uint64{}
	for _, e := range es {
		if e.Kind == KindGateDecision && e.Seq > a {
			lastGate[gateTag(e.Event, e.AgentID)] = e.Seq
		}
	}
	var out []uint64
	for i, e := range es {
		switch {
		case indexedKinds[e.Kind], i == len(es)-1:
		case e.Seq <= a:
			continue
		case e.Kind == KindToolCall || e.Kind == KindToolFailure:
		case e.Kind == KindGateDecision && lastGate[gateTag(e.Event, e.AgentID)] == e.Seq:
		default:
			continue
		}
		out = append(out, e.Seq)
	}
	return out
}

// sessionWithStops is a session after many stops: calls, a pass, more
// calls, then gate decisions of the main agent and two subagents, as
// every stop appends one.
func sessionWithStops(t *testing.T, l *Ledger, stops int) *Entry {
	appendN(t, l, "s1", 5)
	pass := appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
	appendN(t, l, "s1", 3)
	for i := 0; i < stops; i++ {
		appendGate(t, l, "s1", "Stop", "")
		if i%10 == 0 {
			appendGate(t, l, "s1", "SubagentStop", fmt.Sprintf("agent%d", i%20))
		}
	}
	return pass
}

// The gate's read after many stops reads the tool calls after the pass
// and the last decision of each event and agent, not every decision, and
// gives the gate what a full read gives it.
func TestReadRelevantSkipsGateDecisions(t *testing.T) {
	l := newTestLedger(t)
	pass := sessionWithStops(t, l, 100)
	got, err := l.ReadRelevant("s1", func([]*Entry) uint64 { return pass.Seq })
	if err != nil {
		t.Fatal(err)
	}
	all := fullEntries(t, l, "s1")
	if want := gateView(all, pass.Seq); !reflect.DeepEqual(gateView(got, pass.Seq), want) {
		t.Fatalf("gate's view %v, full read's %v", gateView(got, pass.Seq), want)
	}
	if len(got) > 1+3+3 { // the pass, 3 calls, the last Stop and 2 subagents' (one of them last)
		t.Fatalf("read %d entries (%v): the decisions before the last were read", len(got), seqs(got))
	}
	if l.testingOnlyFullReads != 0 || l.testingOnlyVerifiedEntries != 0 {
		t.Fatalf("%d full reads, %d entries verified", l.testingOnlyFullReads, l.testingOnlyVerifiedEntries)
	}
}

// Past what the state lists (more tool calls or more agents after the
// pass than it keeps), the read takes the whole tail, and still gives the
// gate what a full read does.
func TestReadRelevantPastRecent(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after func(t *testing.T, l *Ledger)
	}{
		{"tool calls", func(t *testing.T, l *Ledger) { appendN(t, l, "s1", maxRecentTools+3) }},
		{"agents", func(t *testing.T, l *Ledger) {
			for i := 0; i < maxGateTags+3; i++ {
				appendGate(t, l, "s1", "SubagentStop", fmt.Sprintf("a%d", i))
			}
			appendGate(t, l, "s1", "Stop", "")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			appendN(t, l, "s1", 3)
			pass := appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
			tc.after(t, l)
			got, err := l.ReadRelevant("s1", func([]*Entry) uint64 { return pass.Seq })
			if err != nil {
				t.Fatal(err)
			}
			all := fullEntries(t, l, "s1")
			if want := gateView(all, pass.Seq); !reflect.DeepEqual(gateView(got, pass.Seq), want) {
				t.Fatalf("gate's view %v, full read's %v", gateView(got, pass.Seq), want)
			}
			if l.testingOnlyFullReads != 0 {
				t.Fatal("a full read")
			}
		})
	}
}

// Attacks on the state's tool and gate lines: whatever is done to the
// state, the gate sees every tool call after its pass and the last
// decision of each agent, or the read fails.
func TestRecentStateAttacks(t *testing.T) {
	statePathOf := func(l *Ledger) string { return statePath(filesFor(l.home, "s1")) }
	for _, tc := range []struct {
		name string
		// attack runs on a session whose state covers a pass, calls and
		// decisions; it may append more.
		attack func(t *testing.T, l *Ledger)
		full   bool // the read must fall back to a full verification
	}{
		{"tool line removed", func(t *testing.T, l *Ledger) {
			editState(t, statePathOf(l), func(ln string) string {
				if strings.HasPrefix(ln, "tool ") {
					return ""
				}
				return ln
			})
		}, true},
		{"recent floor raised", func(t *testing.T, l *Ledger) {
			st := stateOnDisk(t, l, "s1")
			editState(t, statePathOf(l), func(ln string) string {
				if strings.HasPrefix(ln, "recent ") {
					return fmt.Sprintf("recent %d %d", st.Size-1, st.Size-1)
				}
				return ln
			})
		}, true},
		{"gate line pointed at an older decision", func(t *testing.T, l *Ledger) {
			st := stateOnDisk(t, l, "s1")
			old := fmt.Sprintf(" %d %d", st.Gates[0].Seq, st.Gates[0].Off)
			editState(t, statePathOf(l), func(ln string) string {
				if strings.HasPrefix(ln, "gate ") && strings.HasSuffix(ln, fmt.Sprintf(" %d %d", st.Gates[len(st.Gates)-1].Seq, st.Gates[len(st.Gates)-1].Off)) {
					return strings.Fields(ln)[0] + " " + strings.Fields(ln)[1] + old
				}
				return ln
			})
		}, true},
		{"state MAC'd with another root's key", func(t *testing.T, l *Ledger) {
			h2, err := home.At(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := Init(h2); err != nil {
				t.Fatal(err)
			}
			l2, err := Open(h2)
			if err != nil {
				t.Fatal(err)
			}
			st := stateOnDisk(t, l, "s1")
			st.Tools = nil // what the forger wants the gate not to see
			os.WriteFile(statePathOf(l), l2.stateBytes("s1", st), 0o600)
		}, true},
		{"state copied from another root", func(t *testing.T, l *Ledger) {
			h2, _ := home.At(t.TempDir())
			Init(h2)
			l2, _ := Open(h2)
			appendN(t, l2, "s1", 4)
			b, _ := os.ReadFile(statePath(filesFor(l2.home, "s1")))
			os.WriteFile(statePathOf(l), b, 0o600)
		}, true},
		{"stale state restored after a write and a block", func(t *testing.T, l *Ledger) {
			b, _ := os.ReadFile(statePathOf(l))
			appendKind(t, l, "s1", KindToolCall, map[string]any{"cwd": "/work"})
			appendGate(t, l, "s1", "Stop", "")
			os.WriteFile(statePathOf(l), b, 0o600) // an older state, MAC intact
		}, false},
		{"v1 state", func(t *testing.T, l *Ledger) {
			b, _ := os.ReadFile(statePathOf(l))
			os.WriteFile(statePathOf(l), []byte(strings.Replace(string(b), stateHeader, "docket-ledger-state v1", 1)), 0o600)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			pass := sessionWithStops(t, l, 30)
			tc.attack(t, l)
			full := l.testingOnlyFullReads
			got, err := l.ReadRelevant("s1", func([]*Entry) uint64 { return pass.Seq })
			if err != nil {
				t.Fatal(err)
			}
			if tc.full && l.testingOnlyFullReads != full+1 {
				t.Fatal("the attacked state was trusted")
			}
			all := fullEntries(t, l, "s1")
			if want := gateView(all, pass.Seq); !reflect.DeepEqual(gateView(got, pass.Seq), want) {
				t.Fatalf("gate's view %v, full read's %v", gateView(got, pass.Seq), want)
			}
		})
	}
}

// Attacks on the ledger lines the state points at: the read fails.
func TestRecentLedgerAttacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, ls []string, st *vstate) []string
	}{
		{"last decision edited", func(t *testing.T, ls []string, st *vstate) []string {
			i := st.Gates[len(st.Gates)-1].Seq
			ls[i] = resign(ls[i], `"decision":"block"`, `"decision":"allow"`)
			return ls
		}},
		{"tool call after the pass edited", func(t *testing.T, ls []string, st *vstate) []string {
			i := st.Tools[len(st.Tools)-1].Seq
			ls[i] = resign(ls[i], `"tool":"Bash"`, `"tool":"Edit"`)
			return ls
		}},
		{"two tool calls swapped", func(t *testing.T, ls []string, st *vstate) []string {
			i, j := st.Tools[len(st.Tools)-1].Seq, st.Tools[len(st.Tools)-2].Seq
			if len(ls[i]) != len(ls[j]) {
				t.Skip("lines differ in length")
			}
			ls[i], ls[j] = ls[j], ls[i]
			return ls
		}},
		{"last decision replaced by an earlier one", func(t *testing.T, ls []string, st *vstate) []string {
			i := st.Gates[len(st.Gates)-1].Seq
			for j := i - 1; j > 0; j-- {
				if len(ls[j]) == len(ls[i]) && strings.Contains(ls[j], `"kind":"gate_decision"`) {
					ls[i] = ls[j]
					return ls
				}
			}
			t.Skip("no earlier decision of the same length")
			return ls
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			pass := sessionWithStops(t, l, 30)
			st := stateOnDisk(t, l, "s1")
			rewrite(t, l, "s1", func(ls []string) []string { return tc.edit(t, ls, st) })
			if _, err := l.ReadRelevant("s1", func([]*Entry) uint64 { return pass.Seq }); err == nil {
				t.Fatal("ReadRelevant accepted an edited entry it reads")
			}
		})
	}
}

// editState rewrites the state file line by line without its MAC
// changing; an empty result drops the line.
func editState(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ln := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if ln = edit(ln); ln != "" {
			out = append(out, ln)
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}
