package modelserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

var script = []Turn{
	{Tool: Shell, Command: "go test ./..."},
	{Tool: Write, Path: "/p/NOTES.md", Content: "a\nb\n"},
	{Text: "All done."},
	{Dynamic: func(r *Request) Turn {
		for _, s := range r.Since() {
			if strings.HasPrefix(s, "run: ") {
				return Turn{Tool: Shell, Command: strings.TrimPrefix(s, "run: ")}
			}
		}
		return Turn{Text: "nothing to run"}
	}},
}

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func post(t *testing.T, u, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// events returns the data lines of an SSE stream, decoded.
func events(t *testing.T, stream string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(stream))
	for sc.Scan() {
		d, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		out = append(out, m)
	}
	return out
}

func TestAnthropicTurns(t *testing.T) {
	s := start(t)
	tools := `"tools":[{"name":"Bash"},{"name":"Write"}]`
	tests := []struct {
		name     string
		messages string
		turn     int
		want     string // a fragment of the answer
	}{
		{"first turn", `[{"role":"user","content":"go"}]`, 0, `"partial_json":"{\"command\":\"go test ./...\"`},
		{"after a tool call", `[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"ok"}]}]`, 1, `"name":"Write"`},
		{"a retry gets the same turn", `[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"Bash","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"ok"}]}]`, 1, `"name":"Write"`},
		{"unscripted assistant text does not count", `[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"text","text":"thinking aloud"}]}]`, 0, `"name":"Bash"`},
		{"after the scripted text, a dynamic turn reads what came since",
			`[{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"Bash","input":{}}]},{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"Write","input":{}}]},{"role":"assistant","content":[{"type":"text","text":"All done."}]},{"role":"user","content":"run: make test"}]`,
			3, `make test`},
		{"past the end", `[{"role":"assistant","content":"All done."},{"role":"assistant","content":"All done."},{"role":"assistant","content":"All done."},{"role":"assistant","content":"All done."},{"role":"assistant","content":"All done."}]`, 5, `The script is over.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, s.URL+"/v1/messages?beta=true", `{"stream":true,`+tools+`,"messages":`+tc.messages+`}`)
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			if !strings.Contains(body, tc.want) {
				t.Errorf("answer lacks %s:\n%s", tc.want, body)
			}
			ev := events(t, body)
			if ev[0]["type"] != "message_start" || ev[len(ev)-1]["type"] != "message_stop" {
				t.Errorf("stream does not run message_start … message_stop: %v … %v", ev[0]["type"], ev[len(ev)-1]["type"])
			}
			rs := s.MainRequests()
			if got := rs[len(rs)-1].Turn; got != tc.turn {
				t.Errorf("turn %d, want %d", got, tc.turn)
			}
		})
	}
	// A request without the Bash tool is a side request: answered, not a turn.
	n := len(s.MainRequests())
	if code, body := post(t, s.URL+"/v1/messages", `{"messages":[{"role":"user","content":"title?"}]}`); code != 200 || !strings.Contains(body, `"type":"text"`) {
		t.Errorf("side request: %d %s", code, body)
	}
	if code, body := post(t, s.URL+"/v1/messages/count_tokens", `{"messages":[]}`); code != 200 || !strings.Contains(body, "input_tokens") {
		t.Errorf("count_tokens: %d %s", code, body)
	}
	if len(s.MainRequests()) != n {
		t.Errorf("side requests counted as turns")
	}
}

func TestResponsesTurns(t *testing.T) {
	s := start(t)
	tests := []struct {
		name  string
		tools string
		input string
		want  []string
	}{
		{"exec_command", `[{"type":"function","name":"exec_command"}]`, `[{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}]`,
			[]string{`"name":"exec_command"`, `"arguments":"{\"cmd\":\"go test ./...\",\"yield_time_ms\":30000}"`, `"type":"response.completed"`}},
		{"shell argv", `[{"type":"function","name":"shell"}]`, `[]`, []string{`"arguments":"{\"command\":[\"bash\",\"-lc\",\"go test ./...\"]}"`}},
		{"apply_patch as a custom tool", `[{"type":"function","name":"exec_command"},{"type":"custom","name":"apply_patch"}]`,
			`[{"type":"function_call","call_id":"c0","name":"exec_command","arguments":"{}"},{"type":"function_call_output","call_id":"c0","output":"ok"}]`,
			[]string{`"type":"custom_tool_call"`, `*** Add File: /p/NOTES.md\n+a\n+b\n*** End Patch\n`}},
		{"the scripted text", `[{"type":"function","name":"exec_command"}]`,
			`[{"type":"function_call","call_id":"c0"},{"type":"custom_tool_call","call_id":"c1"}]`,
			[]string{`"type":"response.output_text.delta"`, `"text":"All done.","type":"output_text"`}},
		{"a command still running is waited for", `[{"type":"function","name":"exec_command"},{"type":"function","name":"write_stdin"}]`,
			`[{"type":"function_call","call_id":"c0","name":"exec_command"},{"type":"function_call_output","call_id":"c0","output":"Chunk ID: 1\nProcess running with session ID 7\nOutput:\n"}]`,
			[]string{`"name":"write_stdin"`, `\"session_id\":7`}},
		{"a finished poll is not a turn", `[{"type":"function","name":"exec_command"},{"type":"custom","name":"apply_patch"},{"type":"function","name":"write_stdin"}]`,
			`[{"type":"function_call","call_id":"c0","name":"exec_command"},{"type":"function_call_output","call_id":"c0","output":"Process running with session ID 7"},{"type":"function_call","call_id":"p","name":"write_stdin"},{"type":"function_call_output","call_id":"p","output":"Process exited with code 0"}]`,
			[]string{`"type":"custom_tool_call"`, `*** Add File: /p/NOTES.md`}},
		{"a hook prompt after the text feeds the dynamic turn", `[{"type":"function","name":"exec_command"}]`,
			`[{"type":"function_call","call_id":"c0"},{"type":"custom_tool_call","call_id":"c1"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"All done."}]},{"type":"message","role":"user","content":[{"type":"input_text","text":"run: make test"}]}]`,
			[]string{`\"cmd\":\"make test\"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, s.URL+"/v1/responses", `{"stream":true,"tools":`+tc.tools+`,"input":`+tc.input+`}`)
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			for _, w := range tc.want {
				if !strings.Contains(body, w) {
					t.Errorf("answer lacks %s:\n%s", w, body)
				}
			}
			events(t, body)
		})
	}
}

func TestGeminiTurns(t *testing.T) {
	s := start(t)
	tools := `"tools":[{"functionDeclarations":[{"name":"run_shell_command"},{"name":"write_file"}]}]`
	code, body := post(t, s.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", `{`+tools+`,"contents":[{"role":"user","parts":[{"text":"go"}]}]}`)
	if code != 200 || !strings.Contains(body, `"functionCall":{"args":{"command":"go test ./...","description":"Run a command"},"name":"run_shell_command"}`) {
		t.Errorf("first turn: %d %s", code, body)
	}
	code, body = post(t, s.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", `{`+tools+`,"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"ok"}}}]}]}`)
	if code != 200 || !strings.Contains(body, `"name":"write_file"`) {
		t.Errorf("second turn: %d %s", code, body)
	}
	if r := s.FirstAsking(1); r == nil || !strings.Contains(r.SinceText(), "ok") {
		t.Errorf("since the model's last turn: %v", r)
	}
	// Side requests: a JSON answer any of the CLI's checks can read.
	code, body = post(t, s.URL+"/v1beta/models/m:generateContent", `{"contents":[{"role":"user","parts":[{"text":"who speaks next?"}]}]}`)
	if code != 200 || !strings.Contains(body, `next_speaker`) {
		t.Errorf("side request: %d %s", code, body)
	}
	var out struct {
		Candidates []struct {
			Content struct{ Parts []struct{ Text string } }
		}
	}
	json.Unmarshal([]byte(body), &out)
	var v map[string]any
	if err := json.Unmarshal([]byte(out.Candidates[0].Content.Parts[0].Text), &v); err != nil || v["next_speaker"] != "user" {
		t.Errorf("side answer is not the JSON the CLI expects: %v %v", v, err)
	}
	if len(s.MainRequests()) != 2 {
		t.Errorf("main requests: %d, want 2", len(s.MainRequests()))
	}
}

func TestOutboundRefusedAndRecorded(t *testing.T) {
	s := start(t)
	pu, _ := url.Parse(s.URL)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	for _, u := range []string{"http://example.invalid/telemetry", "https://example.invalid/update"} {
		resp, err := c.Get(u)
		if err == nil {
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s through the proxy: status %d, want 403", u, resp.StatusCode)
			}
			resp.Body.Close()
		}
	}
	got := s.Outbound()
	if len(got) != 2 || !strings.Contains(got[0], "example.invalid/telemetry") || !strings.HasPrefix(got[1], "CONNECT example.invalid:443") {
		t.Errorf("outbound attempts: %q", got)
	}
	if len(s.MainRequests()) != 0 {
		t.Errorf("an outbound attempt counted as a turn")
	}
}

func TestStringsInDocumentOrderWithoutKeys(t *testing.T) {
	got := jsonStrings([]byte(`{"b":"one","a":[{"k":"two"},"three",{"x":{"y":"four"}}],"n":1,"z":"five"}`))
	want := []string{"one", "two", "three", "four", "five"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := jsonStrings(bytes.Repeat([]byte("x"), 3)); len(got) != 1 {
		t.Errorf("non-JSON body: %q", got)
	}
}
