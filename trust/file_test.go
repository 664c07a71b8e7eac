package trust

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

func testStore(t *testing.T) (*Store, *ledger.Ledger) {
	t.Helper()
	h, err := home.At(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	return &Store{Home: h, Keys: l.Keys()}, l
}

func appendDecision(t *testing.T, l *ledger.Ledger, session, tool string, body map[string]any) {
	t.Helper()
	if _, err := l.Append(session, ledger.Record{Kind: ledger.KindJudgeDecision, Runtime: "claude", Event: "PreToolUse", Tool: tool, Body: body}); err != nil {
		t.Fatal(err)
	}
}

func TestRefresh(t *testing.T) {
	st, l := testStore(t)
	p := DefaultPolicy()
	for i := 0; i < 3; i++ {
		appendDecision(t, l, "s1", "Bash", decision("escalate", "approval_granted", "reversible_write"))
	}
	now := time.Now()
	s, err := st.Refresh(&p, now)
	if err != nil {
		t.Fatal(err)
	}
	if ks := s.Keys[KeyName("claude/main", ToolScope("Bash"))]; ks == nil || ks.Actions != 3 || ks.Score != 1 {
		t.Fatalf("after the first refresh: %+v", ks)
	}
	// a second refresh reads only what was added
	appendDecision(t, l, "s1", "Bash", decision("escalate", "approval_denied", "reversible_write"))
	s, err = st.Refresh(&p, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if ks := s.Keys[KeyName("claude/main", ToolScope("Bash"))]; ks.Actions != 4 || ks.Score >= 1 {
		t.Fatalf("after the second refresh: %+v", ks)
	}
	// the summary the judge reads agrees
	sm, err := LoadSummary(st.Home, st.Keys)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := sm.Level("claude/main", ToolScope("Bash"), now); !ok || k.Actions != 4 {
		t.Errorf("summary: %+v %v", k, ok)
	}
}

func TestRecordCriticalAtOnce(t *testing.T) {
	st, _ := testStore(t)
	p := DefaultPolicy()
	p.MinActions, p.GraduationDays = 1, 1
	now := time.Now()
	if err := st.Record(&p, approvals(now.Add(-10*24*time.Hour), 5, "a"), now); err != nil {
		t.Fatal(err)
	}
	sm, _ := LoadSummary(st.Home, st.Keys)
	if k, _ := sm.Level(agent, ToolScope("Bash"), now); k.Level != 4 {
		t.Fatalf("setup: level %d", k.Level)
	}
	crit := Signal{ID: "rt_1", Time: now, Agent: agent, Tool: "Read", Misaligned: true, High: true, Critical: true, Why: "critical: builtin:keys_read"}
	if err := st.Record(&p, []Signal{crit}, now); err != nil {
		t.Fatal(err)
	}
	sm, _ = LoadSummary(st.Home, st.Keys)
	if k, _ := sm.Level(agent, ToolScope("Bash"), now); k.Level != 0 {
		t.Errorf("after a critical violation: level %d, want 0", k.Level)
	}
	// the hold starts over: one level back a day later
	if k, _ := sm.Level(agent, ToolScope("Bash"), now.Add(25*time.Hour)); k.Level != 1 {
		t.Errorf("a day after: level %d, want 1", k.Level)
	}
}

// An agent that edits the trust files to raise its level gets level 0.
func TestForgedTrustFiles(t *testing.T) {
	st, l := testStore(t)
	p := DefaultPolicy()
	p.MinActions, p.GraduationDays = 1, 0
	appendDecision(t, l, "s1", "Bash", decision("escalate", "approval_denied", "reversible_write"))
	now := time.Now()
	if _, err := st.Refresh(&p, now); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(st.Home.Root, Dir)
	levels := filepath.Join(dir, LevelsFile)
	orig, _ := os.ReadFile(levels)

	forge := func(b []byte) []byte {
		// every key line's level raised to 4, the MAC line kept
		var out []string
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if f := strings.Fields(l); len(f) == 7 && f[0] == "key" {
				f[3] = "4"
				l = strings.Join(f, " ") + "\n"
			}
			out = append(out, l)
		}
		return []byte(strings.Join(out, ""))
	}
	foreignKey := func(b []byte) []byte {
		// the same levels raised, MAC'd under another state root's key
		other, _ := testStore(t)
		sm, err := parseSummary(b, st.Keys)
		if err != nil {
			t.Fatal(err)
		}
		sm.Keys[KeyName("claude/main", ToolScope("Bash"))] = SummaryKey{Level: 4, Score: 1, Actions: 100}
		return sm.encode(other.Keys)
	}
	stateAsLevels := func([]byte) []byte {
		// a valid state.json does not pass as the levels file
		b, _ := os.ReadFile(filepath.Join(dir, StateFile))
		return b
	}
	macOnly := func(b []byte) []byte {
		// a key line appended after the MAC line
		return append(append([]byte(nil), b...), []byte("key claude%2Fmain tool:Bash 4 1.000000 100 0\n")...)
	}
	tests := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"level raised in place", forge},
		{"sealed with another key", foreignKey},
		{"state file copied over the summary", stateAsLevels},
		{"torn", func(b []byte) []byte { return b[:len(b)/2] }},
		{"line after the MAC", macOnly},
		{"not JSON", func([]byte) []byte { return []byte("level 4\n") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := os.WriteFile(levels, tt.edit(orig), 0o600); err != nil {
				t.Fatal(err)
			}
			sm, err := LoadSummary(st.Home, st.Keys)
			if !errors.Is(err, ErrForged) {
				t.Errorf("err = %v, want ErrForged", err)
			}
			if k, _ := sm.Level("claude/main", ToolScope("Bash"), now); k.Level != 0 {
				t.Errorf("forged summary gave level %d", k.Level)
			}
		})
	}

	// a forged state file is discarded and the state rebuilt from the
	// ledger, which still holds the rejection
	sb, _ := os.ReadFile(filepath.Join(dir, StateFile))
	sb = bytes.ReplaceAll(sb, []byte(`"level":0`), []byte(`"level":4`))
	if err := os.WriteFile(filepath.Join(dir, StateFile), sb, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Load(); !errors.Is(err, ErrForged) {
		t.Errorf("forged state loaded: %v", err)
	}
	s, err := st.Refresh(&p, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ks := s.Keys[KeyName("claude/main", ToolScope("Bash"))]
	if ks == nil || ks.Level != 0 || ks.Actions != 1 || len(s.Warnings) == 0 {
		t.Errorf("rebuilt state: %+v, warnings %v", ks, s.Warnings)
	}
}

func TestLoadPolicy(t *testing.T) {
	h, _ := home.At(t.TempDir())
	_ = os.MkdirAll(h.PoliciesDir(), 0o700)
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(h.PoliciesDir(), PolicyFile), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := LoadPolicy(h)
	def := DefaultPolicy()
	if err != nil || p.Mode != ModeObserve || p.Digest() != def.Digest() {
		t.Fatalf("no file: %+v %v", p, err)
	}
	write("mode: enforce\nmin_actions: 50\nsample_rate: 0.5\n")
	p, err = LoadPolicy(h)
	if err != nil || p.Mode != ModeEnforce || p.MinActions != 50 || p.SampleRate != 0.5 || p.Thresholds[0] != 0.70 {
		t.Fatalf("file: %+v %v", p, err)
	}
	for _, bad := range []string{"mode: lax\n", "thresholds: [0.9, 0.8, 0.95, 0.99]\n", "sample_rate: 2\n", "unknown_field: 1\n", "mode: [\n"} {
		write(bad)
		p, err := LoadPolicy(h)
		if err == nil || p.Mode != ModeEnforce {
			t.Errorf("%q: mode %s err %v, want enforce (fail closed) and an error", bad, p.Mode, err)
		}
	}
}

func TestMatchRule(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"builtin:keys_read", "builtin:keys_read", true},
		{"builtin:keys_read", "builtin:keys_readx", false},
		{"*pii*", "directive:PRIVACY_NO_PII", true},
		{"directive:*secret*", "directive:no_secrets_outbound", true},
		{"directive:*secret*", "rule:secret", false},
		{"*pii*", "rule:pipeline", false},
	}
	for _, tt := range tests {
		if got := matchRule(tt.pat, tt.s); got != tt.want {
			t.Errorf("matchRule(%q, %q) = %v", tt.pat, tt.s, got)
		}
	}
}

// FuzzParseSummary: no input panics the parser, and without the key's
// MAC nothing parses.
func FuzzParseSummary(f *testing.F) {
	h, _ := home.At(f.TempDir())
	if _, err := ledger.Init(h); err != nil {
		f.Fatal(err)
	}
	keys, _ := ledger.LoadKeys(h)
	p := DefaultPolicy()
	s := NewState()
	s.Advance(&p, approvals(t0, 3, "a"), t0.Add(time.Hour))
	valid := s.Summary(&p).encode(keys)
	f.Add(valid)
	f.Add([]byte("docket-trust-levels v1\nmac x y\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sm, err := parseSummary(b, keys)
		if err != nil {
			return
		}
		// it verified: its lines must be the ones the key holder wrote
		body := valid[:bytes.LastIndex(valid, []byte("\nmac "))+1]
		if !bytes.HasPrefix(b, body) {
			t.Fatalf("an altered file parsed: %q", b)
		}
		if k, ok := sm.Level(agent, ToolScope("Bash"), t0.Add(time.Hour)); !ok || k.Actions != 3 {
			t.Fatalf("lookup %+v %v", k, ok)
		}
	})
}

// An origin file the agent wrote (no key) or copied from another
// session is not used.
func TestForgedOrigin(t *testing.T) {
	st, _ := testStore(t)
	h := st.Home
	if err := WriteOrigin(h, st.Keys, Origin{OTag: "ot_real", Session: "s1", Seq: 4}); err != nil {
		t.Fatal(err)
	}
	if o, ok, err := ReadOrigin(h, st.Keys, "s1"); !ok || err != nil || o.OTag != "ot_real" {
		t.Fatalf("honest origin: %+v %v %v", o, ok, err)
	}
	path := filepath.Join(h.RunDir(), "origin", "s1.json")
	b, _ := os.ReadFile(path)
	for name, forged := range map[string][]byte{
		"o_tag replaced": bytes.Replace(b, []byte("ot_real"), []byte("ot_fake"), 1),
		"hand-written":   []byte(`{"v":1,"key_id":"hk1-0","mac":"00","payload":{"o_tag":"ot_fake","session":"s1"}}`),
	} {
		if err := os.WriteFile(path, forged, 0o600); err != nil {
			t.Fatal(err)
		}
		if o, ok, _ := ReadOrigin(h, st.Keys, "s1"); ok {
			t.Errorf("%s: origin used: %+v", name, o)
		}
	}
	if _, ok, _ := ReadOrigin(h, st.Keys, "../s1"); ok {
		t.Error("a path as session id")
	}
}

// A writer that holds the lock does not stall a hook past its wait.
func TestLockWaitBounded(t *testing.T) {
	st, _ := testStore(t)
	unlock, err := st.lock()
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	other := &Store{Home: st.Home, Keys: st.Keys, LockWait: 50 * time.Millisecond}
	p := DefaultPolicy()
	start := time.Now()
	err = other.Record(&p, approvals(t0, 1, "a"), t0)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("err %v after %v", err, time.Since(start))
	}
}
