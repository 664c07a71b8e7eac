package hooks

import (
	"regexp"
	"testing"
)

// The status-line readers replace these expressions and must agree with
// them on every input.
var (
	claudeExitRe   = regexp.MustCompile(`^(?:Error: )?Exit code:? (\d+)`)
	geminiExitRe   = regexp.MustCompile(`(?m)^Exit Code: (-?\d+)\s*$`)
	geminiSignalRe = regexp.MustCompile(`(?m)^Signal: (.+?)\s*$`)
	rolloutExitRe  = regexp.MustCompile(`(?m)^(?:Exit code:? |Process exited with code )(-?\d+)\s*$`)
)

func firstRe(re *regexp.Regexp, s string) (string, bool) {
	if m := re.FindStringSubmatch(s); m != nil {
		return m[1], true
	}
	return "", false
}

func lastRe(re *regexp.Regexp, s string) (string, bool) {
	all := re.FindAllStringSubmatch(s, -1)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1][1], true
}

var statusSeeds = []string{
	"", "\n", "Exit code 1", "Exit code: 2", "Error: Exit code 127\nbash: x: not found", "Error: Exit code: 3",
	"Exit code:: 4", "Exit code:5", "Exit code ", "Exit code -1", "exit code 1", " Exit code 1", "Exit code 12ab",
	"Exit Code: 2", "Exit Code: -9\r\n", "Exit Code: 2 \t\f\r", "Exit Code: 2 x", "Exit Code: 2\v", "Exit Code: ",
	"out\nExit Code: 1\nExit Code: 2\n", "Exit Code: 1\n\nExit Code: 3", "Exit Code: 1\n  \nExit Code: x\n",
	"Exit Code: 1\n\n\nExit Code: 2\n\n", "Exit Code: 1\nExit Code: 2x",
	"Signal: 9", "Signal: SIGKILL  \r", "Signal: (none)", "Signal: ", "Signal:  ", "Signal: \t\n", "Signal:  \t",
	"a\nSignal: 1\nSignal: 2\n", "Signal: é ", "Signal: \xff\xfe", "Signal: 1\n\nSignal:  \n",
	"Exit code: 0\nOutput:\nExit code: 1", "Process exited with code 7", "Process exited with code -7  ",
	"Wall time: 0.1s\nProcess exited with code 0\n", "Exit code 3\r", "Exit code: 3\nExit code: 4",
}

func TestStatusLinesMatchExpressions(t *testing.T) {
	for _, s := range statusSeeds {
		checkStatusLines(t, s)
	}
}

func FuzzStatusLines(f *testing.F) {
	for _, s := range statusSeeds {
		f.Add(s)
	}
	f.Fuzz(checkStatusLines)
}

func checkStatusLines(t *testing.T, s string) {
	for _, c := range []struct {
		name string
		got  func(string) (string, bool)
		want func(string) (string, bool)
	}{
		{"claude exit", claudeExitCode, func(s string) (string, bool) { return firstRe(claudeExitRe, s) }},
		{"gemini exit", func(s string) (string, bool) { return lastLine(s, geminiExitCode) }, func(s string) (string, bool) { return lastRe(geminiExitRe, s) }},
		{"gemini signal", func(s string) (string, bool) { return lastLine(s, geminiSignal) }, func(s string) (string, bool) { return lastRe(geminiSignalRe, s) }},
		{"rollout exit", func(s string) (string, bool) { return firstLine(s, rolloutExitCode) }, func(s string) (string, bool) { return firstRe(rolloutExitRe, s) }},
	} {
		g, gok := c.got(s)
		w, wok := c.want(s)
		if g != w || gok != wok {
			t.Errorf("%s(%q) = %q, %v; the expression says %q, %v", c.name, s, g, gok, w, wok)
		}
	}
}
