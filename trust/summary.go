package trust

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/ledger"
)

// The summary file (levels) is what the judge reads on every call, so it
// is text a reader can search without decoding it all:
//
//	docket-trust-levels v1
//	clock <unix seconds>
//	policy <graduation_days> <min_actions> <t1> <t2> <t3> <t4>
//	key <agent> <scope> <level> <score> <actions> <held_since unix seconds, 0 for none>
//	…                                         (one line per key, sorted)
//	mac <key_id> <hex HMAC-SHA256(K, "docket-trust-levels-v1\n" || every line above, each with its \n)>
//
// agent and scope are percent-encoded (as url.PathEscape does) so neither holds a
// space. A reader checks the MAC over the bytes before the mac line, then
// looks up only the lines of the agent it judges.

const summaryHeader = "docket-trust-levels v1"

// Summary is each key's level, score and hold as of Clock.
type Summary struct {
	Clock time.Time
	Keys  map[string]SummaryKey
	Hold  int        // graduation days
	Min   int        // minimum actions
	Thr   [4]float64 // thresholds of levels 1 to 4

	// raw holds the verified key lines of a loaded file, searched lazily.
	raw []byte
}

// SummaryKey is one key of the summary.
type SummaryKey struct {
	Level     int
	Score     float64
	Actions   int
	HeldSince time.Time
}

// Summary returns the state's summary under p.
func (s *State) Summary(p *Policy) *Summary {
	out := &Summary{Clock: s.Clock, Keys: map[string]SummaryKey{}, Hold: p.GraduationDays, Min: p.MinActions, Thr: p.Thresholds}
	for k, ks := range s.Keys {
		out.Keys[k] = SummaryKey{Level: ks.Level, Score: ks.Score, Actions: ks.Actions, HeldSince: ks.HeldSince}
	}
	return out
}

func unix(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func fromUnix(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(n, 0).UTC()
}

// encode writes the summary file, MAC'd under keys.
func (sm *Summary) encode(keys *ledger.Keys) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nclock %d\npolicy %d %d %g %g %g %g\n", summaryHeader, unix(sm.Clock), sm.Hold, sm.Min, sm.Thr[0], sm.Thr[1], sm.Thr[2], sm.Thr[3])
	lines := make([]string, 0, len(sm.Keys))
	for name, k := range sm.Keys {
		agent, scope, _ := strings.Cut(name, " ")
		lines = append(lines, fmt.Sprintf("key %s %s %d %s %d %d\n", pathEscape(agent), pathEscape(scope),
			k.Level, strconv.FormatFloat(k.Score, 'f', 6, 64), k.Actions, unix(k.HeldSince)))
	}
	sort.Strings(lines)
	for _, l := range lines {
		b.WriteString(l)
	}
	id, mac := keys.MAC(levelsDomain, b.Bytes())
	fmt.Fprintf(&b, "mac %s %s\n", id, mac)
	return b.Bytes()
}

var errSummary = errors.New("malformed trust levels file")

// LoadSummary reads the summary file. A missing file is an empty summary
// (every key at level 0); a forged, torn or malformed one is an empty
// summary and ErrForged (wrapped).
func LoadSummary(h home.Home, keys *ledger.Keys) (*Summary, error) {
	empty := &Summary{Keys: map[string]SummaryKey{}}
	f, err := os.Open(filepath.Join(dirOf(h), LevelsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, fmt.Errorf("read trust levels: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return empty, fmt.Errorf("read trust levels: %w", err)
	}
	if fi.Size() > maxFile {
		return empty, fmt.Errorf("%w: %s is too large", ErrForged, LevelsFile)
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return empty, fmt.Errorf("read trust levels: %w", err)
	}
	sm, err := parseSummary(b, keys)
	if err != nil {
		return empty, fmt.Errorf("%w: %s: %v", ErrForged, LevelsFile, err)
	}
	return sm, nil
}

func parseSummary(b []byte, keys *ledger.Keys) (*Summary, error) {
	if len(b) > maxFile || len(b) == 0 || b[len(b)-1] != '\n' {
		return nil, errSummary
	}
	i := bytes.LastIndex(b[:len(b)-1], []byte("\nmac "))
	if i < 0 {
		return nil, errSummary
	}
	body, macLine := b[:i+1], strings.Fields(string(b[i+1:]))
	if len(macLine) != 3 || !keys.CheckMAC(levelsDomain, macLine[1], body, macLine[2]) {
		return nil, errors.New("MAC does not verify")
	}
	// the MAC holds: the writer had the key, so the lines are its own
	head := strings.SplitN(string(body), "\n", 4)
	if len(head) < 4 || head[0] != summaryHeader {
		return nil, errSummary
	}
	sm := &Summary{Keys: map[string]SummaryKey{}}
	var clock int64
	if _, err := fmt.Sscanf(head[1], "clock %d", &clock); err != nil {
		return nil, errSummary
	}
	sm.Clock = fromUnix(clock)
	if _, err := fmt.Sscanf(head[2], "policy %d %d %g %g %g %g", &sm.Hold, &sm.Min, &sm.Thr[0], &sm.Thr[1], &sm.Thr[2], &sm.Thr[3]); err != nil {
		return nil, errSummary
	}
	sm.raw = []byte(head[3])
	return sm, nil
}

// lookup finds a key in the loaded lines.
func (sm *Summary) lookup(agent, scope string) (SummaryKey, bool) {
	prefix := []byte("key " + pathEscape(agent) + " " + pathEscape(scope) + " ")
	rest := sm.raw
	for len(rest) > 0 {
		j := bytes.Index(rest, prefix)
		if j < 0 {
			return SummaryKey{}, false
		}
		if j > 0 && rest[j-1] != '\n' {
			rest = rest[j+1:]
			continue
		}
		line := rest[j+len(prefix):]
		if k := bytes.IndexByte(line, '\n'); k >= 0 {
			line = line[:k]
		}
		f := strings.Fields(string(line))
		if len(f) != 4 {
			return SummaryKey{}, false
		}
		var k SummaryKey
		var err error
		if k.Level, err = strconv.Atoi(f[0]); err != nil || k.Level < 0 || k.Level > MaxLevel {
			return SummaryKey{}, false
		}
		if k.Score, err = strconv.ParseFloat(f[1], 64); err != nil {
			return SummaryKey{}, false
		}
		if k.Actions, err = strconv.Atoi(f[2]); err != nil {
			return SummaryKey{}, false
		}
		held, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return SummaryKey{}, false
		}
		k.HeldSince = fromUnix(held)
		return k, true
	}
	return SummaryKey{}, false
}

// Level is the level the summary gives (agent, scope) at now, evaluated
// lazily: a key whose score held the next threshold long enough since
// the summary was written (with enough actions; the hold restarts at a
// high-priority misalignment) is read one level higher per hold. An
// unknown key is at level 0.
func (sm *Summary) Level(agent, scope string, now time.Time) (SummaryKey, bool) {
	k, ok := sm.Keys[KeyName(agent, scope)]
	if !ok {
		k, ok = sm.lookup(agent, scope)
	}
	if !ok {
		return SummaryKey{}, false
	}
	hold := time.Duration(sm.Hold) * 24 * time.Hour
	held := k.HeldSince
	for !held.IsZero() && k.Level < MaxLevel && k.Actions >= sm.Min && k.Score >= sm.Thr[k.Level] && !held.Add(hold).After(now) {
		k.Level++
		held = held.Add(hold)
	}
	return k, true
}
