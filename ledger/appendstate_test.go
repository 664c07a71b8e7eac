package ledger

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// stateFromFull is the state a full verification computes for the
// session: what the appends' state must equal.
func stateFromFull(t *testing.T, l *Ledger, session string) *vstate {
	t.Helper()
	opts := verifyOpts(l)
	opts.AcceptSealed = true
	rep, v, err := verify(l.home, session, opts, nil)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	st, err := v.state()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func stateOnDisk(t *testing.T, l *Ledger, session string) *vstate {
	t.Helper()
	st, err := l.readState(filesFor(l.home, session), session)
	if err != nil {
		t.Fatalf("read state: %v", err)
	}
	return st
}

func lastPass(es []*Entry) uint64 {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Kind == KindValidatorPass {
			return es[i].Seq
		}
	}
	return es[len(es)-1].Seq
}

// A ledger built by appends alone, with no reader in between, carries a
// state equal to the one a full verification computes, so the first read
// verifies no entry in full: the gate reads the indexed entries and the
// tail after the pass, the rest reads nothing of the prefix but its hash.
// The appends that build it include the paths that commit entries other
// than the caller's: a sealed torn tail, a sealed stray pack bytes, and
// an adopted entry (a crash after the write, before the head).
func TestAppendsAdvanceState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(t *testing.T, l *Ledger)
	}{
		{"appends", func(t *testing.T, l *Ledger) {
			appendN(t, l, "s1", 4)
			appendKind(t, l, "s1", KindValidatorFail, map[string]any{"claim": "done", "result": "fail"})
			appendN(t, l, "s1", 3)
			appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
			appendN(t, l, "s1", 3)
		}},
		{"calls and decisions past the state's lists", func(t *testing.T, l *Ledger) {
			appendN(t, l, "s1", maxRecentTools+2)
			for i := 0; i < maxGateTags+2; i++ {
				appendGate(t, l, "s1", "SubagentStop", fmt.Sprintf("a%d", i))
				appendGate(t, l, "s1", "Stop", "")
			}
			appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
			appendN(t, l, "s1", 2)
		}},
		{"torn tail sealed", func(t *testing.T, l *Ledger) {
			appendN(t, l, "s1", 3)
			appendTo(t, l.home.LedgerPath("s1"), `{"v":1,"seq":3,"session":"s1","ti`)
			appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
			appendN(t, l, "s1", 2)
		}},
		{"stray pack bytes sealed", func(t *testing.T, l *Ledger) {
			appendN(t, l, "s1", 3)
			appendTo(t, l.home.SessionArtifactsDir("s1")+"/"+PackName, "stray")
			appendN(t, l, "s1", 2)
		}},
		{"adopted entry", func(t *testing.T, l *Ledger) {
			appendN(t, l, "s1", 2)
			sf := filesFor(l.home, "s1")
			head, _ := os.ReadFile(sf.head)
			state, _ := os.ReadFile(statePath(sf))
			appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
			os.WriteFile(sf.head, head, 0o600) // the process died before the head
			os.WriteFile(statePath(sf), state, 0o600)
			appendN(t, l, "s1", 2)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			tc.build(t, l)
			if got, want := stateOnDisk(t, l, "s1"), stateFromFull(t, l, "s1"); !reflect.DeepEqual(got, want) {
				t.Fatalf("appended state\n%s\nfull verification's\n%s", got.text("s1"), want.text("s1"))
			}
			all := fullEntries(t, l, "s1")
			got, err := l.ReadRelevant("s1", lastPass)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || got[len(got)-1].Seq != uint64(len(all)-1) {
				t.Fatalf("ReadRelevant = seqs %v of %d", seqs(got), len(all))
			}
			if l.testingOnlyVerifiedEntries != 0 || l.testingOnlyFullReads != 0 {
				t.Fatalf("first ReadRelevant verified %d entries (%d full reads); the appends vouched for all", l.testingOnlyVerifiedEntries, l.testingOnlyFullReads)
			}
			if es, err := l.ReadVerified("s1"); err != nil || !reflect.DeepEqual(es, all) {
				t.Fatalf("ReadVerified: %d entries, %v", len(es), err)
			}
			if l.testingOnlyVerifiedEntries != 0 {
				t.Fatalf("ReadVerified verified %d entries", l.testingOnlyVerifiedEntries)
			}
		})
	}
}

// When the state does not describe the head an append reads, the append
// leaves it alone, and the next read verifies from the state's end (or
// from the start without one); appends after that read advance it again.
func TestAppendLeavesMismatchedStateAlone(t *testing.T) {
	for _, tc := range []struct {
		name     string
		break_   func(t *testing.T, l *Ledger, path string, old []byte)
		verified int // entries the next read verifies in full
		full     int
	}{
		{"state lost", func(t *testing.T, l *Ledger, path string, _ []byte) { os.Remove(path) }, 9, 1},
		{"older state put back", func(t *testing.T, l *Ledger, path string, old []byte) { os.WriteFile(path, old, 0o600) }, 5, 0},
		{"torn state", func(t *testing.T, l *Ledger, path string, _ []byte) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)/2], 0o600)
		}, 9, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			appendN(t, l, "s1", 4)
			path := statePath(filesFor(l.home, "s1"))
			old, _ := os.ReadFile(path)
			appendN(t, l, "s1", 3)
			tc.break_(t, l, path, old)
			broken, _ := os.ReadFile(path)
			appendN(t, l, "s1", 2)
			if now, _ := os.ReadFile(path); string(now) != string(broken) {
				t.Fatal("an append rewrote a state that does not describe its head")
			}
			if _, err := l.ReadRelevant("s1", lastPass); err != nil {
				t.Fatal(err)
			}
			if l.testingOnlyVerifiedEntries != tc.verified || l.testingOnlyFullReads != tc.full {
				t.Fatalf("read verified %d entries (%d full reads), want %d (%d)", l.testingOnlyVerifiedEntries, l.testingOnlyFullReads, tc.verified, tc.full)
			}
			appendN(t, l, "s1", 2)
			before := l.testingOnlyVerifiedEntries
			if _, err := l.ReadRelevant("s1", lastPass); err != nil {
				t.Fatal(err)
			}
			if l.testingOnlyVerifiedEntries != before {
				t.Fatalf("after the read re-anchored the state, the appends did not advance it (%d more verified)", l.testingOnlyVerifiedEntries-before)
			}
		})
	}
}

// A state edited without its MAC recomputed is neither trusted by a
// reader nor laundered by an append extending it and MAC'ing the result.
func TestForgedStateIsNotExtended(t *testing.T) {
	for _, tc := range []struct {
		name  string
		forge func(st string) string
	}{
		{"size", func(st string) string { return strings.Replace(st, "size 6\n", "size 5\n", 1) }},
		{"index line removed", func(st string) string {
			i := strings.Index(st, "index validator_fail")
			j := strings.Index(st[i:], "\n")
			return st[:i] + st[i+j+1:]
		}},
		{"index offset", func(st string) string {
			return strings.Replace(st, "index validator_fail 2 ", "index validator_fail 2 1", 1)
		}},
		{"prefix digest", func(st string) string {
			i := strings.Index(st, "prefix ") + len("prefix ") + 20
			c := byte('A')
			if st[i] == 'A' {
				c = 'B'
			}
			return st[:i] + string(c) + st[i+1:]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			appendN(t, l, "s1", 2)
			appendKind(t, l, "s1", KindValidatorFail, map[string]any{"claim": "done", "result": "fail"})
			appendN(t, l, "s1", 3)
			path := statePath(filesFor(l.home, "s1"))
			st, _ := os.ReadFile(path)
			forged := tc.forge(string(st))
			if forged == string(st) {
				t.Fatalf("forgery changed nothing:\n%s", st)
			}
			os.WriteFile(path, []byte(forged), 0o600)
			if _, err := l.readState(filesFor(l.home, "s1"), "s1"); err == nil {
				t.Fatal("forged state accepted")
			}
			appendN(t, l, "s1", 1)
			if now, _ := os.ReadFile(path); string(now) != forged {
				t.Fatal("an append extended a forged state")
			}
			es, err := l.ReadRelevant("s1", lastPass)
			if err != nil {
				t.Fatal(err)
			}
			if l.testingOnlyFullReads != 1 {
				t.Fatal("the read trusted a forged state")
			}
			found := false
			for _, e := range es {
				found = found || e.Kind == KindValidatorFail
			}
			if !found {
				t.Fatal("the validator_fail is missing from the gate's read")
			}
		})
	}
}

// An earlier line edited (hash recomputed, no key for the MAC) in a ledger
// whose state only appends advanced, and more appends after the edit
// (which never read the prefix): the gate's read fails if it reads the
// line, and `docket verify` and ReadVerified always catch it.
func TestEditUnderAppendedState(t *testing.T) {
	for _, tc := range []struct {
		name         string
		line         int
		old, new     string
		relevantSees bool
	}{
		{"pass claim", 4, `"claim":"done"`, `"claim":"gone"`, true},
		{"call after the pass", 6, `"tool":"Bash"`, `"tool":"Edit"`, true},
		{"last line before the next append", 8, `"tool":"Bash"`, `"tool":"Edit"`, true},
		{"call before the pass", 1, `"tool":"Bash"`, `"tool":"Edit"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			appendN(t, l, "s1", 4)
			pass := appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
			appendN(t, l, "s1", 4)
			rewrite(t, l, "s1", func(ls []string) []string {
				if !strings.Contains(ls[tc.line], tc.old) {
					t.Fatalf("line %d lacks %s", tc.line, tc.old)
				}
				ls[tc.line] = resign(ls[tc.line], tc.old, tc.new)
				return ls
			})
			appendN(t, l, "s1", 2)
			_, err := l.ReadRelevant("s1", func([]*Entry) uint64 { return pass.Seq })
			if tc.relevantSees && err == nil {
				t.Fatal("ReadRelevant accepted an edited entry it reads")
			}
			if !tc.relevantSees && err != nil {
				t.Fatalf("ReadRelevant: %v (it reads no such entry)", err)
			}
			if _, err := l.ReadVerified("s1"); err == nil {
				t.Fatal("ReadVerified accepted an edited prefix")
			}
			rep, _ := Verify(l.home, "s1", verifyOpts(l))
			if rep.OK || rep.Failure.Seq != int64(tc.line) {
				t.Fatalf("Verify = %+v, want a failure at seq %d", rep.Failure, tc.line)
			}
		})
	}
}

// Appenders in parallel (separate Ledger values, as separate hook
// processes), with readers between them: the state on disk stays the one
// a full verification computes, and a read after them verifies nothing
// in full. Run with -race.
func TestConcurrentAppendsKeepState(t *testing.T) {
	l := newTestLedger(t)
	const writers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*each)
	for w := 0; w < writers; w++ {
		lw, err := Open(l.home)
		if err != nil {
			t.Fatal(err)
		}
		lw.testingOnlyNoSync = true
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r := Record{Kind: KindToolCall, Tool: "Bash", Body: map[string]any{"writer": w, "i": i},
					Artifacts: []Artifact{{Name: "stdout", Data: strings.NewReader(fmt.Sprint(w, i))}}}
				if i%5 == 4 {
					r = Record{Kind: KindValidatorPass, Runtime: "docket", Body: map[string]any{"writer": w, "i": i}}
				}
				if _, err := lw.Append("s1", r); err != nil {
					errs <- err
				}
				if w%2 == 0 && i%4 == 0 {
					if _, err := lw.ReadRelevant("s1", lastPass); err != nil {
						errs <- fmt.Errorf("read: %w", err)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, want := stateOnDisk(t, l, "s1"), stateFromFull(t, l, "s1"); !reflect.DeepEqual(got, want) {
		t.Fatalf("state after concurrent appends\n%s\nfull verification's\n%s", got.text("s1"), want.text("s1"))
	}
	es, err := l.ReadVerified("s1")
	if err != nil || len(es) != writers*each {
		t.Fatalf("ReadVerified: %d entries, %v", len(es), err)
	}
	if l.testingOnlyVerifiedEntries != 0 {
		t.Fatalf("%d entries verified after the appends", l.testingOnlyVerifiedEntries)
	}
}
