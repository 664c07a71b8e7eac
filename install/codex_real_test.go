package install

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/testbin"
)

// TestCodexTrustWithRealCodex asks a real Codex CLI whether it trusts the
// hooks `docket install --runtime codex` wired, in both scopes: `codex
// app-server`'s hooks/list must report every docket entry "trusted". The
// codex executable is $DOCKET_CODEX_BIN, else the native binary of the
// Codex CLI e2e/install.sh pinned (0.169.0); without one the test skips,
// and under CI=true fails.
func TestCodexTrustWithRealCodex(t *testing.T) {
	bin := os.Getenv("DOCKET_CODEX_BIN")
	if bin == "" {
		found, _ := filepath.Glob("../e2e/.npm/cli/node_modules/@openai/codex-linux-x64/vendor/*/bin/codex")
		if len(found) == 0 {
			testbin.Unavailable(t, "no codex executable: set DOCKET_CODEX_BIN, or run e2e/install.sh")
		}
		bin, _ = filepath.Abs(found[0])
	}
	root := t.TempDir()
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	o := Options{Runtime: hooks.Codex, BinDir: filepath.Join(root, "opt", "docket bin"),
		HomeDir: filepath.Join(root, "home"), ProjectDir: filepath.Join(root, "proj")}
	codexHome := filepath.Join(o.HomeDir, ".codex")
	t.Setenv("CODEX_HOME", codexHome)
	os.MkdirAll(filepath.Join(o.ProjectDir, ".git"), 0o755) // a project root for Codex
	fakeBinaries(t, o.BinDir)
	for _, sc := range []Scope{Project, User} {
		o.Scope = sc
		c := install(t, o)
		p, err := PlanCodexConfig(CodexOptions{ConfigPath: CodexConfigPath(o.HomeDir), Hooks: CodexFiles(o.HomeDir, o.ProjectDir, c),
			ProjectDir: o.ProjectDir, TrustProject: true, StateRoot: filepath.Join(root, "state")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(p.Change, time.Now()); err != nil {
			t.Fatal(err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "app-server")
	cmd.Dir = o.ProjectDir
	cmd.Env = append(os.Environ(), "CODEX_HOME="+codexHome, "HOME="+o.HomeDir)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for _, m := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"docket-test","version":"0"}}}`,
		`{"method":"initialized"}`,
		`{"id":2,"method":"hooks/list","params":{"cwds":[` + strings.TrimSpace(mustMarshal(o.ProjectDir)) + `]}}`,
	} {
		if _, err := in.Write([]byte(m + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Data []struct {
					Hooks []struct {
						Key, Command, TrustStatus, CurrentHash string
					} `json:"hooks"`
				} `json:"data"`
			} `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID != 2 {
			continue
		}
		n := 0
		for _, d := range msg.Result.Data {
			for _, h := range d.Hooks {
				if DocketBinary(h.Command) == "" {
					continue
				}
				n++
				if h.TrustStatus != "trusted" {
					t.Errorf("%s: %s (current hash %s)", h.Key, h.TrustStatus, h.CurrentHash)
				}
			}
		}
		if n != 2*len(Wiring(hooks.Codex)) {
			t.Errorf("codex lists %d docket hooks, want %d", n, 2*len(Wiring(hooks.Codex)))
		}
		return
	}
	t.Fatalf("no hooks/list answer: %v", sc.Err())
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
