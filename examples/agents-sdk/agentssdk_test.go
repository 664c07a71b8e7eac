// Package agentssdk runs the OpenAI Agents SDK example (run.mjs with
// guardrails.mjs) against the real `docket serve` and a scripted model on
// loopback, and checks what docket decided, what ran, what reached the
// model, and what was written back.
//
// The SDK is installed by install.sh into .npm (pinned, from npm). Without
// it the test skips; under CI=true it fails.
package agentssdk

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
	"strings"
	"testing"
	"time"

	"github.com/docket/docket/e2e/modelserver"
	"github.com/docket/docket/internal/canonjson"
	"github.com/docket/docket/internal/testbin"
)

// requireSDK returns the node to run the example with, or skips (fails
// under CI=true: an example that did not run is not a pass).
func requireSDK(t *testing.T) string {
	t.Helper()
	node, _ := filepath.Abs(filepath.Join(".npm", "bin", "node"))
	_, errNode := os.Stat(node)
	_, errPkg := os.Stat(filepath.Join("node_modules", "@openai", "agents", "package.json"))
	if errNode != nil || errPkg != nil {
		testbin.Unavailable(t, "the Agents SDK is not installed here (run examples/agents-sdk/install.sh)")
	}
	return node
}

// docket runs the built docket CLI with env.
func docket(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "docket"), args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("docket %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// serve starts `docket serve` on a free loopback port and returns its URL.
func serve(t *testing.T, bin string, env []string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, "docket"), "serve", "--addr", "127.0.0.1:0")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
		}
	})
	urls := make(chan string, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if u, ok := strings.CutPrefix(line, "docket: serving "); ok {
				urls <- u
			}
		}
	}()
	select {
	case u := <-urls:
		return u
	case <-time.After(60 * time.Second):
		t.Fatalf("docket serve did not start: %s", log.String())
	}
	return ""
}

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// blockRule is a rule added to the state root's tools.yaml (and approved):
// the blocked call's reason must reach the model word for word.
const blockRule = `  - id: no-mail-from-agents
    effect: deny
    tool: send_email
    reason: "agents may not email customers; draft the text and ask a person to send it"
`

type summary struct {
	Executed    []string         `json:"executed"`
	Events      []map[string]any `json:"events"`
	FinalOutput string           `json:"finalOutput"`
	Error       *struct {
		Name       string         `json:"name"`
		Message    string         `json:"message"`
		Guardrail  string         `json:"guardrail"`
		OutputInfo map[string]any `json:"outputInfo"`
	} `json:"error"`
}

func TestGuardrailsAgainstDocketServe(t *testing.T) {
	node := requireSDK(t)
	bin := testbin.Dir(t)
	for _, api := range []string{"chat_completions", "responses"} {
		t.Run(api, func(t *testing.T) { runScenario(t, node, bin, api) })
	}
	t.Run("docket_unreachable", func(t *testing.T) { runUnreachable(t, node) })
}

// runUnreachable: with docket down, no call runs; the model reads why;
// the high-risk call still stops the run.
func runUnreachable(t *testing.T, node string) {
	model, err := modelserver.StartFunctions([]modelserver.FunctionTurn{
		{Name: "lookup_invoice", Arguments: `{"id":"INV-42"}`},
		{Name: "delete_customer", Arguments: `{"customer":"ACME-7"}`},
		{Text: "All done."},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	s, _ := runExample(t, node, []string{"DOCKET_URL=http://127.0.0.1:1", "DOCKET_TOKEN=dkt_x", "DOCKET_SESSION=sdk-down",
		"OPENAI_BASE_URL=" + model.URL + "/v1", "AGENTS_API=chat_completions"})
	if len(s.Executed) != 0 {
		t.Errorf("ran without a judge: %q", s.Executed)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || len(reqs[1].ToolResults) != 1 || !strings.Contains(reqs[1].ToolResults[0], "docket could not judge this call, so it was not run (fail closed)") {
		t.Errorf("what the model saw: %+v", reqs)
	}
	if s.Error == nil || s.Error.Name != "ToolInputGuardrailTripwireTriggered" {
		t.Errorf("high-risk call with docket down: %+v", s.Error)
	}
}

// runExample runs run.mjs with extra environment and decodes its summary.
func runExample(t *testing.T, node string, extra []string) (summary, string) {
	t.Helper()
	cmd := exec.Command(node, "run.mjs")
	cmd.Env = append(append(os.Environ(), "OPENAI_API_KEY=test", "OPENAI_AGENTS_DISABLE_TRACING=1"), extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() { <-ctx.Done(); cmd.Process.Kill() }()
	if err := cmd.Run(); err != nil {
		t.Fatalf("run.mjs: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
	}
	var s summary
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &s); err != nil {
		t.Fatalf("run.mjs printed %q (%v); stderr: %s", out.String(), err, errb.String())
	}
	t.Logf("summary: %s", out.String())
	return s, out.String()
}

// TestCanonicalJSONMatchesDocket: the guardrail's arguments_digest is the
// digest docket computes of the same input, for inputs where a naive
// JSON.stringify would differ.
func TestCanonicalJSONMatchesDocket(t *testing.T) {
	node := requireSDK(t)
	inputs := []string{
		`{"b":1,"a":{"z":[3,2,{"y":null,"x":true}]},"é":"<&>"}`,
		`{"s":"tab\there\nline\bback\fform\u0001ctl","q":"\"quoted\" \\ slash /"}`,
		`{"sep":"a\u2028b\u2029c","emoji":"😀","ǅ":"x","~":"last","\ud7ff":"bmp"}`,
		`{"n":[1.5,-0,1e21,12345678901234567890,0.1]}`,
	}
	for _, in := range inputs {
		cmd := exec.Command(node, "--input-type=module", "-e",
			`import {canonicalJSON} from './guardrails.mjs'; process.stdout.write(canonicalJSON(JSON.parse(process.argv[1])));`, in)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v %s", err, out)
		}
		// what docket canonicalizes is the JSON text the guardrail sends
		want, err := canonjson.Canonical(out)
		if err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if string(out) != string(want) {
			t.Errorf("input %s\n js: %s\n go: %s", in, out, want)
		}
	}
}

func runScenario(t *testing.T, node, bin, api string) {
	root := t.TempDir()
	env := append(os.Environ(), "DOCKET_HOME="+filepath.Join(root, "docket"), "DOCKET_STORE_DSN=", "HOME="+root, "XDG_STATE_HOME=")
	docket(t, bin, env, "init")
	tools := filepath.Join(root, "docket", "policies", "tools.yaml")
	b, err := os.ReadFile(tools)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("\nrules:\n")) {
		t.Fatal("tools.yaml has no rules section")
	}
	b = bytes.Replace(b, []byte("\nrules:\n"), []byte("\nrules:\n"+blockRule), 1)
	if err := os.WriteFile(tools, b, 0o600); err != nil {
		t.Fatal(err)
	}
	docket(t, bin, env, "policy", "approve", "--yes", "--by", "ana")
	token := strings.TrimSpace(lastLine(docket(t, bin, env, "token", "create", "--role", "runtime", "--name", "agents-sdk", "--workspace", "billing")))
	reviewer := strings.TrimSpace(lastLine(docket(t, bin, env, "token", "create", "--role", "reviewer", "--name", "ana")))
	url := serve(t, bin, env)

	model, err := modelserver.StartFunctions([]modelserver.FunctionTurn{
		{Name: "lookup_invoice", Arguments: `{"id":"INV-42"}`},
		{Name: "send_email", Arguments: `{"to":"ap@acme.example","subject":"INV-42","body":"Please pay invoice INV-42."}`},
		{Name: "delete_customer", Arguments: `{"customer":"ACME-7"}`},
		{Text: "All done."},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()

	session := "sdk-" + strings.ReplaceAll(api, "_", "-")
	s, _ := runExample(t, node, []string{"DOCKET_URL=" + url, "DOCKET_TOKEN=" + token, "DOCKET_SESSION=" + session,
		"OPENAI_BASE_URL=" + model.URL + "/v1", "AGENTS_API=" + api})

	// Guardrails ran: an empty event log would mean nothing was judged.
	if len(s.Events) == 0 {
		t.Fatal("no guardrail events")
	}
	decided := map[string]map[string]any{}
	var writebacks []string
	for _, e := range s.Events {
		if e["guardrail"] == "input" {
			decided[fmt.Sprint(e["tool"])] = e
		}
		if w, ok := e["writeback"].(string); ok {
			writebacks = append(writebacks, w)
		}
	}

	// 1. The allowed call ran.
	if d := decided["lookup_invoice"]; d == nil || d["decision"] != "allow" {
		t.Errorf("lookup_invoice decision: %v", d)
	}
	if strings.Join(s.Executed, ";") != "lookup_invoice INV-42" {
		t.Errorf("executed %q, want only lookup_invoice", s.Executed)
	}

	// 2. The blocked call did not run and docket's reason reached the model.
	if d := decided["send_email"]; d == nil || d["decision"] != "block" || !strings.Contains(fmt.Sprint(d["reason"]), "agents may not email customers") {
		t.Errorf("send_email decision: %v", d)
	}
	reqs := model.Requests()
	if len(reqs) < 3 {
		t.Fatalf("model requests: %d", len(reqs))
	}
	third := reqs[2]
	if len(third.ToolResults) != 2 || !strings.Contains(third.ToolResults[0], "1,200 EUR") ||
		!strings.Contains(third.ToolResults[1], "docket blocked send_email: agents may not email customers; draft the text and ask a person to send it (rule no-mail-from-agents)") {
		t.Errorf("tool results the model saw: %q", third.ToolResults)
	}

	// 3. The high-risk call threw: the run stopped with the tripwire.
	if s.Error == nil || s.Error.Name != "ToolInputGuardrailTripwireTriggered" || s.Error.Guardrail != "docket_judge" || s.FinalOutput != "" {
		t.Fatalf("high-risk call did not stop the run: %+v final %q", s.Error, s.FinalOutput)
	}
	if s.Error.OutputInfo["decision"] != "escalate" || s.Error.OutputInfo["risk_class"] != "high_risk" {
		t.Errorf("tripwire info: %v", s.Error.OutputInfo)
	}
	if len(reqs) != 3 {
		t.Errorf("the model was asked again after the tripwire (%d requests)", len(reqs))
	}

	// 4. The output guardrail's write-back is visible through the API, and
	// each decision is in the session's ledger.
	if len(writebacks) != 1 {
		t.Fatalf("write-backs: %q", writebacks)
	}
	var d struct {
		DecisionID       string `json:"decision_id"`
		ToolName         string `json:"tool_name"`
		Session          string `json:"session"`
		ReasoningSummary string `json:"reasoning_summary"`
	}
	get(t, url+"/v1/judge/decisions/"+writebacks[0], token, &d)
	if d.ToolName != "lookup_invoice" || d.Session != session || !strings.Contains(d.ReasoningSummary, "1,200 EUR") {
		t.Errorf("write-back: %+v", d)
	}
	aid, _ := s.Error.OutputInfo["approval_id"].(string)
	var apr struct {
		Status string `json:"status"`
		Tool   string `json:"tool"`
	}
	get(t, url+"/v1/approvals/"+aid, token, &apr)
	if apr.Status != "pending" {
		t.Errorf("approval %s: %+v", aid, apr)
	}
	var entries struct {
		Entries []struct {
			Kind string `json:"kind"`
			Tool string `json:"tool"`
		} `json:"entries"`
	}
	get(t, url+"/v1/sessions/"+session, reviewer, &entries)
	var judged []string
	for _, e := range entries.Entries {
		judged = append(judged, e.Kind+":"+e.Tool)
	}
	if strings.Join(judged, " ") != "judge_decision:lookup_invoice judge_decision:send_email judge_decision:delete_customer" {
		t.Errorf("ledger entries: %q", judged)
	}
	// the example's token is bound to its workspace, billing: the run
	// above stayed inside it, and another workspace is refused
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/judge/recall", strings.NewReader(
		`{"schema_version":"openbrain.judge.recall.v1","request_id":"r","workspace_id":"support","action_id":"a","query":{"summary":"invoice"}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the billing token recalls in another workspace: %d, want 403", resp.StatusCode)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

func get(t *testing.T, url, token string, v any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", url, err, b)
	}
}
