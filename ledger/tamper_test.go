package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite applies edit to the session's ledger lines and writes them back.
func rewrite(t *testing.T, l *Ledger, session string, edit func(lines []string) []string) {
	t.Helper()
	p := l.home.LedgerPath(session)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	lines = edit(lines)
	out := strings.Join(lines, "\n")
	if len(lines) > 0 {
		out += "\n"
	}
	if err := os.WriteFile(p, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestTamperDetection(t *testing.T) {
	tests := []struct {
		name    string
		tamper  func(t *testing.T, l *Ledger)
		wantSeq int64
		want    string
	}{
		{"truncated artifact pack", func(t *testing.T, l *Ledger) {
			es, _ := l.ReadVerified("s1")
			os.Truncate(filepath.Join(l.home.SessionArtifactsDir("s1"), PackName), es[2].Artifacts-1)
		}, 2, "artifact bundle missing from the pack"},
		{"missing artifact pack", func(t *testing.T, l *Ledger) {
			os.Remove(filepath.Join(l.home.SessionArtifactsDir("s1"), PackName))
		}, 0, "artifact pack missing"},
		{"edited field", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string {
				ls[2] = strings.Replace(ls[2], `"tool":"Bash"`, `"tool":"Read"`, 1)
				return ls
			})
		}, 2, "hash mismatch"},
		{"edited field with recomputed hash", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string {
				e, _ := ParseEntry([]byte(ls[2]))
				e.Tool = "Read"
				e.Hash, _ = entryHash(e)
				b, _ := encodeEntry(e)
				ls[2] = string(b)
				return ls
			})
		}, 2, "HMAC mismatch"},
		{"deleted entry", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string { return append(ls[:2], ls[3:]...) })
		}, 2, "seq gap"},
		{"swapped entries", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string { ls[1], ls[2] = ls[2], ls[1]; return ls })
		}, 1, "seq gap"},
		{"duplicated entry", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string {
				return append(ls[:3], append([]string{ls[2]}, ls[3:]...)...)
			})
		}, 3, "seq duplicate"},
		{"spliced from another session", func(t *testing.T, l *Ledger) {
			other := appendN(t, l, "s2", 5)
			_ = other
			b, _ := os.ReadFile(l.home.LedgerPath("s2"))
			foreign := strings.Split(string(b), "\n")[2]
			rewrite(t, l, "s1", func(ls []string) []string { ls[2] = foreign; return ls })
		}, 2, "wrong session"},
		{"replay from another session, relabelled", func(t *testing.T, l *Ledger) {
			appendN(t, l, "s2", 5)
			b, _ := os.ReadFile(l.home.LedgerPath("s2"))
			foreign := strings.Split(string(b), "\n")[2]
			rewrite(t, l, "s1", func(ls []string) []string {
				ls[2] = strings.Replace(foreign, `"session":"s2"`, `"session":"s1"`, 1)
				return ls
			})
		}, 2, "chain broken"},
		{"truncated tail, head kept", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string { return ls[:3] })
		}, 3, "ledger truncated"},
		{"truncated tail, head removed", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string { return ls[:3] })
			os.Remove(filesFor(l.home, "s1").head)
		}, -1, "head missing"},
		{"torn line", func(t *testing.T, l *Ledger) {
			f, _ := os.OpenFile(l.home.LedgerPath("s1"), os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(`{"v":1,"seq":5,"sess`)
			f.Close()
		}, 5, "torn tail"},
		{"edited artifact", func(t *testing.T, l *Ledger) {
			p := filepath.Join(l.home.SessionArtifactsDir("s1"), PackName)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte("out 1"), []byte("out 9"), 1), 0o600)
		}, 1, "artifact stdout: digest mismatch"},
		{"forged MAC", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string {
				e, _ := ParseEntry([]byte(ls[4]))
				e.MAC = mac(bytes.Repeat([]byte{7}, 32), e.Session, e.Seq, e.Hash)
				b, _ := encodeEntry(e)
				ls[4] = string(b)
				return ls
			})
		}, 4, "HMAC mismatch"},
		{"rolled-back head", func(t *testing.T, l *Ledger) {
			sf := filesFor(l.home, "s1")
			old, _ := os.ReadFile(sf.head)
			appendN(t, l, "s1", 1)
			os.WriteFile(sf.head, old, 0o600)
		}, 5, "head behind"},
		{"non-canonical encoding", func(t *testing.T, l *Ledger) {
			rewrite(t, l, "s1", func(ls []string) []string {
				ls[0] = strings.Replace(ls[0], `{"v":1,`, `{"v":1, `, 1)
				return ls
			})
		}, 0, "not canonically encoded"},
	}
	for _, warm := range []bool{false, true} {
		for _, tt := range tests {
			name := tt.name
			if warm {
				// A reader verified the ledger before the tampering: the
				// verified-prefix state must not vouch for the change.
				name += " after a verified read"
			}
			t.Run(name, func(t *testing.T) {
				l := newTestLedger(t)
				appendN(t, l, "s1", 5)
				if warm {
					if _, err := l.ReadVerified("s1"); err != nil {
						t.Fatal(err)
					}
					if _, err := os.Stat(statePath(filesFor(l.home, "s1"))); err != nil {
						t.Fatalf("no verified-prefix state: %v", err)
					}
				}
				tt.tamper(t, l)
				rep, err := Verify(l.home, "s1", verifyOpts(l))
				if err != nil {
					t.Fatal(err)
				}
				if rep.OK {
					t.Fatal("tampered ledger verified")
				}
				if rep.Failure.Seq != tt.wantSeq || !strings.Contains(rep.Failure.Reason, tt.want) {
					t.Fatalf("failure = seq %d %q, want seq %d containing %q", rep.Failure.Seq, rep.Failure.Reason, tt.wantSeq, tt.want)
				}
				es, err := l.ReadVerified("s1")
				if tt.name == "edited artifact" {
					// ReadVerified checks manifests; the edited file is caught
					// when opened.
					if err != nil {
						t.Fatal(err)
					}
					if _, err := l.OpenArtifact(es[1], "stdout"); err == nil {
						t.Fatal("OpenArtifact returned an edited artifact")
					}
					return
				}
				if err == nil {
					t.Fatal("ReadVerified accepted a tampered ledger")
				}
			})
		}
	}
}

func TestVerifyWithoutHMACKey(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 3)
	rep, err := Verify(l.home, "s1", VerifyOptions{VerifierKey: l.keys.VerifierKey()})
	if err != nil || !rep.OK {
		t.Fatalf("verify without key: %v %+v", err, rep)
	}
	if len(rep.NotChecked) == 0 || !strings.Contains(rep.NotChecked[0], "hmac") {
		t.Fatalf("report does not say HMAC was not checked: %v", rep.NotChecked)
	}
	// Without the key an edited hash still fails: the chain catches it.
	rewrite(t, l, "s1", func(ls []string) []string {
		e, _ := ParseEntry([]byte(ls[1]))
		e.Tool = "Write"
		e.Hash, _ = entryHash(e)
		b, _ := encodeEntry(e)
		ls[1] = string(b)
		return ls
	})
	rep, _ = Verify(l.home, "s1", VerifyOptions{VerifierKey: l.keys.VerifierKey()})
	if rep.OK || rep.Failure.Seq != 2 || !strings.Contains(rep.Failure.Reason, "chain broken") {
		t.Fatalf("keyless verify of re-hashed edit = %+v", rep.Failure)
	}
}

func TestTornTailIsSealed(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 3)
	f, _ := os.OpenFile(l.home.LedgerPath("s1"), os.O_APPEND|os.O_WRONLY, 0)
	torn := `{"v":1,"seq":3,"session":"s1","ti`
	f.WriteString(torn)
	f.Close()
	appendN(t, l, "s1", 1)
	es, err := l.ReadVerified("s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 5 || es[3].Kind != KindSeal || es[4].Kind != KindToolCall {
		t.Fatalf("after seal: %d entries, kinds %v %v", len(es), es[3].Kind, es[4].Kind)
	}
	r, err := l.OpenArtifact(es[3], "torn")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 100)
	n, _ := r.Read(b)
	r.Close()
	if string(b[:n]) != torn {
		t.Fatalf("sealed bytes = %q, want %q", b[:n], torn)
	}
}

func TestCrashBeforeHeadIsAdopted(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 2)
	sf := filesFor(l.home, "s1")
	old, _ := os.ReadFile(sf.head)
	appendN(t, l, "s1", 1)
	os.WriteFile(sf.head, old, 0o600) // as if the process died before renaming the head
	appendN(t, l, "s1", 1)
	es, err := l.ReadVerified("s1")
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		if e.Kind != KindToolCall {
			t.Fatalf("entry %d is %s: a complete valid entry must be adopted, not sealed", i, e.Kind)
		}
	}
	if len(es) != 4 {
		t.Fatalf("%d entries, want 4", len(es))
	}
}

func TestAppendRefusesTruncatedLedger(t *testing.T) {
	l := newTestLedger(t)
	appendN(t, l, "s1", 3)
	rewrite(t, l, "s1", func(ls []string) []string { return ls[:1] })
	if _, err := l.Append("s1", Record{Kind: KindToolCall}); err == nil || !strings.Contains(err.Error(), "shorter than its signed head") {
		t.Fatalf("append to truncated ledger = %v", err)
	}
}

func TestAppendRejectsBadInput(t *testing.T) {
	l := newTestLedger(t)
	for _, tt := range []struct {
		session string
		r       Record
	}{
		{"../x", Record{Kind: KindToolCall}},
		{"", Record{Kind: KindToolCall}},
		{"s", Record{}},
		{"s", Record{Kind: KindToolCall, Args: []byte(`{"a":`)}},
		{"s", Record{Kind: KindToolCall, Body: []int{1}}},
		{"s", Record{Kind: KindToolCall, Artifacts: []Artifact{{Name: "../evil", Data: strings.NewReader("x")}}}},
	} {
		if _, err := l.Append(tt.session, tt.r); err == nil {
			t.Errorf("Append(%q, %+v) succeeded", tt.session, tt.r)
		}
	}
	if _, err := os.Stat(l.home.LedgerPath("s")); err == nil {
		b, _ := os.ReadFile(l.home.LedgerPath("s"))
		if len(b) != 0 {
			t.Fatalf("rejected appends left entries: %q", b)
		}
	}
}
