// Command genledger appends n entries to a session's ledger under
// $DOCKET_HOME through the ledger package, as the hooks would, to give a
// benchmark a long ledger quickly: tool calls with the artifacts
// docket-ledger stores (payload, input, response, stdout), and near the
// end a validator_pass for each -claims entry, followed by a few calls.
// Each pass records the digest of the working tree at -cwd, as `docket
// validate` does, so a stop on the unchanged tree finds its claims
// supported.
//
//	genledger -n 10000 -session bench-gate -cwd /path/to/project
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/worktree"
	"github.com/docket/docket/ledger"
)

func main() {
	n := flag.Int("n", 10000, "entries to append")
	session := flag.String("session", "bench-gate", "session id")
	cwd := flag.String("cwd", "/tmp", "working directory recorded in the entries")
	claims := flag.String("claims", "done,tests_pass", "claims to record a go_test_pass for, before the last 5 entries")
	flag.Parse()
	if err := run(*n, *session, *cwd, strings.Split(*claims, ",")); err != nil {
		fmt.Fprintf(os.Stderr, "genledger: error: %v\n", err)
		os.Exit(1)
	}
}

func run(n int, session, cwd string, claims []string) error {
	h, err := home.Resolve()
	if err != nil {
		return err
	}
	l, err := ledger.Open(h)
	if err != nil {
		return err
	}
	tree := worktree.LedgerStore(l).Record(cwd)
	if tree.Error != "" {
		return fmt.Errorf("digest the working tree: %s", tree.Error)
	}
	for i := 0; i < n; i++ {
		var r ledger.Record
		if k := i - (n - 5 - len(claims)); k >= 0 && k < len(claims) {
			args := json.RawMessage(`{"packages":"./..."}`)
			r = ledger.Record{Kind: ledger.KindValidatorPass, Runtime: "docket", Event: "validate", Tool: "go_test_pass", Args: args,
				Body: map[string]any{"claim": claims[k], "validator": "go_test_pass", "class": "go_test", "args": args,
					"cwd": cwd, "project_root": tree.Root, "result": "pass", "runs": 1, "tests_run": 12, "worktree": tree},
				Artifacts: []ledger.Artifact{{Name: "run1.stdout", Data: strings.NewReader("ok  \texample\t0.2s\n")}}}
		} else {
			in := fmt.Sprintf(`{"command":"go vet ./pkg%d","description":"vet"}`, i)
			resp := `{"stdout":"","stderr":"","interrupted":false,"isImage":false}`
			payload := fmt.Sprintf(`{"session_id":%q,"transcript_path":"/dev/null","cwd":%q,"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":%s,"tool_response":%s,"tool_use_id":"toolu_%d"}`, session, cwd, in, resp, i)
			r = ledger.Record{Kind: ledger.KindToolCall, Runtime: "claude", Event: "PostToolUse", Tool: "Bash",
				ToolUseID: fmt.Sprintf("toolu_%d", i), Args: json.RawMessage(in),
				Body: map[string]any{"cwd": cwd, "failed": false, "exit_code": 0},
				Artifacts: []ledger.Artifact{
					{Name: "payload.json", Data: strings.NewReader(payload)},
					{Name: "input.json", Data: strings.NewReader(in)},
					{Name: "response.json", Data: strings.NewReader(resp)},
					{Name: "stdout", Data: strings.NewReader("")},
					{Name: "cwd", Data: strings.NewReader(cwd)},
				}}
		}
		if _, err := l.Append(session, r); err != nil {
			return fmt.Errorf("append %d: %w", i, err)
		}
	}
	return nil
}
