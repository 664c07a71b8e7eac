package validators

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

// fetchClass implements fetch_attempt_proof {keyword, min_attempts,
// min_routes} for "delegation" claims (the agent asks a human for
// something it says it cannot get). PASS when the session's verified
// ledger holds at least min_attempts failed fetch-type tool calls whose
// input mentions keyword (case-insensitive), over at least min_routes
// distinct routes. Fetch-type: a tool matching config.fetch_tools (WebFetch,
// WebSearch, fetch-like MCP tools) or a Bash command matching
// config.bash_fetch (curl, wget, gh api, …). A route is the tool family
// (tool name, or the fetch command for Bash) plus the URL's host.
// Refused: a keyword under 3 characters or a stop word (http, www, api,
// …), min_attempts or min_routes < 1, min_routes > min_attempts.
type fetchClass struct{}

type fetchConfig struct {
	FetchTools []string `yaml:"fetch_tools"`
	BashFetch  string   `yaml:"bash_fetch"`
	bashRE     *regexp.Regexp
}

func init() { classes["fetch_attempt_proof"] = fetchClass{} }

func (fetchClass) params() map[string]paramSpec {
	return map[string]paramSpec{
		"keyword":      {typ: "string", required: true},
		"min_attempts": {typ: "integer"},
		"min_routes":   {typ: "integer"},
	}
}

func (fetchClass) config(raw yaml.RawMessage) (any, error) {
	c := &fetchConfig{}
	if err := decodeConfig(raw, c); err != nil {
		return nil, err
	}
	if len(c.FetchTools) == 0 && c.BashFetch == "" {
		return nil, errors.New("fetch_tools and bash_fetch are both empty")
	}
	for i, g := range c.FetchTools {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("fetch_tools[%d]: bad glob %q", i, g)
		}
	}
	if c.BashFetch != "" {
		re, err := regexp.Compile(c.BashFetch)
		if err != nil {
			return nil, fmt.Errorf("bash_fetch: %w", err)
		}
		c.bashRE = re
	}
	return c, nil
}

func (fetchClass) check(a Args, d *Definition) error {
	if err := checkKeyword(a.str("keyword")); err != nil {
		return err
	}
	n, r := a.integer("min_attempts"), a.integer("min_routes")
	switch {
	case n < 1:
		return fmt.Errorf("min_attempts is %d, want at least 1", n)
	case r < 1:
		return fmt.Errorf("min_routes is %d, want at least 1", r)
	case r > n:
		return fmt.Errorf("min_routes (%d) exceeds min_attempts (%d)", r, n)
	}
	return nil
}

// fetchRoute returns the attempt's route when it is a fetch-type call.
func (c *fetchConfig) fetchRoute(a attempt) (string, bool) {
	for _, g := range c.FetchTools {
		if ok, _ := path.Match(g, a.Tool); ok {
			return route(a.Tool, a.host), true
		}
		if ok, _ := path.Match(g, a.canon); ok && a.canon != "" {
			return route(a.canon, a.host), true
		}
	}
	if (a.Tool == "Bash" || a.canon == "Bash") && c.bashRE != nil {
		if m := c.bashRE.FindStringSubmatch(a.command); m != nil {
			family := "Bash"
			if len(m) > 2 {
				family = "Bash " + strings.Join(strings.Fields(m[2]), " ")
			}
			return route(family, a.host), true
		}
	}
	return "", false
}

func (fetchClass) run(ctx context.Context, x *execution) (*outcome, error) {
	cfg := x.def.config.(*fetchConfig)
	all, err := failedAttempts(x)
	if err != nil {
		return nil, err
	}
	kw := strings.ToLower(strings.TrimSpace(x.args.str("keyword")))
	var hits []attempt
	for _, a := range all {
		r, ok := cfg.fetchRoute(a)
		if !ok || !strings.Contains(a.text, kw) {
			continue
		}
		a.Route = r
		hits = append(hits, a)
	}
	ev, err := evidenceJSON(map[string]any{"keyword": kw, "failed_fetch_attempts": hits})
	if err != nil {
		return nil, err
	}
	if err := x.writeArtifact("evidence.json", ev); err != nil {
		return nil, err
	}
	n, routes := len(hits), distinctRoutes(hits)
	wantN, wantR := int(x.args.integer("min_attempts")), int(x.args.integer("min_routes"))
	out := &outcome{runs: 1, detail: map[string]any{"attempts": n, "routes": routes}}
	if n < wantN || routes < wantR {
		out.reason = fmt.Sprintf("found %d failed fetch attempt(s) mentioning %q over %d route(s); need %d over %d", n, kw, routes, wantN, wantR)
		return out, nil
	}
	out.pass = true
	return out, nil
}
