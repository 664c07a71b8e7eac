package judge_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/judge"
	"github.com/docket/docket/judge/judgetest"
	"github.com/docket/docket/judge/llmjudge"
	"github.com/docket/docket/policies"
)

// policyHarness makes the policy judge follow a script with rules.
var policyHarness = judgetest.Harness{
	New: func(t *testing.T, base *judge.PolicySet, s judgetest.Script) (judge.JudgeBackend, *judge.PolicySet) {
		tools := *base.Tools
		tools.Rules = append([]policies.Rule(nil), base.Tools.Rules...)
		pattern := "*danger*"
		if s.From != "" {
			pattern = "*" + s.From + "*"
		}
		switch s.Outcome {
		case judge.Block:
			tools.Rules = append(tools.Rules, policies.Rule{ID: "suite-deny", Effect: policies.EffectDeny, Tool: "Bash", Command: pattern, Reason: "suite denies"})
		case judge.Escalate:
			tools.Rules = append(tools.Rules, policies.Rule{ID: "suite-escalate", Effect: policies.EffectEscalate, Tool: "Bash", Command: pattern, Reason: "suite escalates"})
		case judge.Revise:
			r := policies.Rule{ID: "suite-revise", Effect: policies.EffectRevise, Tool: "Bash", Command: pattern, Reason: "suite revises"}
			if s.From != "" {
				r.Rewrite = &policies.Rewrite{Field: "command", From: s.From, To: s.To}
			}
			tools.Rules = append(tools.Rules, r)
		}
		set := judge.NewPolicySet(&tools, base.Sources[0], base.Judges)
		h, _ := home.At(t.TempDir())
		return judge.NewPolicyJudge(set, h), set
	},
}

func TestPolicyJudgeConformance(t *testing.T) { judgetest.Run(t, policyHarness) }

const suiteKey = "sk-suite-SECRET-7f3a9"

// fakeModel is an httptest server speaking the OpenAI chat completions or
// Anthropic Messages API, answering per script.
func fakeModel(t *testing.T, provider string, s judgetest.Script, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		if s.Delay > 0 {
			select {
			case <-time.After(s.Delay):
			case <-r.Context().Done():
				return
			}
		}
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		user := ""
		if len(req.Messages) > 0 {
			user = req.Messages[len(req.Messages)-1].Content
		}
		// like a policy rule, the script applies to calls naming its
		// pattern; anything else is allowed
		input := map[string]any{}
		if i := strings.Index(user, "## Tool input\n"); i >= 0 {
			rest := user[i+len("## Tool input\n"):]
			if j := strings.Index(rest, "\n\n"); j >= 0 {
				rest = rest[:j]
			}
			_ = json.Unmarshal([]byte(rest), &input)
		}
		command, _ := input["command"].(string)
		pattern := "danger"
		if s.From != "" {
			pattern = s.From
		}
		outcome := s.Outcome
		if !strings.Contains(command, pattern) {
			outcome = judge.Allow
		}
		ans := map[string]any{"outcome": string(outcome), "reason": "scripted " + string(s.Outcome), "required_revision": "", "amended_tool_input": nil, "confidence": "high", "memories_used": []any{}}
		if outcome == judge.Allow {
			ans["reason"] = "fine"
		}
		if outcome == judge.Revise {
			if s.From == "" {
				ans["required_revision"] = "rework the call"
			} else {
				input["command"] = strings.ReplaceAll(command, s.From, s.To)
				ans["amended_tool_input"] = input
			}
		}
		a, _ := json.Marshal(ans)
		w.Header().Set("Content-Type", "application/json")
		switch provider {
		case "openai":
			if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+suiteKey {
				http.Error(w, "bad request", http.StatusUnauthorized)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{
				"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": string(a)}}},
				"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 20},
			})
		case "anthropic":
			if r.URL.Path != "/v1/messages" || r.Header.Get("x-api-key") != suiteKey || r.Header.Get("anthropic-version") == "" {
				http.Error(w, "bad request", http.StatusUnauthorized)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{
				"content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "judgment", "input": json.RawMessage(a)}},
				"usage":   map[string]any{"input_tokens": 100, "output_tokens": 20},
			})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func llmHarness(provider string) judgetest.Harness {
	var endpoints []string
	return judgetest.Harness{
		New: func(t *testing.T, base *judge.PolicySet, s judgetest.Script) (judge.JudgeBackend, *judge.PolicySet) {
			var calls atomic.Int64
			srv := fakeModel(t, provider, s, &calls)
			endpoints = append(endpoints, srv.URL)
			return llmjudge.NewLLMJudge(llmjudge.LLMConfig{Provider: provider, Model: "suite-model", Endpoint: srv.URL, APIKey: suiteKey,
				Timeout: 10 * time.Second, MaxCalls: 0, PolicyVersion: base.Version}), base
		},
		Prompt: func(b judge.JudgeBackend) (string, bool) {
			l, ok := b.(*llmjudge.LLMJudge)
			if !ok {
				return "", false
			}
			p := l.LastPrompt()
			return p.System + "\n" + p.User, p.User != ""
		},
		Secrets: []string{suiteKey, "127.0.0.1", "suite-model"},
	}
}

func TestLLMJudgeOpenAIConformance(t *testing.T)    { judgetest.Run(t, llmHarness("openai")) }
func TestLLMJudgeAnthropicConformance(t *testing.T) { judgetest.Run(t, llmHarness("anthropic")) }
