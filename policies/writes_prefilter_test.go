package policies

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// writeCommands are shell commands from the real payloads and crafted
// ones, writes and not.
func writeCommands(t *testing.T) []string {
	cmds := []string{
		"go test ./...", "echo hi > out.txt", "echo hi >> /dev/null", "cat a | tee b", "sed -i s/a/b/ f",
		"rm -rf build", "sudo rm x", "git checkout main", "git commit --amend -m x", "gofmt -w .", "go mod tidy",
		"npm install", "pip install x", "prettier --write .", "black src", "ruff format", "cargo fmt", "make",
		"make build", "find . -delete", "python3 -c 'open(\"x\",\"w\")'", "node -e \"require('fs').writeFileSync('x','')\"",
		"RM -rf x", "Tee x", "ls; mv a b", "(cp a b)", "xargs -0 rm", "curl -s https://x -o f", "wget https://x",
		"grep 'a > b' f", "echo \"x > y\"", "ls 2>&1", "true", "", "GIT CHECKOUT x", "echo ſ > x",
	}
	files, _ := filepath.Glob("../testdata/realdata/payloads/*.json")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			ToolInput struct {
				Command string `json:"command"`
			} `json:"tool_input"`
		}
		if json.Unmarshal(b, &p) == nil && p.ToolInput.Command != "" {
			cmds = append(cmds, p.ToolInput.Command)
		}
	}
	if len(cmds) < 80 {
		t.Fatalf("only %d commands", len(cmds))
	}
	return cmds
}

// IsWriteCommand with its literal prefilter answers as every pattern run
// on every command does.
func TestWritePrefilterSound(t *testing.T) {
	lex, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	writes := 0
	for _, cmd := range writeCommands(t) {
		want := false
		for _, p := range lex.WriteRaw {
			if p.Regexp().MatchString(cmd) {
				want = true
				if !p.MayMatchFolded(foldString(cmd)) {
					t.Errorf("pattern %s matches %q but its prefilter says no", p, cmd)
				}
			}
		}
		blanked := blankQuotes(cmd)
		for _, p := range lex.WriteBash {
			if p.Regexp().MatchString(blanked) {
				want = true
				if !p.MayMatchFolded(foldString(blanked)) {
					t.Errorf("pattern %s matches %q but its prefilter says no", p, blanked)
				}
			}
		}
		if got := lex.IsWriteCommand(cmd); got != want {
			t.Errorf("IsWriteCommand(%q) = %v, patterns say %v", cmd, got, want)
		}
		if want {
			writes++
		}
	}
	if writes < 20 {
		t.Errorf("only %d writes among the commands: the test proves little", writes)
	}
	for _, tool := range []string{"Write", "Edit", "write", "mcp__fs__write_file", "MCP__FS__WRITE_FILE", "Read", "Bash", "apply_patch"} {
		want := false
		for _, p := range lex.WriteTools {
			want = want || p.Regexp().MatchString(tool)
		}
		if got := lex.IsWriteTool(tool); got != want {
			t.Errorf("IsWriteTool(%q) = %v, patterns say %v", tool, got, want)
		}
	}
}

// A lexicon's own write patterns (not in the known table) get their
// literals derived, case-insensitive ones folded as (?i) folds.
func TestWritePrefilterEditedLexicon(t *testing.T) {
	tests := []struct {
		pattern, cmd string
		want         bool
	}{
		{`(?i)\bdeploy\b`, "DEPLOY now", true},
		{`(?i)\bdeploy\b`, "deploy", true},
		{`(?i)sudo\s`, "ſudo x", true}, // long s folds with s
		{`sudo\s`, "ſudo x", false},
		{`\bmytool\s+--save\b`, "mytool --save", true},
		{`\bmytool\s+--save\b`, "othertool", false},
		{`\d{3}`, "123", true}, // no literal: always run
	}
	for _, tc := range tests {
		ps, err := newPatterns("writes.bash", []string{tc.pattern}, "", "", false)
		if err != nil {
			t.Fatal(err)
		}
		c := &Claims{WriteBash: ps}
		if got := c.IsWriteCommand(tc.cmd); got != tc.want {
			t.Errorf("%s on %q = %v, want %v", tc.pattern, tc.cmd, got, tc.want)
		}
		if got := ps[0].Regexp().MatchString(blankQuotes(tc.cmd)); got != tc.want {
			t.Errorf("%s on %q: the regexp says %v (test expectation wrong)", tc.pattern, tc.cmd, got)
		}
	}
}

// Every exclude pattern that matches a text passes its prefilter on it.
func TestExcludePrefilterSound(t *testing.T) {
	lex, err := DefaultClaims()
	if err != nil {
		t.Fatal(err)
	}
	texts := append(cueTexts(t), "not done", "NOT DONE", "green-button", "passed to the parser", "Passing THE value",
		"做完后", "안 끝", "got done", "what I have done", "working on it", "unverified")
	matched := 0
	for _, r := range lex.Types {
		for _, p := range r.Exclude {
			for _, s := range texts {
				if p.Regexp().MatchString(s) {
					matched++
					if !p.MayMatchFolded(foldString(s)) {
						t.Errorf("exclude %s matches %q but its prefilter says no", p, s)
					}
				}
			}
		}
	}
	if matched < 10 {
		t.Errorf("only %d exclude matches: the test proves little", matched)
	}
}
