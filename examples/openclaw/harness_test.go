package openclaw_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/e2e/modelserver"
	"github.com/docket/docket/internal/testbin"
)

// binDir is the directory of docket's binaries.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// buildDocket builds docket's binaries once.
func buildDocket(t *testing.T) {
	t.Helper()
	binDir = testbin.Dir(t)
}

// openclawDir is where e2e/install-openclaw.sh links openclaw and node.
func openclawDir() string {
	if d := os.Getenv("DOCKET_OPENCLAW_BIN"); d != "" {
		return d
	}
	d, _ := filepath.Abs(filepath.Join("..", "..", "e2e", ".npm-openclaw", "bin"))
	return d
}

// requireOpenClaw skips without openclaw, and fails under CI=true.
func requireOpenClaw(t *testing.T) string {
	t.Helper()
	p := filepath.Join(openclawDir(), "openclaw")
	if st, err := os.Stat(p); err != nil || st.IsDir() {
		testbin.Unavailable(t, fmt.Sprintf("openclaw not installed in %s (run e2e/install-openclaw.sh, or set DOCKET_OPENCLAW_BIN)", openclawDir()))
	}
	return p
}

// world is one scenario: a docket state root with `docket serve`
// running on loopback, and tokens for the runtime and a reviewer.
type world struct {
	t        *testing.T
	root     string
	env      []string // DOCKET_HOME, HOME, PATH
	url      string
	runtime  string // token
	reviewer string // token
	serve    *exec.Cmd
	// mcpServers, when set, are OpenClaw's MCP servers (its config's
	// mcp.servers) in every run
	mcpServers map[string]any
}

// newWorld starts a state root, tokens and a docket server; each option
// runs after `docket init` and before the server starts.
func newWorld(t *testing.T, opts ...func(*world)) *world {
	t.Helper()
	buildDocket(t)
	requireOpenClaw(t)
	root := t.TempDir()
	w := &world{t: t, root: root}
	w.env = append(os.Environ(), "DOCKET_HOME="+filepath.Join(root, "docket"), "HOME="+filepath.Join(root, "home"),
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "OPENCLAW_CONFIG_PATH=", "OPENCLAW_HOME=")
	os.MkdirAll(filepath.Join(root, "home"), 0o755)
	w.docket("init")
	w.runtime = w.token("runtime", "oc-test")
	w.reviewer = w.token("reviewer", "maintainer")
	for _, o := range opts {
		o(w)
	}
	w.startServe()
	return w
}

// withoutRule is a newWorld option: the state root's tools.yaml drops
// the default rule id, and a maintainer approves the change.
func withoutRule(id string) func(*world) {
	return func(w *world) {
		w.t.Helper()
		p := filepath.Join(w.root, "docket", "policies", "tools.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			w.t.Fatal(err)
		}
		start := bytes.Index(b, []byte("  - id: "+id+"\n"))
		if start < 0 {
			w.t.Fatalf("tools.yaml has no rule %s", id)
		}
		end := bytes.Index(b[start+1:], []byte("\n  - id: "))
		if end < 0 {
			w.t.Fatalf("rule %s is the last rule of tools.yaml", id)
		}
		cut := append(append([]byte(nil), b[:start]...), b[start+1+end+1:]...)
		if err := os.WriteFile(p, cut, 0o600); err != nil {
			w.t.Fatal(err)
		}
		w.docket("policy", "approve", "--yes")
	}
}

func (w *world) docket(args ...string) string {
	w.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "docket"), args...)
	cmd.Env = w.env
	cmd.Dir = w.root
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		w.t.Fatalf("docket %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

var tokenRE = regexp.MustCompile(`dkt_[A-Za-z0-9_-]+`)

func (w *world) token(role, name string) string {
	w.t.Helper()
	out := w.docket("token", "create", "--role", role, "--name", name)
	tok := tokenRE.FindString(out)
	if tok == "" {
		w.t.Fatalf("no token in %q", out)
	}
	return tok
}

func (w *world) startServe() {
	w.t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "docket"), "serve", "--addr", "127.0.0.1:0")
	cmd.Env = w.env
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.serve = cmd
	w.t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "docket: serving "); ok {
				select {
				case found <- u:
				default:
				}
			}
		}
	}()
	select {
	case w.url = <-found:
	case <-time.After(30 * time.Second):
		w.t.Fatal("docket serve did not start within 30 s")
	}
}

// api calls docket serve with a token and decodes the JSON answer.
func (w *world) api(method, path, token string, body any, want int) map[string]any {
	w.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, w.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		w.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		w.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// remember writes what a past decision taught (as the runtime would
// write back a decision) and returns the review items it queued and
// the memories they are about.
func (w *world) remember(workspace, key, outcome, reason string, mem map[string][]string) (items, memories []string) {
	w.t.Helper()
	m := map[string]any{}
	for k, v := range mem {
		m[k] = v
	}
	r := w.api("POST", "/v1/judge/decisions", w.runtime, map[string]any{
		"schema_version": "openbrain.judge.decision.v1", "workspace_id": workspace, "action_id": key, "idempotency_key": key,
		"decision": outcome, "reasoning_summary": reason, "confidence": "high", "judge": map[string]any{"kind": "human"},
		"memory_to_write": m,
	}, 201)
	for _, it := range r["review_items"].([]any) {
		items = append(items, it.(string))
	}
	for _, it := range r["memories"].([]any) {
		memories = append(memories, it.(string))
	}
	if len(items) == 0 || len(memories) == 0 {
		w.t.Fatalf("no memory queued for review: %v", r)
	}
	return items, memories
}

// confirm confirms review items through the API, as a reviewer.
func (w *world) confirm(items []string, as string) {
	w.t.Helper()
	for _, id := range items {
		w.api("POST", "/v1/review-queue/"+id+"/actions", w.reviewer, map[string]any{"action": "confirm", "as": as}, 200)
	}
}

// run is one `openclaw agent --local` run against a scripted model.
type run struct {
	model   *modelserver.Server
	hooks   []map[string]any // the plugin's hook log
	out     string
	elapsed time.Duration
}

// runOpenClaw wires docket into a fresh OpenClaw home with `docket
// install --runtime openclaw` and runs one headless turn.
func (w *world) runOpenClaw(name, workspace, message string, script []modelserver.Turn, files map[string]string) *run {
	w.t.Helper()
	oc := requireOpenClaw(w.t)
	model, err := modelserver.StartOpenClaw(script)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { model.Close() })
	ochome := filepath.Join(w.root, "openclaw-"+name)
	ws := filepath.Join(ochome, "workspace")
	os.MkdirAll(ws, 0o755)
	for n, c := range files {
		os.WriteFile(filepath.Join(ws, n), []byte(c), 0o644)
	}
	cfgPath := filepath.Join(ochome, ".openclaw", "openclaw.json")
	os.MkdirAll(filepath.Dir(cfgPath), 0o700)
	cfg := map[string]any{
		"models": map[string]any{"providers": map[string]any{"scripted": map[string]any{
			"baseUrl": model.URL + "/v1", "apiKey": "scripted", "api": "openai-responses",
			"models": []any{map[string]any{"id": "scripted-1", "name": "scripted-1", "reasoning": false, "input": []string{"text"},
				"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 200000, "maxTokens": 4096}},
		}}},
		"agents": map[string]any{"defaults": map[string]any{"model": map[string]any{"primary": "scripted/scripted-1"}, "workspace": ws}},
	}
	if w.mcpServers != nil {
		cfg["mcp"] = map[string]any{"servers": w.mcpServers}
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(cfgPath, b, 0o600)
	w.docket("install", "--runtime", "openclaw", "--config", cfgPath, "--server", w.url, "--token", w.runtime)
	// the plugin's config also names the workspace its proposals belong to
	var doc map[string]any
	b, _ = os.ReadFile(cfgPath)
	json.Unmarshal(b, &doc)
	pc := doc["plugins"].(map[string]any)["entries"].(map[string]any)["docket"].(map[string]any)["config"].(map[string]any)
	pc["workspace"] = workspace
	b, _ = json.MarshalIndent(doc, "", "  ")
	os.WriteFile(cfgPath, b, 0o600)

	hookLog := filepath.Join(ochome, "hooks.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 480*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, oc, "agent", "--local", "--agent", "main", "-m", message, "--json", "--timeout", "420")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "OPENCLAW_HOME="+ochome, "OPENCLAW_CONFIG_PATH="+cfgPath, "HOME="+ochome,
		"TMPDIR="+filepath.Join(ochome, "tmp"), "DOCKET_OPENCLAW_HOOK_LOG="+hookLog,
		"PATH="+openclawDir()+string(os.PathListSeparator)+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NO_PROXY=127.0.0.1,localhost", "HTTP_PROXY="+model.URL, "HTTPS_PROXY="+model.URL, "OPENAI_API_KEY=scripted")
	os.MkdirAll(filepath.Join(ochome, "tmp"), 0o700)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	r := &run{model: model, out: out.String(), elapsed: time.Since(start)}
	w.t.Logf("openclaw run %s: %.1f s", name, r.elapsed.Seconds())
	if err != nil {
		w.t.Fatalf("openclaw agent --local: %v\n%s", err, tail(r.out, 4000))
	}
	lb, _ := os.ReadFile(hookLog)
	for _, line := range strings.Split(strings.TrimSpace(string(lb)), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			r.hooks = append(r.hooks, m)
		}
	}
	if len(r.hooks) == 0 {
		w.t.Fatalf("the plugin's hook log is empty: OpenClaw ran no docket hook\n%s", tail(r.out, 4000))
	}
	if os.Getenv("DOCKET_OPENCLAW_DEMO") != "" {
		for _, h := range r.hooks {
			w.t.Log(describe(h))
		}
	}
	return r
}

// hook returns the hook log lines of one hook whose tool (if given) matches.
func (r *run) hook(name, tool string) []map[string]any {
	var out []map[string]any
	for _, h := range r.hooks {
		if h["hook"] == name && (tool == "" || h["tool"] == tool) {
			out = append(out, h)
		}
	}
	return out
}

// commandHook returns the before_tool_call log line of the exec whose
// command contains sub.
func (r *run) commandHook(sub string) map[string]any {
	for _, h := range r.hook("before_tool_call", "exec") {
		if p, ok := h["params"].(map[string]any); ok && strings.Contains(fmt.Sprint(p["command"]), sub) {
			return h
		}
	}
	return nil
}

func memoryIDs(h map[string]any) []string {
	var ids []string
	us, _ := h["memoryUsed"].([]any)
	for _, u := range us {
		if m, ok := u.(map[string]any); ok {
			ids = append(ids, fmt.Sprint(m["memory_id"]))
		}
	}
	return ids
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// allMainText is every main request's text: what reached the model.
func (r *run) allMainText() string {
	var b strings.Builder
	for _, q := range r.model.MainRequests() {
		b.WriteString(q.Text())
		b.WriteByte('\n')
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// describe is one hook log line for a person watching the demo.
func describe(h map[string]any) string {
	s := fmt.Sprintf("%-22v", h["hook"])
	if t, ok := h["tool"]; ok {
		s += fmt.Sprintf(" %v", t)
	}
	if p, ok := h["params"].(map[string]any); ok {
		if c, ok := p["command"]; ok {
			s += fmt.Sprintf(" `%v`", c)
		} else if c, ok := p["path"]; ok {
			s += fmt.Sprintf(" %v", c)
		}
	}
	if d, ok := h["decision"]; ok {
		s += fmt.Sprintf(" → %v", d)
	}
	if ids := memoryIDs(h); len(ids) > 0 {
		s += fmt.Sprintf(" (recalled %s)", strings.Join(ids, ", "))
	}
	if rc, ok := h["recalled"].([]any); ok {
		s += fmt.Sprintf(" recalled %d memories", len(rc))
	}
	if k, ok := h["kind"]; ok {
		s += fmt.Sprintf(" ledger %v #%v", k, h["seq"])
	}
	if r, ok := h["reason"].(string); ok {
		if len(r) > 600 {
			r = r[:600] + " …"
		}
		s += "\n      " + strings.ReplaceAll(r, "\n", "\n      ")
	}
	return s
}
