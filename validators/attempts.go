package validators

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/policies"
)

// attempt is one failed tool call recorded in the session's ledger.
type attempt struct {
	Seq   uint64 `json:"seq"`
	Tool  string `json:"tool"`
	Route string `json:"route"`
	Rung  string `json:"rung,omitempty"`
	// canon is the call's Claude Code name: the tool of its kind (Bash
	// for every runtime's shell, hooks.CanonicalTool), or an MCP tool's
	// mcp__<server>__<tool> (hooks.RecordedMCPName): the binding names those
	canon   string
	command string // a shell call's command line
	text    string // input.json and body, lower-cased, for keyword matches
	host    string
}

// matches reports whether a rung's match rule covers the attempt, by
// the runtime's tool name or by its kind's Claude Code name.
func (a attempt) matches(m policies.RungMatch) bool {
	return m.Matches(a.Tool, a.command) || a.canon != "" && a.canon != a.Tool && m.Matches(a.canon, a.command)
}

// failedAttempts returns the session's failed tool calls: entries of kind
// tool_failure, or tool_call with body "failed": true. Their inputs come
// from the input.json artifact the ledger hook stores.
func failedAttempts(x *execution) ([]attempt, error) {
	entries, err := x.ledger.ReadVerified(x.session)
	if err != nil {
		return nil, fmt.Errorf("read ledger (run 'docket verify --session %s'): %w", x.session, err)
	}
	var out []attempt
	for _, e := range entries {
		body := bodyOf(e)
		failed := e.Kind == ledger.KindToolFailure || e.Kind == ledger.KindToolCall && body["failed"] == true
		if !failed || e.Tool == "" {
			continue
		}
		in, err := toolInput(x.ledger, e)
		if err != nil {
			return nil, fmt.Errorf("read input of ledger entry %d: %w", e.Seq, err)
		}
		kind := hooks.RecordedKind(e.Tool, e.Body)
		canon := hooks.CanonicalTool(kind)
		if m := hooks.RecordedMCPName(e.Tool, e.Body); m != "" {
			canon = m
		}
		a := attempt{Seq: e.Seq, Tool: e.Tool, canon: canon, text: strings.ToLower(string(in) + "\n" + string(e.Body))}
		if kind == hooks.KindShell {
			a.command, _ = hooks.ShellCommandOf(in)
		}
		var fields map[string]any
		if json.Unmarshal(in, &fields) == nil {
			if u, ok := fields["url"].(string); ok {
				a.host = hostOf(u)
			}
		}
		if a.host == "" && a.command != "" {
			if m := urlRE.FindString(a.command); m != "" {
				a.host = hostOf(m)
			}
		}
		out = append(out, a)
	}
	return out, nil
}

var urlRE = regexp.MustCompile(`(?i)\b(?:https?|ftp)://[^\s'"<>]+`)

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// route names the way an attempt went: a tool family and its host.
func route(family, host string) string {
	if host == "" {
		return family
	}
	return family + " " + host
}

// stopKeywords match nearly every fetch attempt and so prove nothing.
var stopKeywords = map[string]bool{"http": true, "https": true, "www": true, "com": true, "org": true,
	"net": true, "html": true, "url": true, "api": true, "json": true, "the": true, "and": true, "error": true}

// checkKeyword refuses keywords too short or too common to tie attempts
// to one objective.
func checkKeyword(k string) error {
	k = strings.TrimSpace(k)
	switch {
	case utf8.RuneCountInString(k) < 3:
		return fmt.Errorf("keyword %q is shorter than 3 characters", k)
	case stopKeywords[strings.ToLower(k)]:
		return fmt.Errorf("keyword %q matches almost any attempt; name what you could not get", k)
	}
	return nil
}

func distinctRoutes(as []attempt) int {
	seen := map[string]bool{}
	for _, a := range as {
		seen[a.Route] = true
	}
	return len(seen)
}

func evidenceJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, errors.New("encode evidence")
	}
	return append(b, '\n'), nil
}
