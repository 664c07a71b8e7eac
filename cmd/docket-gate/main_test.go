package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/ledgerhook/ledgerhooktest"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/trust"
)

func setupHome(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	h, _ := home.At(dir)
	if _, err := ledger.Init(h); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKET_HOME", dir)
	return dir
}

func TestRun(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		stdin     string
		noKeys    bool
		badPolicy bool   // claims.yaml that does not parse
		wantOut   string // substring of stdout; "" means empty stdout
		wantErr   string
		wantUsage bool
	}{
		{name: "claim-free", stdin: `{"session_id":"s1","hook_event_name":"Stop","last_assistant_message":"Here is the plan."}`},
		{name: "claim blocks", stdin: `{"session_id":"s1","hook_event_name":"Stop","last_assistant_message":"All done."}`, wantOut: `{"decision":"block","reason":"docket: your final message`},
		{name: "subagent claim blocks", stdin: `{"session_id":"s1","hook_event_name":"SubagentStop","agent_id":"a1","last_assistant_message":"Merged."}`, wantOut: `"decision":"block"`},
		{name: "no keys", noKeys: true, stdin: `{"session_id":"s1","hook_event_name":"Stop","last_assistant_message":"All done."}`, wantOut: "docket init", wantErr: "open ledger"},
		{name: "not json", stdin: `garbage`, wantOut: `"decision":"block"`, wantErr: "hook payload"},
		{name: "wrong event", stdin: `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash"}`, wantOut: `"decision":"block"`, wantErr: "not Stop"},
		{name: "wrong event before a bad policy", badPolicy: true, stdin: `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash"}`, wantOut: `"decision":"block"`, wantErr: "not Stop"},
		{name: "bad policy blocks a stop", badPolicy: true, stdin: `{"session_id":"s1","hook_event_name":"Stop","last_assistant_message":"Here is the plan."}`, wantOut: `"decision":"block"`, wantErr: "claims.yaml"},
		{name: "bad flag", args: []string{"--nope"}, wantUsage: true, wantErr: "flag provided but not defined"},
		{name: "stray argument", args: []string{"payload.json"}, wantUsage: true, wantErr: "hint: the payload goes on stdin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noKeys {
				t.Setenv("DOCKET_HOME", t.TempDir())
			} else {
				dir := setupHome(t)
				if tt.badPolicy {
					pd := filepath.Join(dir, "policies")
					if err := os.MkdirAll(pd, 0o700); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(pd, "claims.yaml"), []byte("version: [\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			var out, errb bytes.Buffer
			err := run(context.Background(), tt.args, strings.NewReader(tt.stdin), &out, &errb)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("err %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
			_, isUsage := err.(usageError)
			if isUsage != tt.wantUsage {
				t.Fatalf("usage error %v, want %v", isUsage, tt.wantUsage)
			}
			if tt.wantOut == "" && out.Len() != 0 {
				t.Fatalf("stdout %q, want nothing", out.String())
			}
			if tt.wantOut != "" {
				if !strings.Contains(out.String(), tt.wantOut) {
					t.Fatalf("stdout %q lacks %q", out.String(), tt.wantOut)
				}
				if !json.Valid(out.Bytes()) || strings.Count(out.String(), "\n") != 1 {
					t.Fatalf("stdout is not exactly one JSON answer: %q", out.String())
				}
			}
			if tt.wantUsage && !strings.Contains(errb.String(), "Exit codes:") {
				t.Fatalf("no usage on stderr: %q", errb.String())
			}
		})
	}
}

// BenchmarkRun measures one whole gate decision in process, policies
// included; the transcript case reads the largest real transcript.
func BenchmarkRun(b *testing.B) {
	rd := os.Getenv("REALDATA")
	if rd == "" {
		rd = filepath.Join("..", "..", "..", "shared", "realdata")
	}
	real := filepath.Join(rd, "transcripts", "templar__chat.jsonl")
	cases := map[string]string{
		"stdin-no-claims": `{"session_id":"s1","hook_event_name":"Stop","last_assistant_message":"Here is how the parser works."}`,
		"stdin-claims":    `{"session_id":"s1","hook_event_name":"Stop","last_assistant_message":"All done, tests pass."}`,
	}
	if _, err := os.Stat(real); err == nil {
		cases["largest-real-transcript"] = `{"session_id":"s2","hook_event_name":"Stop","transcript_path":"` + real + `"}`
	}
	for name, payload := range cases {
		b.Run(name, func(b *testing.B) {
			setupHome(b)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				var out bytes.Buffer
				run(context.Background(), nil, strings.NewReader(payload), &out, &bytes.Buffer{})
			}
		})
	}
}

// TestStopRecordsUnhookedFailure: a Codex session whose last call, an
// MCP call the judge allowed, failed: Codex runs no PostToolUse for it,
// so the stop records it from the rollout (a real one, cut where the
// session ended); the stop's answer does not depend on it.
func TestStopRecordsUnhookedFailure(t *testing.T) {
	dir := setupHome(t)
	h, _ := home.At(dir)
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	rollout := ledgerhooktest.UnhookedFailure(t, l, t.TempDir(), 0o600)
	const session = ledgerhooktest.Session
	stop, _ := json.Marshal(map[string]any{"session_id": session, "transcript_path": rollout, "cwd": t.TempDir(),
		"hook_event_name": "Stop", "turn_id": "t", "model": "gpt-5.5", "stop_hook_active": false,
		"last_assistant_message": "The listing failed; the directory does not exist."})
	for range 2 { // the second stop finds it recorded
		var out, errb bytes.Buffer
		if err := run(context.Background(), []string{"--runtime", "codex"}, bytes.NewReader(stop), &out, &errb); err != nil || out.Len() != 0 {
			t.Fatalf("stop: %v, stdout %q, stderr %s", err, out.String(), errb.String())
		}
	}
	es, err := l.ReadVerified(session)
	if err != nil {
		t.Fatal(err)
	}
	var failures []*ledger.Entry
	for _, e := range es {
		if e.Kind == ledger.KindToolFailure {
			failures = append(failures, e)
		}
	}
	if len(failures) != 1 || failures[0].ToolUseID != "call_docket_03" || !strings.Contains(string(failures[0].Body), `"recorded_from":"rollout"`) {
		t.Fatalf("tool failures %+v", failures)
	}
}

// TestStopCarriesOrigin: a stop's decision carries the O-Tag of the
// session's current chain (the prompt that started the work), as the
// judge's decisions do; a forged origin file is not used.
func TestStopCarriesOrigin(t *testing.T) {
	dir := setupHome(t)
	h, _ := home.At(dir)
	l, err := ledger.Open(h)
	if err != nil {
		t.Fatal(err)
	}
	const session = "s-origin"
	p, err := l.Append(session, ledger.Record{Kind: ledger.KindUserPrompt, Runtime: "claude", Event: "UserPromptSubmit", Body: map[string]any{"prompt_bytes": 3}})
	if err != nil {
		t.Fatal(err)
	}
	want := trust.OTagOf(p)
	if err := trust.WriteOrigin(h, l.Keys(), trust.Origin{OTag: want, Session: session, Seq: p.Seq, Time: p.Time}); err != nil {
		t.Fatal(err)
	}
	stop := func() map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		payload := `{"session_id":"` + session + `","hook_event_name":"Stop","last_assistant_message":"All done."}`
		if err := run(context.Background(), nil, strings.NewReader(payload), &out, &errb); err != nil || !strings.Contains(out.String(), `"block"`) {
			t.Fatalf("stop: %v %s %s", err, out.String(), errb.String())
		}
		es, err := l.ReadVerified(session)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		json.Unmarshal(es[len(es)-1].Body, &body)
		return body
	}
	if got := stop()["o_tag"]; got != want {
		t.Fatalf("gate_decision o_tag %v, want %s", got, want)
	}
	// the origin file rewritten by hand: its MAC fails, and no O-Tag is taken from it
	origin := filepath.Join(dir, "run", "origin", session+".json")
	b, err := os.ReadFile(origin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(origin, bytes.Replace(b, []byte(want), []byte("ot_000000000000000000000000"), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, ok := stop()["o_tag"]; ok {
		t.Fatalf("o_tag %v from a forged origin file", got)
	}
}
