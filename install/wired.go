package install

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/docket/docket/hooks"
)

// Entry is one command handler found in a settings file.
type Entry struct {
	Event   string        // the runtime's event name
	Matcher string        // "" when the group has none
	Command string        // the command line as written
	Program string        // its program, shell quotes removed
	Binary  string        // the docket binary it runs, "" for someone else's
	Timeout time.Duration // 0 when unset
}

// hooksObject returns the "hooks" object of a settings file, or nil when
// it has none.
func hooksObject(settings []byte) (*object, error) {
	doc, err := parseDocument(settings)
	if err != nil {
		return nil, err
	}
	v, ok := doc.get("hooks")
	if !ok {
		return nil, nil
	}
	h, ok := v.(*object)
	if !ok {
		return nil, errors.New(`"hooks" is not an object`)
	}
	return h, nil
}

// Handlers returns every command handler in a settings file of runtime
// rt, in file order.
func Handlers(rt hooks.Runtime, settings []byte) ([]Entry, error) {
	h, err := hooksObject(settings)
	if h == nil || err != nil {
		return nil, err
	}
	var out []Entry
	for _, m := range h.members {
		arr, ok := m.val.([]any)
		if !ok {
			continue
		}
		for _, el := range arr {
			if rt == hooks.Cursor {
				if e, ok := handlerEntry(rt, m.key, "", el); ok {
					out = append(out, e)
				}
				continue
			}
			g, ok := el.(*object)
			if !ok {
				continue
			}
			matcher := ""
			if mv, ok := g.get("matcher"); ok {
				matcher, _ = mv.(string)
			}
			hv, _ := g.get("hooks")
			list, _ := hv.([]any)
			for _, hd := range list {
				if e, ok := handlerEntry(rt, m.key, matcher, hd); ok {
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

// Wired returns docket's own handlers in a settings file of runtime rt.
func Wired(rt hooks.Runtime, settings []byte) ([]Entry, error) {
	all, err := Handlers(rt, settings)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, e := range all {
		if e.Binary != "" {
			out = append(out, e)
		}
	}
	return out, nil
}

func handlerEntry(rt hooks.Runtime, event, matcher string, el any) (Entry, bool) {
	o, ok := el.(*object)
	if !ok {
		return Entry{}, false
	}
	if tv, ok := o.get("type"); ok && tv != "command" {
		return Entry{}, false
	}
	cv, _ := o.get("command")
	cmd, ok := cv.(string)
	if !ok {
		return Entry{}, false
	}
	e := Entry{Event: event, Matcher: matcher, Command: cmd, Binary: DocketBinary(cmd)}
	e.Program, _ = CommandProgram(cmd)
	if tv, ok := o.get("timeout"); ok {
		if n, ok := tv.(json.Number); ok {
			if f, err := n.Float64(); err == nil && f > 0 {
				unit := time.Second
				if hooks.TimeoutUnit(rt) == "ms" {
					unit = time.Millisecond
				}
				e.Timeout = time.Duration(f * float64(unit))
			}
		}
	}
	return e, true
}

// CheckWiring compares docket's handlers in a settings file with
// Wiring(rt): every wired event must run the right binary from binDir
// ("" accepts any directory) with a timeout within [MinTimeout,
// MaxTimeout], the judge's at least judgeMin, and the gate's own
// --timeout below its hook timeout. It returns one line per problem.
func CheckWiring(rt hooks.Runtime, settings []byte, binDir string, judgeMin time.Duration) []string {
	got, err := Wired(rt, settings)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, w := range Wiring(rt) {
		var found []Entry
		for _, e := range got {
			if e.Event == w.Event {
				found = append(found, e)
			}
		}
		switch {
		case len(found) == 0:
			problems = append(problems, fmt.Sprintf("%s: %s not wired", w.Event, w.Binary))
			continue
		case len(found) > 1:
			problems = append(problems, fmt.Sprintf("%s: docket wired %d times", w.Event, len(found)))
		}
		e := found[0]
		if e.Binary != w.Binary {
			problems = append(problems, fmt.Sprintf("%s: runs %s, want %s", w.Event, e.Binary, w.Binary))
		}
		if binDir != "" && e.Program != filepath.Join(binDir, w.Binary) && e.Program != filepath.Join(binDir, HookBin) {
			problems = append(problems, fmt.Sprintf("%s: runs %s, not the one in %s", w.Event, e.Program, binDir))
		}
		if r := CommandRuntime(e.Command); r != "" && r != string(rt) {
			problems = append(problems, fmt.Sprintf("%s: runs with --runtime %s in a %s settings file", w.Event, r, rt))
		}
		if e.Timeout == 0 {
			problems = append(problems, fmt.Sprintf("%s: no timeout (the runtime's default is minutes)", w.Event))
		} else if e.Timeout < MinTimeout || e.Timeout > MaxTimeout {
			problems = append(problems, fmt.Sprintf("%s: timeout %v outside [%v, %v]", w.Event, e.Timeout, MinTimeout, MaxTimeout))
		}
		if e.Binary == JudgeBin && e.Timeout > 0 && e.Timeout < judgeMin {
			problems = append(problems, fmt.Sprintf("%s: timeout %v is shorter than the judge's own deadline (judges.md escalation.timeout + model.timeout + 10s, plus margin: %v); the runtime kills the judge mid-approval and fails open", w.Event, e.Timeout, judgeMin))
		}
		if e.Binary == GateBin && e.Timeout > 0 {
			own := 30 * time.Second // docket-gate's default --timeout
			if v := commandFlag(e.Command, "timeout"); v != "" {
				if d, err := time.ParseDuration(v); err == nil {
					own = d
				}
			}
			if own >= e.Timeout {
				problems = append(problems, fmt.Sprintf("%s: the gate decides within %v but the runtime kills it at %v and lets the stop through; run it with --timeout below the hook timeout", w.Event, own, e.Timeout))
			}
		}
		if w.Matcher == "*" && e.Matcher != "" && e.Matcher != "*" {
			problems = append(problems, fmt.Sprintf("%s: matcher %q lets some tools through unjudged or unrecorded", w.Event, e.Matcher))
		}
	}
	return problems
}

var plainMatcher = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

// Matches applies Claude Code's matcher rules (Codex's and Gemini's agree
// on these): "" and "*" match every tool; a matcher of only
// [A-Za-z0-9_|] is an exact name or a |-list; anything else is an
// unanchored regular expression.
func Matches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	if plainMatcher.MatchString(matcher) {
		for _, m := range strings.Split(matcher, "|") {
			if m == tool {
				return true
			}
		}
		return false
	}
	re, err := regexp.Compile(matcher)
	return err == nil && re.MatchString(tool)
}
