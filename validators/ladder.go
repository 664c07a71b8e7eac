package validators

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/docket/docket/policies"
)

// ladderClass implements ladder_exhaustion_proof {keyword} for "blocked"
// claims. The escalation ladder comes from the claim binding policy
// (escalation_ladder). PASS when every rung is climbed: the session's
// verified ledger holds, for each rung, at least its min_attempts failed
// tool calls that match one of the rung's matchers and whose input
// mentions the keyword, over at least its min_routes distinct routes.
// Rungs need not be climbed in order, but each failed call counts for one
// rung only: a call matching several rungs is assigned greedily (rungs
// with the fewest candidates first, calls matching the fewest rungs
// first). Greedy assignment can miss a valid one, so it errs towards FAIL,
// never towards PASS. Refused: a keyword under 3 characters or a stop
// word; a policy with no ladder.
type ladderClass struct{}

func init() { classes["ladder_exhaustion_proof"] = ladderClass{} }

func (ladderClass) params() map[string]paramSpec {
	return map[string]paramSpec{"keyword": {typ: "string", required: true}}
}

func (ladderClass) config(raw yaml.RawMessage) (any, error) { return noConfig(raw) }

func (ladderClass) check(a Args, d *Definition) error {
	return checkKeyword(a.str("keyword"))
}

func (ladderClass) run(ctx context.Context, x *execution) (*outcome, error) {
	rungs := x.binding.Ladder()
	if len(rungs) == 0 {
		return nil, fmt.Errorf("the claim binding policy defines no escalation_ladder")
	}
	all, err := failedAttempts(x)
	if err != nil {
		return nil, err
	}
	kw := strings.ToLower(strings.TrimSpace(x.args.str("keyword")))
	picked, missing := climbLadder(rungs, all, kw)
	var evidence []attempt
	for i := range rungs {
		evidence = append(evidence, picked[i]...)
	}
	climbed := len(rungs) - len(missing)
	ev, err := evidenceJSON(map[string]any{"keyword": kw, "rung_attempts": evidence})
	if err != nil {
		return nil, err
	}
	if err := x.writeArtifact("evidence.json", ev); err != nil {
		return nil, err
	}
	out := &outcome{runs: 1, detail: map[string]any{"rungs": len(rungs), "climbed": climbed}}
	if len(missing) > 0 {
		out.reason = fmt.Sprintf("escalation ladder not exhausted for %q: %s", kw, strings.Join(missing, "; "))
		return out, nil
	}
	out.pass = true
	return out, nil
}

// climbLadder assigns failed attempts mentioning kw to rungs, each attempt
// to at most one rung. It returns the attempts assigned to each rung and
// a description of each rung it could not fill, in ladder order.
func climbLadder(rungs []policies.Rung, all []attempt, kw string) ([][]attempt, []string) {
	cand := make([][]int, len(rungs))
	member := make([]int, len(all))
	for ri, r := range rungs {
		for ai, a := range all {
			if !strings.Contains(a.text, kw) {
				continue
			}
			for _, m := range r.Match {
				if a.matches(m) {
					cand[ri] = append(cand[ri], ai)
					member[ai]++
					break
				}
			}
		}
	}
	order := make([]int, len(rungs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return len(cand[order[i]]) < len(cand[order[j]]) })
	used := make([]bool, len(all))
	picked := make([][]attempt, len(rungs))
	short := make([]string, len(rungs))
	for _, ri := range order {
		r := rungs[ri]
		var avail []int
		for _, ai := range cand[ri] {
			if !used[ai] {
				avail = append(avail, ai)
			}
		}
		sort.SliceStable(avail, func(i, j int) bool { return member[avail[i]] < member[avail[j]] })
		routeOf := func(ai int) string { return route(all[ai].Tool, all[ai].host) }
		var take []int
		routes := map[string]bool{}
		for _, ai := range avail { // one call per new route first
			if len(routes) < r.MinRoutes && !routes[routeOf(ai)] {
				routes[routeOf(ai)] = true
				take = append(take, ai)
			}
		}
		for _, ai := range avail { // then fill up to min_attempts
			if len(take) >= r.MinAttempts {
				break
			}
			if !slices.Contains(take, ai) {
				take = append(take, ai)
				routes[routeOf(ai)] = true
			}
		}
		if len(take) < r.MinAttempts || len(routes) < r.MinRoutes {
			allRoutes := map[string]bool{}
			for _, ai := range avail {
				allRoutes[routeOf(ai)] = true
			}
			short[ri] = fmt.Sprintf("%s (%d of %d failed attempts, %d of %d routes)", r.Name, len(avail), r.MinAttempts, len(allRoutes), r.MinRoutes)
			continue
		}
		for _, ai := range take {
			used[ai] = true
			a := all[ai]
			a.Rung, a.Route = r.Name, routeOf(ai)
			picked[ri] = append(picked[ri], a)
		}
	}
	var missing []string
	for _, m := range short {
		if m != "" {
			missing = append(missing, m)
		}
	}
	return picked, missing
}
