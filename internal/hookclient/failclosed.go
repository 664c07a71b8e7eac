package hookclient

import (
	"io"

	"github.com/docket/docket/hooks"
)

// JudgeUnreachable is docket-judge's answer when the daemon does not
// give one: read-only calls (read, search) pass to the runtime's own
// permission rules, every other call is denied with the reason, which
// says how to start the daemon.
func JudgeUnreachable(args []string, payload []byte, reason string, stdout, stderr io.Writer) int {
	ev, err := hooks.Decode(payload, hooks.Runtime(Flag(args, "runtime")))
	if err != nil {
		io.WriteString(stderr, "docket-judge: error: "+reason+"\n")
		return 2
	}
	if k := ev.Kind(); k == hooks.KindRead || k == hooks.KindSearch {
		io.WriteString(stderr, "docket-judge: warning: "+reason+"; read-only call passed\n")
		return 0
	}
	out, _, err := hooks.Encode(ev.Runtime, hooks.Answer{Event: hooks.PreToolUse, Decision: hooks.Deny, Reason: "docket-judge: " + reason})
	if err != nil {
		io.WriteString(stderr, "docket-judge: error: "+err.Error()+"\n")
		return 2
	}
	stdout.Write(out)
	return 0
}

// LedgerUnreachable: nothing was recorded; exit 2 tells the runtime why,
// except for a user prompt, where exit 2 would erase the prompt (1).
func LedgerUnreachable(args []string, payload []byte, reason string, _, stderr io.Writer) int {
	io.WriteString(stderr, "docket-ledger: error: not recorded: "+reason+"\n")
	if ev, err := hooks.Decode(payload, hooks.Runtime(Flag(args, "runtime"))); err == nil && ev.Name == hooks.UserPromptSubmit {
		return 1
	}
	return 2
}

// GateUnreachable blocks the stop: nothing was checked.
func GateUnreachable(args []string, payload []byte, reason string, stdout, stderr io.Writer) int {
	rt := hooks.Runtime(Flag(args, "runtime"))
	event := hooks.Stop
	if ev, err := hooks.Decode(payload, rt); err == nil {
		rt = ev.Runtime
		if ev.Name == hooks.SubagentStop {
			event = hooks.SubagentStop
		}
	}
	a := hooks.Answer{Event: event, Decision: hooks.Block, Reason: "docket-gate: " + reason + "; the final message was not checked."}
	out, _, err := hooks.Encode(rt, a)
	if err != nil {
		a.Event = hooks.Stop
		out, _, _ = hooks.EncodeClaude(a)
	}
	stdout.Write(out)
	io.WriteString(stderr, "docket: error: "+reason+"\n")
	return 0
}
