package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// Every real UserPromptSubmit payload decodes to a UserPromptSubmit
// event carrying the prompt byte for byte.
func TestDecodePromptRealPayloads(t *testing.T) {
	files, _ := filepath.Glob("../testdata/realdata/payloads/UserPromptSubmit__*.json")
	codex, _ := filepath.Glob("../testdata/hooks/codex/UserPromptSubmit__*.json")
	if len(files) < 10 || len(codex) < 2 {
		t.Fatalf("found %d Claude Code and %d Codex payloads", len(files), len(codex))
	}
	for _, f := range append(files, codex...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rt := Claude
		if strings.Contains(f, "/codex/") {
			rt = Codex
		}
		e, err := Decode(b, rt)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		want := gjson.GetBytes(b, "prompt").String()
		if e.Name != UserPromptSubmit || !e.HasPrompt || e.Prompt != want || e.SessionID == "" {
			t.Errorf("%s: name %q prompt %q (has %v)", filepath.Base(f), e.Name, e.Prompt, e.HasPrompt)
		}
	}
}

func TestDecodePrompt(t *testing.T) {
	tests := []struct {
		name    string
		rt      Runtime
		payload string
		prompt  string
		has     bool
	}{
		{"gemini BeforeAgent", Gemini, `{"session_id":"g","hook_event_name":"BeforeAgent","prompt":"fix the build"}`, "fix the build", true},
		{"cursor beforeSubmitPrompt", Cursor, `{"conversation_id":"c","hook_event_name":"beforeSubmitPrompt","prompt":"ship it"}`, "ship it", true},
		{"claude without prompt", Claude, `{"session_id":"s","hook_event_name":"UserPromptSubmit"}`, "", false},
		{"a prompt field on another event is not a prompt", Claude, `{"session_id":"s","hook_event_name":"Stop","prompt":"x"}`, "", false},
		{"empty prompt", Claude, `{"session_id":"s","hook_event_name":"UserPromptSubmit","prompt":""}`, "", true},
	}
	for _, tt := range tests {
		e, err := Decode([]byte(tt.payload), tt.rt)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if e.Prompt != tt.prompt || e.HasPrompt != tt.has {
			t.Errorf("%s: prompt %q has %v", tt.name, e.Prompt, e.HasPrompt)
		}
	}
	for _, bad := range []string{
		`{"session_id":"s","turn_id":"t","hook_event_name":"UserPromptSubmit","prompt":7}`,
	} {
		if _, err := Decode([]byte(bad), Codex); err == nil {
			t.Errorf("%s: a non-string prompt was accepted", bad)
		}
	}
}
