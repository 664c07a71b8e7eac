package hooks

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// topFields finds what p.Get finds for every name decodeClaudeShape
// reads, on every real payload and on payloads built to tell them apart:
// duplicate keys, escaped keys, the names nested deeper, members after a
// large value, values of every type.
func TestTopFieldsMatchesGet(t *testing.T) {
	payloads := []string{
		`{"session_id":"a","session_id":"b","cwd":"/x"}`,
		`{"session\u005fid":"esc","tool_name":"Bash"}`,
		`{"tool_input":{"session_id":"inner","cwd":"/in"},"session_id":"outer"}`,
		`{"tool_response":"` + strings.Repeat("x", 100_000) + `","tool_use_id":"t","duration_ms":12.5}`,
		`{"is_interrupt":true,"stop_hook_active":"yes","last_assistant_message":null,"error":5,"prompt":["p"]}`,
		`{"hook_event_name":"Stop","last_assistant_message":"done","agent_id":"","model":{"id":"m"}}`,
		`{}`,
	}
	files, _ := filepath.Glob("../testdata/realdata/payloads/*.json")
	if len(files) < 100 {
		t.Fatalf("only %d real payloads found", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, string(b))
	}
	for _, pl := range payloads {
		if checkObject([]byte(pl)) != nil {
			continue
		}
		p := gjson.Parse(pl)
		var got [len(claudeFields)]gjson.Result
		topFields(p, claudeFields[:], got[:])
		for i, n := range claudeFields {
			want := p.Get(n)
			if got[i].Raw != want.Raw || got[i].Type != want.Type || got[i].Str != want.Str || got[i].Num != want.Num {
				t.Fatalf("%s in %.200s: topFields %q, Get %q", n, pl, got[i].Raw, want.Raw)
			}
		}
	}
}

// decodeClaudeShape gives the Event the Get-by-Get decoding gave, on
// every real payload.
func TestDecodeClaudeShapeOnRealPayloads(t *testing.T) {
	files, _ := filepath.Glob("../testdata/realdata/payloads/*.json")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if checkObject(b) != nil {
			continue
		}
		p := gjson.ParseBytes(b)
		got, gerr := decodeClaudeShape(p, Claude)
		want, werr := decodeClaudeShapeByGet(p, Claude)
		if (gerr != nil) != (werr != nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decodeClaudeShape = %+v, %v; want %+v, %v", f, got, gerr, want, werr)
		}
	}
}

// decodeClaudeShapeByGet is decodeClaudeShape as it was, one Get per
// field.
func decodeClaudeShapeByGet(p gjson.Result, rt Runtime) (*Event, error) {
	e := &Event{
		Runtime:                 rt,
		RawName:                 p.Get("hook_event_name").String(),
		SessionID:               p.Get("session_id").String(),
		TurnID:                  p.Get("turn_id").String(),
		TranscriptPath:          p.Get("transcript_path").String(),
		Cwd:                     p.Get("cwd").String(),
		PermissionMode:          p.Get("permission_mode").String(),
		Model:                   p.Get("model").String(),
		AgentID:                 p.Get("agent_id").String(),
		AgentType:               p.Get("agent_type").String(),
		AgentTranscriptPath:     p.Get("agent_transcript_path").String(),
		ToolName:                p.Get("tool_name").String(),
		ToolUseID:               p.Get("tool_use_id").String(),
		DurationMS:              p.Get("duration_ms").Int(),
		Error:                   p.Get("error").String(),
		Interrupted:             p.Get("is_interrupt").Bool(),
		StopHookActive:          p.Get("stop_hook_active").Bool(),
		LastAssistantMessage:    p.Get("last_assistant_message").String(),
		HasLastAssistantMessage: p.Get("last_assistant_message").Type == gjson.String,
	}
	e.Name = e.RawName
	if e.ToolName != "" {
		e.ToolKind = KindOf(e.ToolName)
	}
	if v := p.Get("tool_input"); v.Exists() {
		e.ToolInput = []byte(v.Raw)
	}
	if v := p.Get("tool_response"); v.Exists() {
		e.ToolResponse = []byte(v.Raw)
	}
	if v := p.Get("prompt"); e.Name == UserPromptSubmit && v.Type == gjson.String {
		e.Prompt, e.HasPrompt = v.String(), true
	}
	if e.RawName == "" {
		return nil, &FieldError{Field: "hook_event_name", Reason: "missing"}
	}
	if e.SessionID == "" {
		return nil, &FieldError{Field: "session_id", Reason: "missing"}
	}
	return e, nil
}

// DetectRuntime answers as the Get-by-Get detection did, on every real
// payload and on payloads with duplicate and nested names.
func TestDetectRuntimeOnRealPayloads(t *testing.T) {
	payloads := []string{
		`{"hook_event_name":"PreToolUse","turn_id":"t","turn_id":"u"}`,
		`{"tool_input":{"conversation_id":"c"},"hook_event_name":"PreToolUse"}`,
		`{"transcript_path":null,"session_id":"s"}`,
		`{"transcript_path":"/h/.codex/s.jsonl","transcript_path":null}`,
		`{"timestamp":"x","session_id":"s"}`,
		`{"timestamp":"x","permission_mode":"default"}`,
		`{"hook_event_name":"BeforeTool"}`, `{"hook_event_name":"beforeSubmitPrompt"}`, `{"workspace_roots":[]}`,
		`[1]`, `{`, ``,
	}
	files, _ := filepath.Glob("../testdata/realdata/payloads/*.json")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		payloads = append(payloads, string(b))
	}
	seen := map[Runtime]int{}
	for _, pl := range payloads {
		got, want := DetectRuntime([]byte(pl)), detectRuntimeByGet([]byte(pl))
		if got != want {
			t.Fatalf("DetectRuntime(%.200s) = %q, want %q", pl, got, want)
		}
		seen[got]++
	}
	if len(seen) < 4 {
		t.Fatalf("payloads cover only %v", seen)
	}
}

func detectRuntimeByGet(payload []byte) Runtime {
	if checkObject(payload) != nil {
		return ""
	}
	p := gjson.ParseBytes(payload)
	name := p.Get("hook_event_name").String()
	switch {
	case isCursorEvent(name),
		p.Get("conversation_id").Exists(),
		p.Get("generation_id").Exists(),
		p.Get("workspace_roots").Exists():
		return Cursor
	case isGeminiEvent(name):
		return Gemini
	case p.Get("turn_id").Exists():
		return Codex
	}
	tp := p.Get("transcript_path")
	if (tp.Exists() && tp.Type == gjson.Null) || strings.Contains(tp.String(), "/.codex/") {
		return Codex
	}
	if p.Get("timestamp").Exists() && !p.Get("permission_mode").Exists() {
		return Gemini
	}
	return Claude
}

// Decode without a runtime validates once and answers as detecting and
// then decoding (each validating) did.
func TestDecodeDetectsOnce(t *testing.T) {
	payloads := []string{`{`, `[]`, ``, `{"session_id":"s"}`, `{"hook_event_name":"BeforeTool","session_id":"s"}`}
	files, _ := filepath.Glob("../testdata/realdata/payloads/*.json")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		payloads = append(payloads, string(b))
	}
	for _, pl := range payloads {
		got, gerr := Decode([]byte(pl), "")
		rt := DetectRuntime([]byte(pl))
		if rt == "" {
			rt = Claude
		}
		want, werr := Decode([]byte(pl), rt)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%.200s, \"\") = %+v, %v; want %+v, %v", pl, got, gerr, want, werr)
		}
	}
}
