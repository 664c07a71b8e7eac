package ledger

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

func fullEntries(t *testing.T, l *Ledger, session string) []*Entry {
	t.Helper()
	var all []*Entry
	opts := verifyOpts(l)
	opts.AcceptSealed = true
	opts.OnEntry = func(e *Entry) { all = append(all, e) }
	rep, err := Verify(l.home, session, opts)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	return all
}

func appendKind(t *testing.T, l *Ledger, session string, kind Kind, body map[string]any) *Entry {
	t.Helper()
	e, err := l.Append(session, Record{Kind: kind, Runtime: "docket", Tool: "go_test_pass", Body: body})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Appends advance the state, so no read verifies the whole ledger, and
// the reads return the same entries a full verification does.
func TestReadVerifiedIsIncremental(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 5)
	for round, more := range []int{0, 3, 0, 1} {
		appendN(t, l, "s1", more)
		got, err := l.ReadVerified("s1")
		if err != nil {
			t.Fatal(err)
		}
		if want := fullEntries(t, l, "s1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: incremental read differs from a full verification", round)
		}
		if l.testingOnlyFullReads != 0 || l.testingOnlyVerifiedEntries != 0 {
			t.Fatalf("round %d: %d full reads, %d entries verified; the appends vouched for all", round, l.testingOnlyFullReads, l.testingOnlyVerifiedEntries)
		}
	}
}

// A state the key did not make, or made for another session, is ignored.
func TestForgedStateIsIgnored(t *testing.T) {
	for _, tc := range []struct {
		name  string
		forge func(t *testing.T, l *Ledger, state []byte) []byte
	}{
		{"edited size", func(t *testing.T, l *Ledger, st []byte) []byte {
			return []byte(strings.Replace(string(st), "size 4\n", "size 3\n", 1))
		}},
		{"other session's state", func(t *testing.T, l *Ledger, _ []byte) []byte {
			appendN(t, l, "s2", 4)
			l.ReadVerified("s2")
			b, _ := os.ReadFile(statePath(filesFor(l.home, "s2")))
			return b
		}},
		{"no mac", func(t *testing.T, l *Ledger, st []byte) []byte {
			return st[:strings.LastIndex(string(st), "mac ")]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			appendN(t, l, "s1", 4)
			l.ReadVerified("s1")
			path := statePath(filesFor(l.home, "s1"))
			st, _ := os.ReadFile(path)
			os.WriteFile(path, tc.forge(t, l, st), 0o600)
			full := l.testingOnlyFullReads
			appendN(t, l, "s1", 1)
			got, err := l.ReadVerified("s1")
			if err != nil || len(got) != 5 {
				t.Fatalf("read: %d entries, %v", len(got), err)
			}
			if l.testingOnlyFullReads != full+1 {
				t.Fatal("a forged state was trusted")
			}
		})
	}
}

// The gate's read: every indexed entry, the last one, and every entry
// after the seq the caller picks, all verified.
func TestReadRelevant(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 10)
	pass := appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
	appendN(t, l, "s1", 5)
	appendKind(t, l, "s1", KindGateDecision, map[string]any{"decision": "block"})
	if _, err := l.ReadVerified("s1"); err != nil { // the state now covers all
		t.Fatal(err)
	}
	appendN(t, l, "s1", 3) // and these come after it
	all := fullEntries(t, l, "s1")
	for _, tc := range []struct {
		name  string
		after uint64
	}{{"after the pass", pass.Seq}, {"after the last entry", uint64(len(all) - 1)}, {"after seq 3", 3}} {
		t.Run(tc.name, func(t *testing.T) {
			var gotIndexed []uint64
			got, err := l.ReadRelevant("s1", func(es []*Entry) uint64 {
				for _, e := range es {
					gotIndexed = append(gotIndexed, e.Seq)
				}
				return tc.after
			})
			if err != nil {
				t.Fatal(err)
			}
			if want := []uint64{pass.Seq, uint64(len(all) - 1)}; !reflect.DeepEqual(gotIndexed, want) {
				t.Fatalf("indexed = %v, want %v", gotIndexed, want)
			}
			var want []*Entry
			for _, e := range all {
				if e.Seq > tc.after || e.Kind == KindValidatorPass || e.Seq == uint64(len(all)-1) {
					want = append(want, e)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got seqs %v, want %v", seqs(got), seqs(want))
			}
		})
	}
	if l.testingOnlyFullReads != 0 {
		t.Fatalf("%d full reads", l.testingOnlyFullReads)
	}
}

func seqs(es []*Entry) []uint64 {
	var out []uint64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

// Edits to entries the gate reads are caught by ReadRelevant; an edit to
// one it does not read is caught by ReadVerified and Verify.
func TestReadRelevantTamper(t *testing.T) {
	build := func(t *testing.T) (*Ledger, *Entry) {
		l := newTestLedger(t)
		appendN(t, l, "s1", 4)
		pass := appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
		appendN(t, l, "s1", 4)
		if _, err := l.ReadVerified("s1"); err != nil {
			t.Fatal(err)
		}
		return l, pass
	}
	for _, tc := range []struct {
		name         string
		line         int
		old, new     string
		relevantSees bool
	}{
		{"pass claim (same length)", 4, `"claim":"done"`, `"claim":"gone"`, true},
		{"write after the pass", 6, `"tool":"Bash"`, `"tool":"Edit"`, true},
		{"call before the pass", 1, `"tool":"Bash"`, `"tool":"Edit"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, pass := build(t)
			rewrite(t, l, "s1", func(ls []string) []string {
				if !strings.Contains(ls[tc.line], tc.old) {
					t.Fatalf("line %d lacks %s", tc.line, tc.old)
				}
				ls[tc.line] = resign(ls[tc.line], tc.old, tc.new)
				return ls
			})
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
			if rep, _ := Verify(l.home, "s1", verifyOpts(l)); rep.OK {
				t.Fatal("Verify accepted an edited prefix")
			}
		})
	}
}

// An index the state vouches for cannot be emptied by editing the state:
// the MAC covers it.
func TestStateIndexIsMACd(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 2)
	appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
	appendN(t, l, "s1", 2)
	l.ReadVerified("s1")
	path := statePath(filesFor(l.home, "s1"))
	st, _ := os.ReadFile(path)
	if !strings.Contains(string(st), "index validator_pass 2 ") {
		t.Fatalf("state has no index line:\n%s", st)
	}
	var kept []string
	for _, ln := range strings.Split(string(st), "\n") {
		if !strings.HasPrefix(ln, "index ") {
			kept = append(kept, ln)
		}
	}
	os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o600)
	got, err := l.ReadRelevant("s1", func(es []*Entry) uint64 {
		for _, e := range es {
			if e.Kind == KindValidatorPass {
				return e.Seq
			}
		}
		return es[len(es)-1].Seq
	})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range got {
		found = found || e.Kind == KindValidatorPass
	}
	if !found {
		t.Fatal("the pass vanished with its index line")
	}
}

// parseHashed agrees with the strict parser on good lines, and any byte
// changed outside the mac value makes it fail.
func TestParseHashed(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 2)
	appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass", "detail": "a \"quoted\" \\ value,\"hash\":\""})
	b, _ := os.ReadFile(l.home.LedgerPath("s1"))
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		want, err := ParseEntry([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseHashed([]byte(line))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("parseHashed = %+v, %v; want %+v", got, err, want)
		}
		macAt := strings.LastIndex(line, `"mac":"`) + len(`"mac":"`)
		for i := range line {
			if i >= macAt && i < macAt+64 {
				continue
			}
			for _, c := range []byte{'x', '0', ' '} {
				if line[i] == c {
					continue
				}
				bad := []byte(line)
				bad[i] = c
				if e, err := parseHashed(bad); err == nil {
					t.Fatalf("byte %d changed to %q: accepted %+v", i, c, e)
				}
			}
		}
	}
}

// Lines removed from or added to the prefix move what the state points at:
// the gate's read falls back to a full verification and fails.
func TestReadRelevantPrefixShifted(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func([]string) []string
	}{
		{"line removed", func(ls []string) []string { return append(ls[:1], ls[2:]...) }},
		{"line duplicated", func(ls []string) []string { return append(ls[:2], ls[1:]...) }},
		{"garbage inserted", func(ls []string) []string { return append(ls[:1], append([]string{"{}"}, ls[1:]...)...) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLedger(t)
			appendN(t, l, "s1", 3)
			pass := appendKind(t, l, "s1", KindValidatorPass, map[string]any{"claim": "done", "result": "pass"})
			appendN(t, l, "s1", 3)
			if _, err := l.ReadVerified("s1"); err != nil {
				t.Fatal(err)
			}
			rewrite(t, l, "s1", tc.edit)
			full := l.testingOnlyFullReads
			if _, err := l.ReadRelevant("s1", func([]*Entry) uint64 { return pass.Seq }); err == nil {
				t.Fatal("ReadRelevant accepted a shifted prefix")
			}
			if l.testingOnlyFullReads != full+1 {
				t.Fatal("no fallback to a full verification")
			}
		})
	}
}

// resign replaces old with new in an entry line and recomputes its hash,
// as an attacker without the key can (the MAC stays the old one).
func resign(line, old, new string) string {
	e, _ := ParseEntry([]byte(strings.Replace(line, old, new, 1)))
	e.Hash, _ = entryHash(e)
	b, _ := encodeEntry(e)
	return string(b)
}
