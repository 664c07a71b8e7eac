package trust

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Day is one day's rated signals of a key.
type Day struct {
	// Day counts UTC days since 1970-01-01.
	Day int64   `json:"day"`
	Sum float64 `json:"sum"`
	N   int     `json:"n"`
}

// Mark is one misalignment.
type Mark struct {
	Time time.Time `json:"time"`
	High bool      `json:"high,omitempty"`
	ID   string    `json:"id"`
}

// KeyState is the level of one (agent, scope) and what it rests on.
type KeyState struct {
	Agent string `json:"agent"`
	Scope string `json:"scope"`
	Level int    `json:"level"`
	// Since is when the level was last set.
	Since time.Time `json:"since"`
	// HeldSince is when the score last rose to the next level's
	// threshold (zero when it is below it); the hold restarts after a
	// high-priority misalignment and after every change of level.
	HeldSince time.Time `json:"held_since"`
	// Days are the rated signals per UTC day in the window, oldest first.
	Days []Day `json:"days"`
	// Misaligned lists the misalignments of the last max(burst,
	// graduation) period.
	Misaligned []Mark `json:"misaligned,omitempty"`
	// BurstFloor: misalignments at or before it no longer count toward a
	// burst (a burst demotes once).
	BurstFloor time.Time `json:"burst_floor"`
	LastHigh   time.Time `json:"last_high"`
	// Score and Actions as of the state's clock.
	Score   float64 `json:"score"`
	Actions int     `json:"actions"`
}

// Change is one change of level, kept for `docket trust`.
type Change struct {
	Time   time.Time `json:"time"`
	Agent  string    `json:"agent"`
	Scope  string    `json:"scope"`
	From   int       `json:"from"`
	To     int       `json:"to"`
	Score  float64   `json:"score"`
	Reason string    `json:"reason"`
	Signal string    `json:"signal,omitempty"`
}

// MaxHistory bounds the history kept (oldest dropped first).
const MaxHistory = 2000

// State is every key's level, the read positions in the ledgers and the
// history of changes.
type State struct {
	// Clock is the time the state was advanced to.
	Clock time.Time               `json:"clock"`
	Keys  map[string]*KeyState    `json:"keys"`
	Scans map[string]*SessionScan `json:"sessions"`
	// Applied are ids of signals applied ahead of the ledger scan (a
	// critical violation the judge recorded at once), so the scan does
	// not apply them twice.
	Applied map[string]time.Time `json:"applied,omitempty"`
	History []Change             `json:"history"`
	// Warnings are ledgers that could not be read (they contribute
	// nothing until they verify).
	Warnings []string `json:"warnings,omitempty"`
}

// NewState returns an empty state: every key at level 0.
func NewState() *State {
	return &State{Keys: map[string]*KeyState{}, Scans: map[string]*SessionScan{}, Applied: map[string]time.Time{}}
}

// KeyName joins an agent and a scope into a state key.
func KeyName(agent, scope string) string { return agent + " " + scope }

func (s *State) key(agent, scope string) *KeyState {
	k := KeyName(agent, scope)
	ks := s.Keys[k]
	if ks == nil {
		ks = &KeyState{Agent: agent, Scope: scope}
		s.Keys[k] = ks
	}
	return ks
}

// Advance applies sigs in time order, then moves the clock to now. A
// signal older than the clock is rated on its own day but changes
// levels at the clock (levels never change in the past). Signals whose
// id was already applied are skipped.
func (s *State) Advance(p *Policy, sigs []Signal, now time.Time) {
	sigs = append([]Signal(nil), sigs...)
	sort.SliceStable(sigs, func(i, j int) bool {
		if !sigs[i].Time.Equal(sigs[j].Time) {
			return sigs[i].Time.Before(sigs[j].Time)
		}
		return sigs[i].ID < sigs[j].ID
	})
	for _, sig := range sigs {
		if sig.ID != "" {
			if _, ok := s.Applied[sig.ID]; ok {
				continue
			}
			if sig.Critical {
				s.Applied[sig.ID] = sig.Time
			}
		}
		t := sig.Time
		if t.Before(s.Clock) {
			t = s.Clock
		}
		// other keys change only by due graduations and window expiry,
		// which a day boundary settles (graduations keep their due time)
		if !dayStart(t).Equal(dayStart(s.Clock)) {
			s.tick(p, t)
		} else if t.After(s.Clock) {
			s.Clock = t
		}
		if sig.Critical {
			s.critical(p, sig, t)
		}
		for _, sc := range sig.scopes() {
			s.key(sig.Agent, sc).apply(p, sig, t, s)
		}
	}
	s.tick(p, now)
	for id, t := range s.Applied {
		if now.Sub(t) > p.window() {
			delete(s.Applied, id)
		}
	}
	if len(s.History) > MaxHistory {
		s.History = append([]Change(nil), s.History[len(s.History)-MaxHistory:]...)
	}
}

// tick moves every key to time t: graduations that fell due, window
// expiry.
func (s *State) tick(p *Policy, t time.Time) {
	if t.Before(s.Clock) {
		return
	}
	for _, name := range s.sortedKeys() {
		s.Keys[name].settle(p, t, s)
	}
	s.Clock = t
}

func (s *State) sortedKeys() []string {
	names := make([]string, 0, len(s.Keys))
	for k := range s.Keys {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// critical demotes every key of the signal's agent to level 0.
func (s *State) critical(p *Policy, sig Signal, t time.Time) {
	for _, sc := range sig.scopes() {
		s.key(sig.Agent, sc) // the keys the signal names exist from now on
	}
	for _, name := range s.sortedKeys() {
		ks := s.Keys[name]
		if ks.Agent != sig.Agent {
			continue
		}
		if ks.Level != 0 || ks.Scope == AllScope {
			// at level 0 already: still on record, once (agent-wide)
			s.change(ks, t, 0, "critical violation: "+strings.TrimPrefix(sig.Why, "critical: "), sig.ID)
		}
		ks.Since = t
		ks.HeldSince = time.Time{}
		ks.LastHigh = t
	}
}

func (s *State) change(ks *KeyState, t time.Time, to int, reason, sig string) {
	s.History = append(s.History, Change{Time: t, Agent: ks.Agent, Scope: ks.Scope, From: ks.Level, To: to,
		Score: round(ks.Score), Reason: reason, Signal: sig})
	ks.Level = to
	ks.Since = t
}

// apply rates one signal at time t.
func (ks *KeyState) apply(p *Policy, sig Signal, t time.Time, s *State) {
	if !sig.Neutral {
		if d := dayNum(sig.Time); dayNum(t)-d < int64(p.WindowDays) {
			i := sort.Search(len(ks.Days), func(i int) bool { return ks.Days[i].Day >= d })
			if i == len(ks.Days) || ks.Days[i].Day != d {
				ks.Days = slices.Insert(ks.Days, i, Day{Day: d})
			}
			ks.Days[i].Sum += sig.Rating
			ks.Days[i].N++
		}
	}
	if sig.Misaligned {
		ks.Misaligned = append(ks.Misaligned, Mark{Time: t, High: sig.High, ID: sig.ID})
		if sig.High {
			ks.LastHigh = t
			ks.HeldSince = time.Time{} // the hold starts over
		}
		floor := t.Add(-p.burst())
		if ks.BurstFloor.After(floor) {
			floor = ks.BurstFloor
		}
		n := 0
		for _, m := range ks.Misaligned {
			if m.Time.After(floor) {
				n++
			}
		}
		if n >= p.BurstCount {
			ks.BurstFloor = t
			if ks.Level > 0 {
				ks.Score, ks.Actions = ks.score(p, t)
				s.change(ks, t, ks.Level-1, "burst: "+itoa(n)+" misalignments within "+itoa(p.BurstHours)+"h", sig.ID)
				ks.HeldSince = time.Time{}
			}
		}
	}
	ks.settle(p, t, s)
}

// settle brings a key to time t: due graduations, then the score's
// demotion and the hold of the next threshold.
func (ks *KeyState) settle(p *Policy, t time.Time, s *State) {
	for ks.Level < MaxLevel && !ks.HeldSince.IsZero() {
		due := ks.HeldSince.Add(p.hold())
		if due.After(t) {
			break
		}
		if due.Before(ks.Since) {
			due = ks.Since
		}
		sc, n := ks.score(p, due)
		if sc < p.Threshold(ks.Level+1) {
			ks.HeldSince = time.Time{}
			break
		}
		if n < p.MinActions {
			// the hold is done; graduation waits for the volume, which
			// arrives with a signal (checked again then)
			sc2, n2 := ks.score(p, t)
			if n2 < p.MinActions || sc2 < p.Threshold(ks.Level+1) {
				break
			}
			due, sc = t, sc2
		}
		if !ks.LastHigh.IsZero() && due.Sub(ks.LastHigh) < p.hold() {
			ks.HeldSince = ks.LastHigh
			if ks.HeldSince.Add(p.hold()).After(t) {
				break
			}
			continue
		}
		ks.Score = sc
		s.change(ks, due, ks.Level+1, "graduated: score "+ftoa(sc)+" held "+itoa(p.GraduationDays)+" days", "")
		ks.HeldSince = due
	}
	ks.Score, ks.Actions = ks.score(p, t)
	if ks.Level > 0 && ks.Score < p.Threshold(ks.Level) {
		to := 0
		for l := ks.Level - 1; l >= 1; l-- {
			if ks.Score >= p.Threshold(l) {
				to = l
				break
			}
		}
		s.change(ks, t, to, "score "+ftoa(ks.Score)+" below "+ftoa(p.Threshold(ks.Level)), "")
		ks.HeldSince = time.Time{}
	}
	next := p.Threshold(ks.Level + 1)
	switch {
	case ks.Level >= MaxLevel || ks.Actions == 0 || ks.Score < next:
		ks.HeldSince = time.Time{}
	case ks.HeldSince.IsZero():
		ks.HeldSince = t
	}
	// forget what no rule looks at any more
	today := dayNum(t)
	j := 0
	for j < len(ks.Days) && today-ks.Days[j].Day >= int64(p.WindowDays) {
		j++
	}
	ks.Days = ks.Days[j:]
	keep := p.burst()
	if p.hold() > keep {
		keep = p.hold()
	}
	i := 0
	for i < len(ks.Misaligned) && t.Sub(ks.Misaligned[i].Time) > keep {
		i++
	}
	ks.Misaligned = ks.Misaligned[i:]
}

// score returns the recency-weighted average rating of the window ending
// at t and the number of rated actions in it. A day's weight halves
// every HalfLifeDays of age.
func (ks *KeyState) score(p *Policy, t time.Time) (float64, int) {
	var num, den float64
	n := 0
	today := dayNum(t)
	for _, v := range ks.Days { // oldest first: the same sum each time
		age := today - v.Day
		if age < 0 || age >= int64(p.WindowDays) {
			continue
		}
		w := math.Exp2(-float64(age) / p.HalfLifeDays)
		num += w * v.Sum
		den += w * float64(v.N)
		n += v.N
	}
	if den == 0 {
		return 0, 0
	}
	return num / den, n
}

// dayNum counts UTC days since 1970-01-01.
func dayNum(t time.Time) int64 {
	return dayStart(t).Unix() / 86400
}

func dayStart(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func round(f float64) float64 { return math.Round(f*10000) / 10000 }
