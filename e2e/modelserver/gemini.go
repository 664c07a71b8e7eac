package modelserver

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// sideAnswer is the JSON text a Gemini side request gets: it satisfies
// the CLI's next-speaker check (the user speaks next) and its model
// router (the default model), and nothing else reads it.
const sideAnswer = `{"next_speaker":"user","reasoning":"The scripted turn is complete.","model_choice":"flash","complexity_reasoning":"scripted","complexity_score":1}`

// gemini answers models/*:streamGenerateContent?alt=sse and
// models/*:generateContent (Gemini CLI with GOOGLE_GEMINI_BASE_URL). A
// request that offers run_shell_command is a conversation turn.
func (s *Server) gemini(w http.ResponseWriter, r *Request, stream bool) {
	var in struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text         string          `json:"text"`
				FunctionCall json.RawMessage `json:"functionCall"`
			} `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
				Schema     json.RawMessage `json:"parametersJsonSchema"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Body, &in); err != nil {
		s.record(r)
		http.Error(w, `{"error":{"code":400,"message":"bad json","status":"INVALID_ARGUMENT"}}`, http.StatusBadRequest)
		return
	}
	readPath := "file_path" // read_file's path parameter (older CLIs: absolute_path)
	var offered []string
	for _, t := range in.Tools {
		for _, d := range t.FunctionDeclarations {
			offered = append(offered, d.Name)
			if d.Name == "run_shell_command" {
				r.Main = true
			}
			if d.Name == "read_file" && !bytes.Contains(d.Parameters, []byte(`"file_path"`)) && !bytes.Contains(d.Schema, []byte(`"file_path"`)) {
				readPath = "absolute_path"
			}
		}
	}
	var part map[string]any
	if r.Main {
		n, last := 0, -1
		for i, c := range in.Contents {
			if c.Role != "model" {
				continue
			}
			last = i
			for _, p := range c.Parts {
				if len(p.FunctionCall) > 0 || s.isScripted(p.Text) {
					n++
					break
				}
			}
		}
		var raw struct {
			Contents []json.RawMessage `json:"contents"`
		}
		json.Unmarshal(r.Body, &raw)
		if last+1 <= len(raw.Contents) {
			r.since = mustRaw(raw.Contents[last+1:])
		}
		r.Turn = n
		t := s.turn(n, r)
		r.Answer = t
		switch t.Tool {
		case Shell:
			part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
				"args": map[string]any{"command": t.Command, "description": "Run a command"}}}
		case Write:
			part = map[string]any{"functionCall": map[string]any{"name": "write_file",
				"args": map[string]any{"file_path": t.Path, "content": t.Content}}}
		case Read:
			part = map[string]any{"functionCall": map[string]any{"name": "read_file",
				"args": map[string]any{readPath: t.Path}}}
		case Edit:
			part = map[string]any{"functionCall": map[string]any{"name": "replace",
				"args": map[string]any{"file_path": t.Path, "old_string": t.Old, "new_string": t.New, "instruction": "Edit the file"}}}
		case MCP:
			if name := mcpTool(offered, t.Name); name != "" {
				part = map[string]any{"functionCall": map[string]any{"name": name, "args": t.Args}}
			} else {
				r.Answer = Turn{Text: "no MCP tool " + t.Name + " is offered"}
				part = map[string]any{"text": r.Answer.Text}
			}
		default:
			part = map[string]any{"text": t.Text}
		}
	} else {
		part = map[string]any{"text": sideAnswer}
	}
	s.record(r)
	out := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "gemini-scripted",
	}
	if !stream {
		writeJSON(w, out)
		return
	}
	newSSE(w).send("", out)
}
