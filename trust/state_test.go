package trust

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

func day(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour) }

const agent = "claude/main"

// approvals returns n approvals of Bash (reversible_write) spread over
// the hour after t.
func approvals(t time.Time, n int, prefix string) []Signal {
	var out []Signal
	for i := 0; i < n; i++ {
		out = append(out, Signal{ID: fmt.Sprintf("%s-%d", prefix, i), Time: t.Add(time.Duration(i) * time.Minute),
			Agent: agent, Tool: "Bash", Class: "reversible_write", Rating: 1, Why: "approved"})
	}
	return out
}

func reject(t time.Time, id string, high bool) Signal {
	return Signal{ID: id, Time: t, Agent: agent, Tool: "Bash", Class: "reversible_write", Misaligned: true, High: high, Why: "rejected"}
}

// daily gives n approvals on each of days [from, to).
func daily(from, to, n int) []Signal {
	var out []Signal
	for d := from; d < to; d++ {
		out = append(out, approvals(day(d), n, fmt.Sprintf("d%d", d))...)
	}
	return out
}

func level(s *State, scope string) int {
	ks := s.Keys[KeyName(agent, scope)]
	if ks == nil {
		return 0
	}
	return ks.Level
}

func TestGraduation(t *testing.T) {
	p := DefaultPolicy()
	tests := []struct {
		name string
		sigs []Signal
		at   time.Time
		want int
	}{
		{"new key starts at review-all", nil, day(0), 0},
		{"29 days of approvals are not enough", daily(0, 40, 3), day(29), 0},
		{"30 days held graduate once", daily(0, 40, 3), day(30), 1},
		{"each further hold graduates again", daily(0, 130, 1), day(60).Add(time.Hour), 2},
		{"four holds reach autonomous", daily(0, 130, 1), day(125), 4},
		{"too few actions do not graduate", approvals(day(0), 5, "few"), day(45), 0},
		{"the volume arriving later graduates at once", append(approvals(day(0), 5, "few"), approvals(day(40), 15, "more")...), day(40).Add(time.Hour), 1},
		{"a high-priority misalignment restarts the hold", append(daily(0, 60, 3), reject(day(20), "r", true)), day(49), 0},
		{"the restarted hold completes", append(daily(0, 60, 3), reject(day(20), "r", true)), day(51), 1},
		{"a low-priority misalignment does not restart the hold", append(daily(0, 60, 3), reject(day(20), "r", false)), day(31), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState()
			var due []Signal
			for _, sg := range tt.sigs {
				if !sg.Time.After(tt.at) {
					due = append(due, sg)
				}
			}
			s.Advance(&p, due, tt.at)
			if got := level(s, ToolScope("Bash")); got != tt.want {
				t.Errorf("level = %d, want %d (score %.3f, history %+v)", got, tt.want, s.Keys[KeyName(agent, ToolScope("Bash"))].Score, s.History)
			}
		})
	}
}

// at4 is a state whose Bash key graduated to level 4.
func at4(t *testing.T, p *Policy) *State {
	s := NewState()
	s.Advance(p, daily(0, 125, 10), day(125))
	if got := level(s, ToolScope("Bash")); got != 4 {
		t.Fatalf("setup: level %d, want 4", got)
	}
	return s
}

func TestDemotion(t *testing.T) {
	p := DefaultPolicy()
	burst := func(n int, spread time.Duration) []Signal {
		var out []Signal
		for i := 0; i < n; i++ {
			out = append(out, reject(day(125).Add(time.Duration(i)*spread), fmt.Sprintf("b%d", i), false))
		}
		return out
	}
	tests := []struct {
		name  string
		sigs  []Signal
		at    time.Time
		scope string
		want  int
	}{
		{"four misalignments in 24h keep the level", burst(4, time.Hour), day(126), ToolScope("Bash"), 4},
		{"five misalignments in 24h demote one level", burst(5, time.Hour), day(126), ToolScope("Bash"), 3},
		{"ten in 24h demote twice (one per burst)", burst(10, time.Hour), day(126), ToolScope("Bash"), 2},
		{"five spread over two days do not", burst(5, 10*time.Hour), day(128), ToolScope("Bash"), 4},
		{"critical: every key of the agent to level 0",
			[]Signal{{ID: "crit", Time: day(125).Add(time.Hour), Agent: agent, Tool: "Read", Class: "read_only", Misaligned: true, High: true, Critical: true, Why: "critical: builtin:keys_read"}},
			day(125).Add(2 * time.Hour), ToolScope("Bash"), 0},
		{"critical of another agent changes nothing",
			[]Signal{{ID: "crit", Time: day(125).Add(time.Hour), Agent: "claude/Explore", Tool: "Read", Misaligned: true, High: true, Critical: true, Why: "critical"}},
			day(125).Add(2 * time.Hour), ToolScope("Bash"), 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := at4(t, &p)
			s.Advance(&p, tt.sigs, tt.at)
			if got := level(s, tt.scope); got != tt.want {
				t.Errorf("level = %d, want %d; history %+v", got, tt.want, s.History[len(s.History)-1])
			}
		})
	}
}

func TestScoreDropsToQualifyingLevel(t *testing.T) {
	p := DefaultPolicy()
	p.BurstCount = 1 << 20 // only the score rule demotes here
	s := at4(t, &p)
	// 1,250 approvals over 125 days; a day of rejections, weighted as the
	// newest, pulls the score under 0.90 but not under 0.80
	var sigs []Signal
	for i := 0; i < 70; i++ {
		sigs = append(sigs, reject(day(125).Add(time.Duration(i)*time.Minute+time.Hour), fmt.Sprintf("x%d", i), false))
	}
	s.Advance(&p, sigs, day(125).Add(3*time.Hour))
	ks := s.Keys[KeyName(agent, ToolScope("Bash"))]
	if ks.Score < 0.80 || ks.Score >= 0.90 {
		t.Fatalf("setup: score %.3f should be in [0.80, 0.90)", ks.Score)
	}
	if ks.Level != 2 {
		t.Errorf("level %d with score %.3f, want 2", ks.Level, ks.Score)
	}
	last := s.History[len(s.History)-1]
	if last.To != 2 || !strings.HasPrefix(last.Reason, "score") {
		t.Errorf("last change %+v, want -> 2 by score", last)
	}

	// one rejection among five approvals: 0.833 skips level 3
	p = DefaultPolicy()
	p.MinActions, p.GraduationDays = 1, 1
	s = NewState()
	s.Advance(&p, approvals(day(0), 5, "a"), day(5))
	if got := level(s, ToolScope("Bash")); got != 4 {
		t.Fatalf("setup: level %d, want 4", got)
	}
	s.Advance(&p, []Signal{reject(day(5).Add(time.Hour), "r", false)}, day(5).Add(2*time.Hour))
	last = s.History[len(s.History)-1]
	if got := level(s, ToolScope("Bash")); got != 2 || last.From != 4 || last.To != 2 {
		t.Errorf("level %d (last change %+v), want 4 -> 2 at once", got, last)
	}
}

func TestScore(t *testing.T) {
	p := DefaultPolicy()
	tests := []struct {
		name     string
		sigs     []Signal
		at       time.Time
		min, max float64
		actions  int
	}{
		{"all approvals", approvals(day(0), 10, "a"), day(0).Add(time.Hour), 1, 1, 10},
		{"neutral signals are not rated", append(approvals(day(0), 10, "a"),
			Signal{ID: "m", Time: day(0), Agent: agent, Tool: "Bash", Neutral: true, Why: "modified"},
			Signal{ID: "e", Time: day(0), Agent: agent, Tool: "Bash", Neutral: true, Why: "expired"}), day(0).Add(time.Hour), 1, 1, 10},
		{"half rejected", append(approvals(day(0), 5, "a"), reject(day(0), "1", false), reject(day(0), "2", false),
			reject(day(0), "3", false), reject(day(0), "4", false), reject(day(0), "5", false)), day(0).Add(time.Hour), 0.5, 0.5, 10},
		{"recent days weigh more", append(approvals(day(60), 10, "new"), func() []Signal {
			var out []Signal
			for i := 0; i < 10; i++ {
				out = append(out, reject(day(0).Add(time.Duration(i)*time.Hour), fmt.Sprint("old", i), false))
			}
			return out
		}()...), day(60).Add(time.Hour), 0.79, 0.81, 20},
		{"the 90-day window forgets", append(approvals(day(100), 10, "new"), reject(day(0), "old", false)), day(100).Add(time.Hour), 1, 1, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewState()
			s.Advance(&p, tt.sigs, tt.at)
			ks := s.Keys[KeyName(agent, ToolScope("Bash"))]
			if ks.Score < tt.min || ks.Score > tt.max || ks.Actions != tt.actions {
				t.Errorf("score %.4f actions %d, want [%g, %g] and %d", ks.Score, ks.Actions, tt.min, tt.max, tt.actions)
			}
		})
	}
}

func TestAdvanceDeterministic(t *testing.T) {
	p := DefaultPolicy()
	sigs := append(daily(0, 70, 4), reject(day(33), "r1", true), reject(day(34), "r2", false))
	var outs []string
	for _, order := range [][]Signal{sigs, reverse(sigs)} {
		s := NewState()
		s.Advance(&p, order, day(70))
		b, _ := json.Marshal(s)
		outs = append(outs, string(b))
	}
	if outs[0] != outs[1] {
		t.Error("the same signals in another order gave another state")
	}
	// advancing in two steps gives the same levels as in one
	s1, s2 := NewState(), NewState()
	s1.Advance(&p, sigs, day(70))
	var a, b []Signal
	for _, sg := range sigs {
		if sg.Time.Before(day(35)) {
			a = append(a, sg)
		} else {
			b = append(b, sg)
		}
	}
	s2.Advance(&p, a, day(35))
	s2.Advance(&p, b, day(70))
	if level(s1, ToolScope("Bash")) != level(s2, ToolScope("Bash")) || len(s1.History) != len(s2.History) {
		t.Errorf("stepwise: level %d (%d changes), at once: %d (%d changes)", level(s2, ToolScope("Bash")), len(s2.History), level(s1, ToolScope("Bash")), len(s1.History))
	}
}

func TestAppliedOnce(t *testing.T) {
	p := DefaultPolicy()
	s := at4(t, &p)
	crit := Signal{ID: "rt_x", Time: day(125).Add(time.Hour), Agent: agent, Tool: "Read", Misaligned: true, High: true, Critical: true, Why: "critical"}
	s.Advance(&p, []Signal{crit}, day(125).Add(time.Hour))
	n := len(s.History)
	s.Advance(&p, []Signal{crit}, day(125).Add(2*time.Hour))
	if len(s.History) != n {
		t.Errorf("a critical signal applied twice: %d changes, then %d", n, len(s.History))
	}
}

func TestSummaryLazyLevel(t *testing.T) {
	p := DefaultPolicy()
	s := NewState()
	s.Advance(&p, daily(0, 25, 2), day(25))
	sm := s.Summary(&p)
	tests := []struct {
		at   time.Time
		want int
	}{{day(25), 0}, {day(29).Add(23 * time.Hour), 0}, {day(30), 1}, {day(60), 2}, {day(200), 4}}
	for _, tt := range tests {
		k, ok := sm.Level(agent, ToolScope("Bash"), tt.at)
		if !ok || k.Level != tt.want {
			t.Errorf("at %s: level %d, want %d", tt.at.Format(time.DateOnly), k.Level, tt.want)
		}
	}
	if _, ok := sm.Level(agent, ToolScope("Write"), day(200)); ok {
		t.Error("an unknown key has a level")
	}
}

func reverse(s []Signal) []Signal {
	out := make([]Signal, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}
