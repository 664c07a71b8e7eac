package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/regular"
	"github.com/docket/docket/judge/outbound"
	"github.com/docket/docket/policies"
)

// Prime directives (RABS §14) are checked first, before the built-in
// protections, the tools registry, judges.md, recall and the LLM judge.
// Two layers are enforced here: the decision filter (a directive decides
// the call, and nothing after it can lift its block or its escalation) and
// the outbound filter (text a tool call sends outside the machine is
// scanned for personal data and secrets).
//
// What counts as outbound text:
//
//   - Bash: every argument of a command that sends something out — gh
//     (pr, issue, release, gist, api, discussion, except read-only verbs),
//     git commit / tag / notes messages, git push options, curl, wget,
//     httpie, xh, nc, ssh, mail, sendmail — plus the bodies of the line's
//     here-documents, the values of message flags joined together (a
//     secret split across two -m flags), and the files such a command
//     reads its body from (--body-file, -F, @file, -T, --post-file, a
//     `cat FILE |` or `< FILE` feeding it). Git commit messages are checked
//     when the commit is made, pushed or not: once committed they travel
//     with every push, and rewriting published history is worse than
//     rewording a message. Git trailers (Signed-off-by, Co-authored-by, …)
//     carry the author's own address and are left alone.
//   - tools listed under outbound_tools in directives.yaml (WebFetch,
//     WebSearch, Slack, Linear, GitHub and other messaging MCP servers):
//     every string in the input.
//
// A match is a revise with the match redacted when every match sits in
// text docket can rewrite (an argument written out in the command, a JSON
// string of the input) and the rewritten call scans clean; otherwise — a
// match in a file, or visible only once split parts are joined — a block.

// DirectiveRulePrefix prefixes the rule id of a prime directive.
const DirectiveRulePrefix = "directive:"

// maxOutboundFile bounds a body file docket reads to scan.
const maxOutboundFile = outbound.MaxScan

// ErrRemoteFile is what an Engine.Open returns for a file that is on the
// caller's machine, not the judge's: docket serve judges proposals sent
// over HTTP, and the paths in them name the runtime's files. Its own
// file of the same name is not the one the call sends.
var ErrRemoteFile = errors.New("on the runtime's machine: docket serve does not read it")

var defaultDirectives = sync.OnceValues(func() (*policies.Directives, error) {
	data, err := policies.Default(policies.DirectivesFile)
	if err != nil {
		return nil, err
	}
	return policies.ParseDirectives(policies.Source{Name: policies.DirectivesFile, Origin: "embedded:" + policies.DirectivesFile, Data: data})
})

// directivesOf returns the directives in force for set: the file's when
// one replaced the default, else the embedded default (parsed once, and
// only when a call has outbound text).
func directivesOf(set *PolicySet) (*policies.Directives, error) {
	if set != nil && set.Directives != nil {
		return set.Directives, nil
	}
	return defaultDirectives()
}

// loadDirectives reads $DOCKET_HOME/policies/directives.yaml when it
// exists and differs from the embedded default.
func loadDirectives(set *PolicySet, src policies.Source) error {
	def, _ := policies.Default(policies.DirectivesFile)
	if strings.HasPrefix(src.Origin, "embedded:") || bytes.Equal(src.Data, def) {
		return nil
	}
	d, err := policies.ParseDirectives(src)
	if err != nil {
		return fmt.Errorf("load directives.yaml: %w", err)
	}
	set.Directives = d
	set.Sources = append(set.Sources, src)
	set.Version = policies.Version(set.Sources...)
	return nil
}

// outText is one piece of text a call sends out.
type outText struct {
	where string // for the reason: "command", "input.body", "file notes.md"
	text  string
	// rewritable: a match may be redacted in place (in the Bash command
	// string, or in the JSON string at path).
	rewritable bool
	path       []string // JSON path of a string input; nil for Bash
	// trailers: git trailer lines are not scanned for email addresses
	trailers bool
	// joined: derived text (message flag values joined, percent-decoded
	// text); a match here counts only when no single piece explains it
	joined bool
	// parts are the start offsets of the pieces of joined text
	parts []int
}

// outFinding is a finding in one outText.
type outFinding struct {
	outbound.Finding
	in *outText
}

func (f outFinding) match() string { return f.in.text[f.Start:f.End] }

// checkDirectives runs the prime directives over p. ok is false when no
// directive fired.
func (e *Engine) checkDirectives(set *PolicySet, p *ActionProposal, d *Decision) (Judgment, bool) {
	texts, unknown := outboundTexts(p, set, e.Open)
	if len(texts) == 0 && len(unknown) == 0 {
		return Judgment{}, false
	}
	ds, err := directivesOf(set)
	if err != nil {
		return Judgment{Outcome: Block, Reason: "prime directives could not be loaded: " + err.Error(), RuleIDs: []string{DirectiveRulePrefix + "unavailable"}, Confidence: "high"}, true
	}
	texts = append(texts, normalized(texts)...)
	unavailable := false
	var finds []outFinding
	for i := range texts {
		t := &texts[i]
		if len(t.text) > outbound.MaxScan {
			unknown = append(unknown, t.where+" (longer than docket scans)")
			continue
		}
		for _, f := range outbound.Scan(t.text, outbound.Options{DetectorUnavailable: &unavailable}) {
			if t.trailers && f.Kind == outbound.Email && inTrailer(t.text, f.Start) {
				continue
			}
			finds = append(finds, outFinding{f, t})
		}
	}
	finds = dropSeen(finds, texts)
	if unavailable {
		d.Warnings = append(d.Warnings, "secret detector unavailable: outbound text checked with docket's built-in secret shapes only")
	}
	type fired struct {
		dir   policies.Directive
		out   Outcome
		finds []outFinding
		why   string
	}
	var hits []fired
	for _, dir := range ds.Directives {
		var mine []outFinding
		switch dir.Check {
		case policies.CheckOutboundSecrets:
			for _, f := range finds {
				if f.Kind == outbound.Secret {
					mine = append(mine, f)
				}
			}
		case policies.CheckOutboundPII:
			for _, f := range finds {
				if f.Kind != outbound.Secret && slicesContainsStr(dir.Kinds, string(f.Kind)) {
					mine = append(mine, f)
				}
			}
		case policies.CheckSafety:
			if term := safetyTerm(texts, dir.Terms); term != "" {
				hits = append(hits, fired{dir: dir, out: Outcome(dir.Action), why: fmt.Sprintf("the call sends out text that signals a risk to someone's safety (%q)", term)})
			}
			continue
		}
		if len(mine) == 0 {
			continue
		}
		out := Outcome(dir.Action)
		kinds := kindsOf(mine)
		where := wheresOf(mine)
		why := fmt.Sprintf("the call would send %s out of the machine (%s)", strings.Join(kinds, ", "), strings.Join(where, ", "))
		if out == Revise {
			for _, f := range mine {
				if !f.in.rewritable || f.in.path == nil && !strings.Contains(f.in.text, f.match()) {
					out = Block
					why += "; docket cannot rewrite it where it is (" + f.in.where + ")"
					break
				}
			}
		}
		if out == Revise && dir.Check == policies.CheckOutboundSecrets {
			for _, f := range mine {
				if inURL(f.in.text, f.Start) {
					out = Block
					why += "; a credential in a URL is what the request is for: the redacted URL would still call the host, so docket blocks it"
					break
				}
			}
		}
		hits = append(hits, fired{dir: dir, out: out, finds: mine, why: why})
	}
	for _, u := range unknown {
		// a body docket could not read: a human looks at it
		hits = append(hits, fired{dir: policies.Directive{ID: policies.DirectivePrivacy, Priority: 100}, out: Escalate,
			why: "the call sends " + u + " out of the machine and docket cannot inspect it"})
	}
	if len(hits) == 0 {
		return Judgment{}, false
	}
	jm := Judgment{Outcome: Revise, Confidence: "high"}
	var reasons []string
	var redact []outFinding
	for _, h := range hits {
		if h.out.Strictness() > jm.Outcome.Strictness() {
			jm.Outcome = h.out
		}
		id := DirectiveRulePrefix + h.dir.ID
		if !slicesContainsStr(jm.RuleIDs, id) {
			jm.RuleIDs = append(jm.RuleIDs, id)
		}
		reasons = append(reasons, fmt.Sprintf("prime directive %s (priority %d): %s", h.dir.ID, h.dir.Priority, h.why))
		if h.out == Revise {
			redact = append(redact, h.finds...)
		}
	}
	jm.Reason = strings.Join(reasons, "; ")
	switch jm.Outcome {
	case Revise:
		amended, err := redactInput(p, redact)
		if err == nil {
			if again, _ := outboundTexts(&ActionProposal{Tool: p.Tool, Input: amended, Context: p.Context}, set, e.Open); anyFinding(again) {
				err = fmt.Errorf("the redacted call still matches")
			}
		}
		if err != nil {
			jm.Outcome = Block
			jm.Reason += "; docket could not redact it: " + err.Error() + "; remove the personal data or secret from the text the call sends out"
			break
		}
		jm.Amendment = amended
		jm.Reason += "; docket redacted each match"
		jm.RequiredRevision = "send the text without the personal data or secret (docket's redacted call is in updatedInput); reference credentials by environment variable, never literally"
	case Block:
		jm.Reason += "; remove the personal data or secret from the text the call sends out"
	}
	return jm, true
}

// inURL reports whether text[at] lies in a URL: the run of non-space,
// non-quote characters around it holds "://" before at.
func inURL(text string, at int) bool {
	start := strings.LastIndexAny(text[:at], " \t\r\n\"'<>`()[]{}") + 1
	return strings.Contains(text[start:at], "://")
}

// normalized returns, for each text with non-ASCII characters, its NFKC
// form without zero-width characters, as derived text: fullwidth ＠ and
// digits, or a zero-width space inside an address, do not hide it.
func normalized(texts []outText) []outText {
	var out []outText
	for _, t := range texts {
		ascii := true
		for i := 0; i < len(t.text) && ascii; i++ {
			ascii = t.text[i] < 0x80
		}
		if ascii {
			continue
		}
		n := strings.Map(func(r rune) rune {
			switch r {
			case '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad':
				return -1
			}
			return r
		}, norm.NFKC.String(t.text))
		if n != t.text {
			out = append(out, outText{where: t.where + " (normalized)", text: n, trailers: t.trailers, joined: true})
		}
	}
	return out
}

// dropSeen drops the matches in derived text that the pieces explain: the
// match is in a piece as it stands, or it lies within one piece, or one
// of the pieces it spans has a match of its own (found, and redacted,
// there). What is left is a match that exists only once pieces are joined
// — a secret split across two -m flags.
func dropSeen(fs []outFinding, texts []outText) []outFinding {
	out := fs[:0]
	for _, f := range fs {
		if f.in.joined && explained(f, texts) {
			continue
		}
		out = append(out, f)
	}
	return out
}

func explained(f outFinding, texts []outText) bool {
	for _, t := range texts {
		if !t.joined && strings.Contains(t.text, f.match()) {
			return true
		}
	}
	parts := f.in.parts
	if len(parts) == 0 {
		return false
	}
	var spanned []string
	for i, p := range parts {
		end := len(f.in.text)
		if i+1 < len(parts) {
			end = parts[i+1]
		}
		if p < f.End && end > f.Start {
			spanned = append(spanned, f.in.text[p:end])
		}
	}
	if len(spanned) <= 1 {
		return true
	}
	for _, piece := range spanned {
		if len(outbound.Scan(piece, outbound.Options{Kinds: []outbound.Kind{f.Kind}})) > 0 {
			return true
		}
	}
	return false
}

func anyFinding(texts []outText) bool {
	var fs []outFinding
	for i := range texts {
		t := &texts[i]
		for _, f := range outbound.Scan(t.text, outbound.Options{}) {
			if !(t.trailers && f.Kind == outbound.Email && inTrailer(t.text, f.Start)) {
				fs = append(fs, outFinding{f, t})
			}
		}
	}
	return len(dropSeen(fs, texts)) > 0
}

func kindsOf(fs []outFinding) []string {
	var out []string
	for _, f := range fs {
		k := string(f.Kind)
		if f.Encoded {
			k += " (base64-encoded)"
		}
		if !slicesContainsStr(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func wheresOf(fs []outFinding) []string {
	var out []string
	for _, f := range fs {
		if !slicesContainsStr(out, f.in.where) {
			out = append(out, f.in.where)
		}
	}
	return out
}

// trailerLine is a git trailer ("Signed-off-by: Name <mail>").
var trailerLine = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?im)^[ \t]*(signed-off-by|co-authored-by|reviewed-by|acked-by|tested-by|reported-by|suggested-by|helped-by|cc)[ \t]*:`)
})

func inTrailer(text string, at int) bool {
	ls := strings.LastIndexByte(text[:at], '\n') + 1
	return trailerLine().MatchString(text[ls:at])
}

// safetyTerm returns the first safety term found as whole words in texts.
func safetyTerm(texts []outText, terms []string) string {
	for _, t := range texts {
		low := strings.ToLower(t.text)
		for _, term := range terms {
			for i := 0; ; {
				j := strings.Index(low[i:], term)
				if j < 0 {
					break
				}
				s, e := i+j, i+j+len(term)
				if (s == 0 || !isWordByte(low[s-1])) && (e == len(low) || !isWordByte(low[e])) {
					return term
				}
				i = s + 1
			}
		}
	}
	return ""
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

// outboundTexts lists the text p sends out, and the bodies it sends that
// docket cannot read (a file outside the project, too large, unreadable).
func outboundTexts(p *ActionProposal, set *PolicySet, open func(string) (*os.File, error)) ([]outText, []string) {
	if p == nil {
		return nil, nil
	}
	if p.kind() == hooks.KindShell {
		// every runtime's shell (Bash, Gemini CLI's run_shell_command, …)
		cmd, ok := hooks.ShellCommandOf(p.Input)
		if !ok || cmd == "" {
			return nil, nil
		}
		return bashOutbound(cmd, p.Context.Cwd, p.Context.ProjectRoot, open)
	}
	// the list names Claude Code's tools: another runtime's fetch or web
	// search (Gemini CLI's web_fetch, …) counts as WebFetch, its MCP tool
	// (mcp_slack_post_message) as mcp__slack__post_message
	name := p.Tool.Name
	if p.kind() == hooks.KindFetch {
		name = hooks.CanonicalTool(hooks.KindFetch)
	} else if mcp := p.mcpName(); mcp != "" {
		name = mcp
	}
	listed := false
	if set != nil && set.Directives != nil || defaultOutboundShape(name) || defaultOutboundShape(p.Tool.Name) {
		ds, err := directivesOf(set)
		listed = err == nil && (ds.Outbound(name) || ds.Outbound(p.Tool.Name))
	}
	if !listed {
		// a tool that is not a shell by name but carries a command line
		// (an MCP terminal server's run_command) runs it: read as a shell,
		// as the protections read it
		if k := p.kind(); k != hooks.KindMCP && k != hooks.KindOther {
			return nil, nil // Write, Edit, Read…: not parsed on every call
		}
		if cmd, ok := hooks.ShellCommandOf(p.Input); ok && cmd != "" {
			return bashOutbound(cmd, p.Context.Cwd, p.Context.ProjectRoot, open)
		}
		return nil, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(p.Input))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return nil, nil
	}
	var out []outText
	walkStrings(v, nil, func(path []string, s string) {
		out = append(out, outText{where: "input." + strings.Join(path, "."), text: s, rewritable: true, path: append([]string(nil), path...)})
	})
	return out, nil
}

// defaultOutboundShape reports whether a tool could be on the default
// outbound_tools list (TestDefaultOutboundShape keeps the two in step).
func defaultOutboundShape(tool string) bool {
	return strings.HasPrefix(strings.ToLower(tool), "mcp__") || strings.HasPrefix(tool, "Web")
}

func walkStrings(v any, path []string, fn func([]string, string)) {
	switch x := v.(type) {
	case string:
		fn(path, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkStrings(x[k], append(path, k), fn)
		}
	case []any:
		for i, e := range x {
			walkStrings(e, append(path, fmt.Sprint(i)), fn)
		}
	}
}

// redactInput returns p's input with every finding redacted: a finding
// in the command line (it has no JSON path) by literal replacement in the
// command, as a string or each word of an argv; one in a JSON string in
// place.
func redactInput(p *ActionProposal, fs []outFinding) (json.RawMessage, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(p.Input))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("input is not a JSON object")
	}
	var line []outFinding
	byPath := map[string][]outbound.Finding{}
	for _, f := range fs {
		if f.in.path == nil {
			line = append(line, f)
			continue
		}
		k := strings.Join(f.in.path, "\x00")
		byPath[k] = append(byPath[k], f.Finding)
	}
	if len(line) > 0 {
		// longest first, so a match inside another is not cut in two
		sort.SliceStable(line, func(i, j int) bool { return len(line[i].match()) > len(line[j].match()) })
		redact := func(s string) string {
			for _, f := range line {
				s = strings.ReplaceAll(s, f.match(), outbound.Marker(f.Kind))
			}
			return s
		}
		// the command as hooks.ShellCommandOf reads it: a string, or an
		// argv whose words each carry their part of the line; the text
		// OpenClaw's process tool types
		for _, k := range []string{"command", "cmd", "data", "text", "literal"} {
			switch c := m[k].(type) {
			case string:
				m[k] = redact(c)
			case []any:
				for i, w := range c {
					if w, ok := w.(string); ok {
						c[i] = redact(w)
					}
				}
			default:
				continue
			}
			break
		}
	}
	var fix func(v any, path []string) any
	fix = func(v any, path []string) any {
		switch x := v.(type) {
		case string:
			if fs, ok := byPath[strings.Join(path, "\x00")]; ok {
				return outbound.Redact(x, fs)
			}
		case map[string]any:
			for k, e := range x {
				x[k] = fix(e, append(append([]string(nil), path...), k))
			}
		case []any:
			for i, e := range x {
				x[i] = fix(e, append(append([]string(nil), path...), fmt.Sprint(i)))
			}
		}
		return v
	}
	if len(byPath) > 0 {
		for k, e := range m {
			m[k] = fix(e, []string{k})
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes())), nil
}

// --- Bash -------------------------------------------------------------------

// messageFlags carry message text; their values are also scanned joined
// together, so a secret split across two flags is seen whole.
var messageFlags = words{
	"-m", "--message", "-b", "--body", "-t", "--title", "-d", "--data",
	"--data-raw", "--data-binary", "--data-ascii", "--data-urlencode", "-f", "--raw-field",
	"--field", "-c", "--comment", "--notes", "--subject", "-s", "--json",
}

// fileFlags take a file whose content the command sends.
var fileFlags = words{
	"--body-file", "--file", "-T", "--upload-file", "--post-file", "--input", "--notes-file",
}

func bashOutbound(cmd, cwd, root string, open func(string) (*os.File, error)) ([]outText, []string) {
	return bashOutboundDepth(cmd, cmd, cwd, root, open, 0)
}

// readers are commands whose file arguments become their output: piped
// into an outbound command or substituted into its arguments, the files
// are sent. (tee is not one: it writes its files.)
var readers = words{"cat", "head", "tail", "tac", "base64", "base32", "xxd", "od", "jq", "gzip", "zcat"}

// bashOutboundDepth analyses line (part of cmd, the whole command, which
// redactions rewrite). The whole line of a command that sends something
// out counts as outbound: pipes, variables and substitutions can carry any
// part of it out.
func bashOutboundDepth(line, cmd, cwd, root string, open func(string) (*os.File, error), depth int) ([]outText, []string) {
	if depth > maxShellDepth {
		return []outText{{where: "command", text: line, rewritable: true, trailers: true}}, nil
	}
	lexed := dropHeredocBodies(line)
	pipes, nested, ok := lexShell(lexed)
	if !ok {
		// a line docket cannot parse: if it names an outbound command
		// anywhere, all of it counts as outbound
		words := map[string]bool{}
		for _, w := range strings.FieldsFunc(line, func(r rune) bool { return strings.ContainsRune(" \t\n;|&()`$\"'\\", r) }) {
			words[filepath.Base(w)] = true
		}
		for w := range words {
			if w != "git" && w != "gh" && outboundCommand([]string{w}) || w == "gh" ||
				w == "git" && (words["commit"] || words["tag"] || words["notes"] || words["push"] || words["send-email"]) {
				return []outText{{where: "command", text: line, rewritable: true, trailers: true}}, nil
			}
		}
		return nil, nil
	}
	var texts []outText
	var unknown []string
	any := false
	var files []string
	var fileSeg []Segment
	for _, pipe := range pipes {
		for si, raw := range pipe {
			s := strip(raw)
			if inner, ok := shellString(s); ok {
				t, u := bashOutboundDepth(inner, cmd, cwd, root, open, depth+1)
				if len(t) > 0 || len(u) > 0 {
					any = true
					texts, unknown = append(texts, t...), append(unknown, u...)
				}
				continue
			}
			if !outboundCommand(s.Argv) {
				continue
			}
			any = true
			name := s.Name()
			if name == "gh" || name == "git" {
				name += " " + subOf(s.Argv)
			}
			isGit := s.Name() == "git"
			// message flag values joined: a secret split in two
			var joined strings.Builder
			var parts []int
			for i := 1; i < len(s.Argv); i++ {
				f, v, hasV := strings.Cut(s.Argv[i], "=")
				if messageFlags.has(f) && f != "" {
					if !hasV && i+1 < len(s.Argv) {
						v = s.Argv[i+1]
						i++
					}
					parts = append(parts, joined.Len())
					joined.WriteString(v)
				}
			}
			if len(parts) > 1 {
				texts = append(texts, outText{where: name + " message parts joined", text: joined.String(), trailers: isGit, joined: true, parts: parts})
			}
			for _, f := range bodyFiles(s, pipe[:si]) {
				files = append(files, f)
				fileSeg = append(fileSeg, s)
			}
		}
	}
	if !any {
		return nil, nil
	}
	// every word of the line, its substitutions and here-documents
	for _, pipe := range pipes {
		for _, raw := range pipe {
			for _, w := range raw {
				texts = append(texts, outText{where: "command", text: w, rewritable: true, trailers: true})
			}
		}
	}
	for _, n := range nested {
		texts = append(texts, outText{where: "command substitution", text: n, rewritable: true, trailers: true})
		// $(cat FILE): the file's content is substituted into the line
		if np, _, ok := lexShell(dropHeredocBodies(n)); ok {
			for _, pipe := range np {
				for _, raw := range pipe {
					if s := strip(raw); readers.has(s.Name()) {
						for _, w := range s.Argv[1:] {
							if !strings.HasPrefix(w, "-") {
								files = append(files, w)
								fileSeg = append(fileSeg, s)
							}
						}
					}
				}
			}
		}
	}
	for _, b := range heredocBodies(line) {
		texts = append(texts, outText{where: "here-document", text: b, rewritable: true, trailers: true})
	}
	// percent-encoded text (curl -d 'email=jane%40…') is scanned decoded
	for _, t := range append([]outText(nil), texts...) {
		if strings.Contains(t.text, "%") {
			if dec, err := url.QueryUnescape(strings.ReplaceAll(t.text, "+", "%2B")); err == nil && dec != t.text {
				texts = append(texts, outText{where: t.where + " (percent-decoded)", text: dec, trailers: t.trailers, joined: true})
			}
		}
	}
	seen := map[string]bool{}
	for i, f := range files {
		if seen[f] {
			continue
		}
		seen[f] = true
		t, why := readOutboundFile(f, fileSeg[i].Cwd, cwd, root, open)
		switch {
		case why == "missing":
			// written by this very line: what the line writes is in it
			texts = append(texts, outText{where: "command (body file " + f + " written by the line)", text: line, rewritable: true, trailers: true})
		case why != "":
			unknown = append(unknown, "the file "+f+" ("+why+")")
		default:
			texts = append(texts, outText{where: "file " + f, text: t, trailers: true})
		}
	}
	return texts, unknown
}

// shellString returns the script of `sh -c SCRIPT`, `bash -c …` or
// `eval …`.
func shellString(s Segment) (string, bool) {
	switch name := s.Name(); {
	case isShellName(name):
		command, _ := shellInvocation(s.Argv)
		return command, command != ""
	case name == "eval":
		return strings.Join(s.Argv[1:], " "), len(s.Argv) > 1
	}
	return "", false
}

// subOf returns the subcommand of gh or git, skipping global options and
// their values (git -c k=v -C dir, gh -R owner/repo).
func subOf(argv []string) string {
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		switch {
		case w == "-c" || w == "-C" || w == "-R" || w == "--repo" || w == "--git-dir" || w == "--work-tree" || w == "--namespace" || w == "--exec-path":
			i++
		case strings.HasPrefix(w, "-"):
		default:
			return w
		}
	}
	return ""
}

// loopbackOnly reports whether every URL among args names this machine
// (localhost, 127.0.0.0/8, ::1): a request that never leaves it. With no
// URL at all it is false.
func loopbackOnly(args []string) bool {
	n := 0
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		u := a
		if !strings.Contains(u, "://") {
			if !strings.HasPrefix(u, "localhost") && !strings.HasPrefix(u, "127.") && !strings.HasPrefix(u, "[::1]") {
				continue
			}
			u = "http://" + u
		}
		pu, err := url.Parse(u)
		if err != nil {
			return false
		}
		n++
		h := pu.Hostname()
		if h != "localhost" && h != "::1" && !strings.HasPrefix(h, "127.") {
			return false
		}
	}
	return n > 0
}

// inlineNet: interpreter code that talks to the network.
var inlineNet = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`https?://|requests\.|urllib|http\.client|smtplib|socket\.|fetch\(|axios|XMLHttpRequest|Net::HTTP|LWP::|IO::Socket|curl_exec`)
})

// outboundCommand reports whether argv sends text out of the machine.
func outboundCommand(argv []string) bool {
	if len(argv) == 0 {
		return false
	}
	name := filepath.Base(argv[0])
	switch name {
	case "curl", "wget", "http", "https", "xh", "xhs":
		return !loopbackOnly(argv[1:])
	case "nc", "ncat", "netcat", "telnet", "ssh", "scp", "sftp", "rsync", "mail", "mailx", "sendmail", "mutt", "msmtp", "swaks", "aws", "gcloud", "az":
		return true
	case "python", "python3", "node", "ruby", "perl", "php", "deno", "bun":
		for i := 1; i < len(argv)-1; i++ {
			if a := argv[i]; a == "-c" || a == "-e" || a == "-r" || a == "--eval" || a == "-E" {
				return inlineNet().MatchString(argv[i+1])
			}
		}
		return false
	case "gh":
		sub := subOf(argv)
		rest := []string{}
		for i, w := range argv {
			if w == sub && i > 0 {
				rest = argv[i+1:]
				break
			}
		}
		switch sub {
		case "api":
			return true
		case "pr", "issue", "release", "gist", "discussion", "repo", "label", "project", "secret", "variable":
			verb := ""
			for _, w := range rest {
				if !strings.HasPrefix(w, "-") {
					verb = w
					break
				}
			}
			switch verb {
			case "list", "view", "status", "diff", "checks", "checkout", "download", "clone":
				return false
			}
			return true
		}
		return false
	case "git":
		switch subOf(argv) {
		case "commit", "tag", "notes", "push", "send-email", "request-pull":
			return true
		}
	}
	return false
}

// bodyFiles lists the files s sends as its body: flag values, @file words,
// field=@file, its < input, and a `cat FILE` piped into it.
func bodyFiles(s Segment, before [][]string) []string {
	var out []string
	name := s.Name()
	argv := s.Argv
	for i := 1; i < len(argv); i++ {
		w := argv[i]
		f, v, hasV := strings.Cut(w, "=")
		switch {
		case fileFlags.has(f) || (f == "-F" && (name == "git" || name == "gh" && !hasV && i+1 < len(argv) && !strings.Contains(argv[i+1], "="))):
			if !hasV && i+1 < len(argv) {
				v = argv[i+1]
				i++
			}
			if v != "-" && v != "" {
				out = append(out, strings.TrimPrefix(v, "@"))
			}
		case strings.HasPrefix(w, "@") && len(w) > 1 && w != "@-":
			out = append(out, w[1:])
		case name == "curl" || name == "http" || name == "https" || name == "xh" || name == "gh":
			if strings.ContainsAny(w, " \t\n") {
				continue
			}
			// field=@file, field=<file (curl -F), field@file after --data-urlencode
			seps := []string{"=@", "=<"}
			if i > 1 && argv[i-1] == "--data-urlencode" {
				seps = append(seps, "@")
			}
			for _, sep := range seps {
				if j := strings.Index(w, sep); j > 0 && !strings.HasPrefix(w, "-") && !strings.Contains(w[:j], "/") {
					if f := w[j+len(sep):]; f != "" && f != "-" && !strings.ContainsAny(f, " @") && looksLikePath(f) {
						out = append(out, f)
					}
					break
				}
			}
		}
	}
	out = append(out, s.Inputs...)
	// what the pipeline feeds it: the files its readers read
	for _, raw := range before {
		prev := strip(raw)
		if readers.has(prev.Name()) {
			for _, w := range prev.Argv[1:] {
				if !strings.HasPrefix(w, "-") {
					out = append(out, w)
				}
			}
		}
		out = append(out, prev.Inputs...)
	}
	return out
}

func looksLikePath(f string) bool {
	return strings.ContainsAny(f, "./") || !strings.ContainsAny(f, ":?&")
}

// readOutboundFile reads a body file for scanning, opened with open (see
// Engine.Open). why is "" when text is the file's content, "missing"
// when it does not exist yet, else why docket will not read it.
func readOutboundFile(f, segCwd, cwd, root string, open func(string) (*os.File, error)) (text, why string) {
	base := segCwd
	if base == "" {
		base = cwd
	}
	p := f
	if strings.HasPrefix(p, "~") || strings.Contains(p, "$") {
		return "", "not a literal path"
	}
	if !filepath.IsAbs(p) {
		if base == "" {
			return "", "relative path with no working directory"
		}
		p = filepath.Join(base, p)
	}
	p = filepath.Clean(p)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	inside := false
	for _, dir := range []string{root, cwd, os.TempDir()} {
		if dir == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
		if within(filepath.Clean(dir), p) {
			inside = true
		}
	}
	if !inside {
		return "", "outside the project"
	}
	b, err := regular.ReadFile(open, p, maxOutboundFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", "missing"
	case errors.Is(err, regular.ErrNotRegular):
		return "", "not a regular file"
	case errors.Is(err, regular.ErrTooLarge):
		return "", "larger than docket scans"
	case errors.Is(err, ErrRemoteFile):
		return "", ErrRemoteFile.Error()
	case err != nil:
		return "", "unreadable"
	}
	return string(b), ""
}

// heredocBodies returns the bodies of cmd's here-documents.
func heredocBodies(cmd string) []string {
	if !strings.Contains(cmd, "<<") {
		return nil
	}
	var out []string
	lines := strings.Split(cmd, "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		j := strings.Index(l, "<<")
		for j >= 0 && j+2 < len(l) && l[j+2] == '<' { // here-string
			k := strings.Index(l[j+3:], "<<")
			if k < 0 {
				j = -1
				break
			}
			j += 3 + k
		}
		if j < 0 {
			continue
		}
		rest := strings.TrimLeft(l[j+2:], "-")
		rest = strings.TrimLeft(rest, " \t")
		rest = strings.TrimLeft(rest, "'\"\\")
		e := 0
		for e < len(rest) && (rest[e] == '_' || rest[e] >= 'a' && rest[e] <= 'z' || rest[e] >= 'A' && rest[e] <= 'Z' || rest[e] >= '0' && rest[e] <= '9') {
			e++
		}
		delim := rest[:e]
		if delim == "" {
			continue
		}
		var body []string
		k := i + 1
		for ; k < len(lines); k++ {
			t := strings.TrimSpace(lines[k])
			if t == delim || strings.HasPrefix(t, delim+")") {
				break
			}
			body = append(body, lines[k])
		}
		out = append(out, strings.Join(body, "\n"))
		i = k
	}
	return out
}

// directivesFirst is the decision filter: the prime directives, then the
// policy judge. A directive's block or revise decides at once; its
// escalation stands unless the policy judge blocks.
func (e *Engine) directivesFirst(ctx context.Context, st *engineState, p *ActionProposal, jc *JudgmentContext, d *Decision) (Judgment, error) {
	dj, fired := e.checkDirectives(st.set, p, d)
	if fired && dj.Outcome != Escalate {
		return dj, nil
	}
	jm, err := st.policy.Evaluate(ctx, p, jc)
	if err != nil || !fired || jm.Outcome == Block {
		return jm, err
	}
	return dj, nil
}
