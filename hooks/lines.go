package hooks

import "strings"

// The runtimes report a command's exit status as a line of its output.
// These readers are written out rather than regular expressions so that
// docket-ledger, which links this package on every tool call, need not
// link regexp and the Unicode tables it pulls in. lines_test.go checks
// each against the expression it replaces.

// claudeExitCode reads `^(?:Error: )?Exit code:? (\d+)`: the start of a
// failed Bash call's output in Claude Code; text may follow the number.
func claudeExitCode(s string) (string, bool) {
	s = strings.TrimPrefix(s, "Error: ")
	s, ok := strings.CutPrefix(s, "Exit code")
	if !ok {
		return "", false
	}
	s = strings.TrimPrefix(s, ":")
	if s, ok = strings.CutPrefix(s, " "); !ok {
		return "", false
	}
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return s[:n], n > 0
}

// statusNumber reads a line `prefix(-?\d+)\s*$`: prefix, an optional
// minus and decimal digits, then only blanks (space, \t, \f, \r).
func statusNumber(line, prefix string) (string, bool) {
	rest, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return "", false
	}
	n := 0
	if strings.HasPrefix(rest, "-") {
		n = 1
	}
	start := n
	for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
		n++
	}
	if n == start || strings.TrimRight(rest[n:], blanks) != "" {
		return "", false
	}
	return rest[:n], true
}

// blanks are the characters of \s other than the newline.
const blanks = " \t\f\r"

// geminiExitCode reads Gemini CLI's `Exit Code: N` line.
func geminiExitCode(line string) (string, bool) { return statusNumber(line, "Exit Code: ") }

// geminiSignal reads Gemini CLI's `Signal: S` line, `^Signal: (.+?)\s*$`:
// S is the rest of the line without its trailing blanks (its first
// character when the rest is all blanks).
func geminiSignal(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "Signal: ")
	if !ok || rest == "" {
		return "", false
	}
	if v := strings.TrimRight(rest, blanks); v != "" {
		return v, true
	}
	return rest[:1], true
}

// rolloutExitCode reads a Codex rollout's `Exit code: N`, `Exit code N`
// or `Process exited with code N` line.
func rolloutExitCode(line string) (string, bool) {
	for _, p := range []string{"Exit code: ", "Exit code ", "Process exited with code "} {
		if n, ok := statusNumber(line, p); ok {
			return n, true
		}
	}
	return "", false
}

// firstLine returns what read finds in the first line of s (lines end at
// \n) where it finds anything.
func firstLine(s string, read func(line string) (string, bool)) (string, bool) {
	for {
		line, rest, more := strings.Cut(s, "\n")
		if v, ok := read(line); ok {
			return v, true
		}
		if !more {
			return "", false
		}
		s = rest
	}
}

// lastLine is firstLine from the end: Gemini appends its status lines
// after the command's output, so a line the command printed itself comes
// first.
func lastLine(s string, read func(line string) (string, bool)) (string, bool) {
	for {
		i := strings.LastIndexByte(s, '\n')
		if v, ok := read(s[i+1:]); ok {
			return v, true
		}
		if i < 0 {
			return "", false
		}
		s = s[:i]
	}
}
