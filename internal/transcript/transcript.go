// Package transcript reads a Claude Code session transcript forwards as the
// sequence of hook-relevant steps a runtime went through: each tool call
// proposed, each result, and the final stop with the last assistant
// message. It serves replays of real sessions (the wiring test, the demo);
// the gate reads transcripts backwards with its own bounded reader.
package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
)

// Kinds of Step.
const (
	Use    = "use"    // a tool call the agent proposed
	Result = "result" // its result
	Stop   = "stop"   // the end of the turn
)

// Step is one event of a recorded session.
type Step struct {
	Kind     string
	ID       string // tool_use id
	Tool     string
	Input    json.RawMessage
	Response json.RawMessage // toolUseResult, else the tool_result content
	Failed   bool
	Error    string // a failed call's error text
	Text     string // Stop: the last assistant message
}

// Steps reads the main chain (not sidechains) of a transcript. Lines that
// are not JSON, or carry no content blocks, are skipped.
func Steps(transcript []byte) ([]Step, error) {
	var steps []Step
	var lastID string
	var lastText []string
	names, inputs := map[string]string{}, map[string]json.RawMessage{}
	sc := bufio.NewScanner(bytes.NewReader(transcript))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line struct {
			Type          string          `json:"type"`
			IsSidechain   bool            `json:"isSidechain"`
			ToolUseResult json.RawMessage `json:"toolUseResult"`
			Message       struct {
				ID      string          `json:"id"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.IsSidechain {
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
			Text      string          `json:"text"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if json.Unmarshal(line.Message.Content, &blocks) != nil {
			continue // a plain-string user prompt
		}
		for _, b := range blocks {
			switch {
			case line.Type == "assistant" && b.Type == "tool_use":
				names[b.ID], inputs[b.ID] = b.Name, b.Input
				steps = append(steps, Step{Kind: Use, ID: b.ID, Tool: b.Name, Input: b.Input})
			case line.Type == "assistant" && b.Type == "text":
				if line.Message.ID != lastID {
					lastID, lastText = line.Message.ID, nil
				}
				lastText = append(lastText, b.Text)
			case line.Type == "user" && b.Type == "tool_result":
				s := Step{Kind: Result, ID: b.ToolUseID, Tool: names[b.ToolUseID], Input: inputs[b.ToolUseID],
					Response: line.ToolUseResult, Failed: b.IsError}
				if s.Response == nil {
					s.Response = b.Content
				}
				if b.IsError {
					if json.Unmarshal(b.Content, &s.Error) != nil || s.Error == "" {
						s.Error = string(b.Content)
					}
				}
				steps = append(steps, s)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return append(steps, Step{Kind: Stop, Text: strings.Join(lastText, "\n")}), nil
}
