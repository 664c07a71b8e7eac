package hooks_test

import (
	"fmt"

	"github.com/docket/docket/hooks"
)

func ExampleDetectRuntime() {
	for _, p := range []string{
		`{"session_id":"s","hook_event_name":"Stop","last_assistant_message":"Done."}`,
		`{"session_id":"s","turn_id":"t","hook_event_name":"Stop","transcript_path":null}`,
		`{"session_id":"s","hook_event_name":"AfterAgent","timestamp":"2026-01-15T10:00:00Z"}`,
		`{"conversation_id":"c","generation_id":"g","hook_event_name":"stop","workspace_roots":["/p"]}`,
	} {
		fmt.Println(hooks.DetectRuntime([]byte(p)))
	}
	// Output:
	// claude
	// codex
	// gemini
	// cursor
}

func ExampleEncode() {
	block := hooks.Answer{Event: hooks.Stop, Decision: hooks.Block, Reason: "claim done: no validator_pass"}
	for _, rt := range hooks.Runtimes {
		out, code, _ := hooks.Encode(rt, block)
		fmt.Printf("%-6s exit %d %s", rt, code, out)
	}
	// Output:
	// claude exit 0 {"decision":"block","reason":"claim done: no validator_pass"}
	// codex  exit 0 {"decision":"block","reason":"claim done: no validator_pass"}
	// gemini exit 0 {"decision":"deny","reason":"claim done: no validator_pass"}
	// cursor exit 0 {"followup_message":"claim done: no validator_pass"}
}
