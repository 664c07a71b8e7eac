package judge

import (
	"context"
	"testing"

	"github.com/docket/docket/internal/home"
)

// docket's hook binaries are what the runtime runs on every call: a tool
// call that replaces docket-judge with /bin/true, or removes it (a
// missing hook fails open), would switch the judge off at once. Writes
// to them, and moves or removals of their directory, are refused; the
// directory's other files and reading them are not docket's business.
func TestHookBinariesProtected(t *testing.T) {
	h, _ := home.At("/home/u/.local/state/docket")
	bin := "/home/u/.local/bin"
	e := &Engine{Home: h, Protector: &Protector{Home: h, UserHome: "/home/u", XDGState: "/home/u/.local/state", HookBins: []string{bin}}}
	e.SetPolicy(defaultSet(t))
	proj := t.TempDir()
	for _, tc := range []struct {
		name    string
		line    string
		refused bool
	}{
		{"copy over the judge", "cp /bin/true /home/u/.local/bin/docket-judge", true},
		{"redirect over the gate", `printf '#!/bin/sh\n' > ~/.local/bin/docket-gate`, true},
		{"remove the ledger hook", "rm -f $HOME/.local/bin/docket-ledger", true},
		{"link over the judge", "ln -sf /bin/true ~/.local/bin/docket-judge", true},
		{"move the directory", "mv ~/.local/bin ~/.local/bin.old", true},
		{"remove a parent", "rm -rf ~/.local", true},
		{"install over docket", "install -m 755 ./docket ~/.local/bin/docket", true},
		// other spellings an agent could try
		{"dd over the judge", "dd if=/bin/true of=/home/u/.local/bin/docket-judge", true},
		{"tee over the judge", "tee ~/.local/bin/docket-judge < /bin/true", true},
		{"truncate the gate", "truncate -s0 ~/.local/bin/docket-gate", true},
		{"make the judge unrunnable", "chmod -x ~/.local/bin/docket-judge", true},
		{"lock the directory", "chmod 000 ~/.local/bin", true},
		{"a glob for the judge", "cp /bin/true ~/.local/bin/docket-jud?e", true},
		{"from the directory", "cd ~/.local/bin && cp /bin/true docket-judge", true},
		{"inline code", `python3 -c "open('/home/u/.local/bin/docket-judge','w').write('')"`, true},
		{"another tool in the directory", "cp ./mytool ~/.local/bin/mytool", false},
		{"a variable that could be anything", `while read -r l; do eval "$l"; done`, false},
		{"a destination in a variable", `cp ./out "$DEST"`, false},
		{"a directory in a variable", `cp /bin/true "$BIN/docket-judge"`, true},
		{"read the judge", "sha256sum ~/.local/bin/docket-judge", false},
		{"list the directory", "ls -l ~/.local/bin", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := e.Decide(context.Background(), bash(proj, tc.line))
			if got := hasRule(d, ProtectHookBinary); got != tc.refused {
				t.Fatalf("%q: refused %v, want %v (%s %v %s)", tc.line, got, tc.refused, d.Outcome, d.RuleIDs, d.Reason)
			}
		})
	}
	// destroying / or the home directory has its own protection, with
	// its own reason
	for _, line := range []string{"rm -rf /", "rm -rf ~"} {
		if _, d := e.Decide(context.Background(), bash(proj, line)); !hasRule(d, ProtectDestructive) {
			t.Errorf("%q: %s %v %s", line, d.Outcome, d.RuleIDs, d.Reason)
		}
	}
	// the file tools too
	_, d := e.Decide(context.Background(), tool(proj, "Write", map[string]any{"file_path": bin + "/docket-judge", "content": "#!/bin/sh\n"}))
	if !hasRule(d, ProtectHookBinary) {
		t.Errorf("Write over the judge: %s %v %s", d.Outcome, d.RuleIDs, d.Reason)
	}
}
