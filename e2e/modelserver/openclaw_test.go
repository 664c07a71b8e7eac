package modelserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestOpenClawResponses: the OpenClaw script answers with OpenClaw's
// tools, advances on tool calls, scripted texts and revision requests,
// and serves a retried request the same turn.
func TestOpenClawResponses(t *testing.T) {
	s, err := StartOpenClaw([]Turn{
		{Tool: Shell, Command: "gh pr merge 1"},
		{Tool: Read, Path: "NOTES.md"},
		{Text: "All done."},
		{Text: "Revised."},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tools := `"tools":[{"type":"function","name":"exec"},{"type":"function","name":"read"}]`
	user := `{"role":"user","content":[{"type":"input_text","text":"review it"}]}`
	call := func(id, name, args string) string {
		return `{"type":"function_call","call_id":"` + id + `","name":"` + name + `","arguments":` + mustJSON(args) + `},` +
			`{"type":"function_call_output","call_id":"` + id + `","output":"ok"}`
	}
	final := `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"All done."}]}`
	revision := `{"role":"user","content":[{"type":"input_text","text":"` + OpenClawRevision + ` … docket claim gate: no evidence"}]}`
	tests := []struct {
		name, input string
		stream      bool
		wantTool    string // function name, or "" for text
		wantArgs    string
		wantText    string
	}{
		{"first turn: exec", user, false, "exec", `{"command":"gh pr merge 1"}`, ""},
		{"retry: same turn", user, true, "exec", `{"command":"gh pr merge 1"}`, ""},
		{"after the call: read", user + "," + call("c1", "exec", `{"command":"gh pr merge 1"}`), false, "read", `{"path":"NOTES.md"}`, ""},
		{"then the text", user + "," + call("c1", "exec", "{}") + "," + call("c2", "read", "{}"), true, "", "", "All done."},
		{"a revision request is the next turn", user + "," + call("c1", "exec", "{}") + "," + call("c2", "read", "{}") + "," + revision, false, "", "", "Revised."},
		{"with the final answer in the history too", user + "," + call("c1", "exec", "{}") + "," + call("c2", "read", "{}") + "," + final + "," + revision, false, "", "", "The script is over."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"model":"m","stream":` + map[bool]string{true: "true", false: "false"}[tt.stream] + `,` + tools + `,"input":[` + tt.input + `]}`
			code, out := post(t, s.URL+"/v1/responses", body)
			if code != 200 {
				t.Fatalf("%d %s", code, out)
			}
			var item map[string]any
			if tt.stream {
				evs := events(t, out)
				last := evs[len(evs)-1]
				if last["type"] != "response.completed" {
					t.Fatalf("stream ends with %v", last["type"])
				}
				item = last["response"].(map[string]any)["output"].([]any)[0].(map[string]any)
			} else {
				var resp struct{ Output []map[string]any }
				json.Unmarshal([]byte(out), &resp)
				item = resp.Output[0]
			}
			if tt.wantTool != "" {
				if item["type"] != "function_call" || item["name"] != tt.wantTool || item["arguments"] != tt.wantArgs {
					t.Fatalf("item %v", item)
				}
				return
			}
			if item["type"] != "message" || !strings.Contains(mustJSON(item), tt.wantText) {
				t.Fatalf("item %v, want text %q", item, tt.wantText)
			}
		})
	}
	if n := len(s.MainRequests()); n != len(tests) {
		t.Fatalf("%d main requests recorded, want %d", n, len(tests))
	}
	// a request offering no tools is a side request
	post(t, s.URL+"/v1/responses", `{"model":"m","input":[`+user+`]}`)
	if n := len(s.MainRequests()); n != len(tests) {
		t.Fatalf("a side request counted as main")
	}
	// the other APIs are served as Start serves them
	if code, _ := post(t, s.URL+"/v1/messages/count_tokens", `{}`); code != 200 {
		t.Fatalf("count_tokens: %d", code)
	}
}
