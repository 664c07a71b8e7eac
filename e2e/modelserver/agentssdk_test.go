package modelserver

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// TestFunctionServer: each API gets the turn after the function calls the
// conversation already holds, and the tool results are recorded.
func TestFunctionServer(t *testing.T) {
	s, err := StartFunctions([]FunctionTurn{{Name: "lookup", Arguments: `{"id":"1"}`}, {Text: "done"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	post := func(path, body string) map[string]any {
		resp, err := http.Post(s.URL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var v map[string]any
		if resp.StatusCode != 200 || json.Unmarshal(b, &v) != nil {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return v
	}
	v := post("/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`)
	if got := mustJSON(v["choices"]); !bytes.Contains([]byte(got), []byte(`"name":"lookup"`)) {
		t.Errorf("first chat turn: %s", got)
	}
	v = post("/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1"}]},{"role":"tool","tool_call_id":"call_1","content":"blocked: no"}]}`)
	if got := mustJSON(v["choices"]); !bytes.Contains([]byte(got), []byte(`"content":"done"`)) {
		t.Errorf("second chat turn: %s", got)
	}
	v = post("/v1/responses", `{"input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"call_1","name":"lookup","arguments":"{}"},{"type":"function_call_output","call_id":"call_1","output":"result text"}]}`)
	if got := mustJSON(v["output"]); !bytes.Contains([]byte(got), []byte(`"text":"done"`)) {
		t.Errorf("responses turn: %s", got)
	}
	reqs := s.Requests()
	if len(reqs) != 3 || reqs[0].Turn != 0 || reqs[1].Turn != 1 || reqs[2].Turn != 1 ||
		len(reqs[1].ToolResults) != 1 || reqs[1].ToolResults[0] != "blocked: no" || reqs[2].ToolResults[0] != "result text" {
		t.Errorf("requests: %+v", reqs)
	}
}
