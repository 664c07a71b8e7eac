// Package firewall is the store's write-back firewall: it refuses text
// that is not a compact judgment event — raw transcripts, model reasoning
// traces, code or log dumps, oversized text — and text holding secrets.
//
// Secret detection is a SecretDetector the program installs with
// UseDetector: gitleaks' maintained rule set (store/firewall/gitleaks) in
// the docket CLI, a call out to `docket firewall-check` in the PreToolUse
// hook. A cheap gate skips the detector for text with no token-shaped run
// at all; it never decides that something is a secret, only that nothing
// could be one. With no detector installed every token-shaped text counts
// as a secret (fail closed).
package firewall

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// MaxText is the longest text a compact event field may hold.
const MaxText = 4000

// Reasons a text is refused.
const (
	ReasonSecret     = "secret-like content"
	ReasonTranscript = "raw transcript"
	ReasonTrace      = "model reasoning trace"
	ReasonDump       = "code or log dump"
	ReasonTooLong    = "longer than a compact event allows"
)

// Check returns why text may not be written back, or "" when it may. A
// secret's reason names the gitleaks rule, never the secret.
func Check(text string) string {
	switch {
	case len(text) > MaxText:
		return ReasonTooLong
	case IsTranscript(text):
		return ReasonTranscript
	case IsReasoningTrace(text):
		return ReasonTrace
	case IsDump(text):
		return ReasonDump
	}
	if rule := Secret(text); rule != "" {
		return ReasonSecret + " (" + rule + ")"
	}
	return ""
}

// A SecretDetector returns the id of the rule a secret in text matches, or
// "" when there is none.
type SecretDetector func(text string) (rule string, err error)

var (
	detMu    sync.RWMutex
	detector SecretDetector
)

// UseDetector installs the process's secret detector.
func UseDetector(d SecretDetector) {
	detMu.Lock()
	detector = d
	detMu.Unlock()
}

// Secret returns the id of the rule a secret in text matches, or "". If
// no detector is installed or it fails, every token-shaped text counts as
// a secret (fail closed).
func Secret(text string) string {
	if !tokenShaped(text) {
		return ""
	}
	detMu.RLock()
	d := detector
	detMu.RUnlock()
	if d == nil {
		return "detector-unavailable"
	}
	rule, err := d(text)
	if err != nil {
		return "detector-unavailable"
	}
	return rule
}

// tokenShaped reports whether text holds anything a secret rule could
// match: a PEM header, or a run of 10+ token characters mixing letters
// with digits or symbols, or 16+ mixing cases.
func tokenShaped(text string) bool {
	if strings.Contains(text, "-----BEGIN") {
		return true
	}
	n, letter, digit, sym, upper, lower := 0, false, false, false, false, false
	flush := func() bool {
		hit := (n >= 10 && letter && (digit || sym)) || (n >= 16 && upper && lower)
		n, letter, digit, sym, upper, lower = 0, false, false, false, false, false
		return hit
	}
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) && r < 128:
			letter = true
			upper = upper || unicode.IsUpper(r)
			lower = lower || unicode.IsLower(r)
		case r >= '0' && r <= '9':
			digit = true
		case strings.ContainsRune("_-+/=.~$", r):
			sym = true
		default:
			if flush() {
				return true
			}
			continue
		}
		n++
	}
	return flush()
}

// Compiled on first use: the judge links this package for write-backs,
// which most calls never make.
var (
	roleLine  = lazyRegexp(`(?im)^\s*(?:\*\*)?(user|assistant|human|system|ai|tool|model)(?:\*\*)?\s*[:>]`)
	roleJSON  = lazyRegexp(`"(?:role|type)"\s*:\s*"(user|assistant|system|tool|human|tool_result|tool_use)"`)
	traceMark = lazyRegexp(`(?i)</?(thinking|reasoning|scratchpad|chain_of_thought)>|"type"\s*:\s*"(thinking|reasoning|redacted_thinking)"|chain[- ]of[- ]thought|let me think step by step|^\s*(thought|thinking|reasoning)\s*:`)
)

// IsTranscript reports whether text looks like a conversation dump: turns
// marked by role, as lines ("user: …", "Assistant: …") or as message JSON.
func IsTranscript(text string) bool {
	roles := map[string]int{}
	n := 0
	for _, m := range roleLine().FindAllStringSubmatch(text, -1) {
		roles[strings.ToLower(m[1])]++
		n++
	}
	for _, m := range roleJSON().FindAllStringSubmatch(text, -1) {
		roles[strings.ToLower(m[1])]++
		n++
	}
	return len(roles) >= 2 && n >= 2 || n >= 4
}

// IsReasoningTrace reports whether text carries a model's reasoning trace.
func IsReasoningTrace(text string) bool {
	for _, line := range strings.Split(text, "\n") {
		if traceMark().MatchString(line) {
			return true
		}
	}
	return false
}

// IsDump reports whether text is a code or log dump: a fenced block or a
// run of lines longer than a compact event needs.
func IsDump(text string) bool {
	if strings.Count(text, "```") >= 2 && strings.Count(text, "\n") > 12 {
		return true
	}
	return strings.Count(text, "\n") > 40
}

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
