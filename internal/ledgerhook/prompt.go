package ledgerhook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/docket/docket/hooks"
	"github.com/docket/docket/internal/home"
	"github.com/docket/docket/internal/hookclient"
	"github.com/docket/docket/ledger"
	"github.com/docket/docket/trust"
)

// recordPrompt appends the user_prompt entry that starts a causal chain,
// makes its O-Tag the session's current origin, and refreshes the trust
// levels (a prompt is the natural moment: once per turn, not per call).
// Only the append can fail the hook; the rest is reported on stderr,
// which the runtime keeps in its debug log (stdout must stay empty: on
// UserPromptSubmit it would become context for the model).
func recordPrompt(h home.Home, l Appender, ev *hooks.Event, payload []byte, peer *hookclient.Peer, stderr io.Writer) error {
	if forcedRetry(h, ev) {
		return nil
	}
	sum := sha256.Sum256([]byte(ev.Prompt))
	body := map[string]any{
		"prompt_sha256": "sha256:" + hex.EncodeToString(sum[:]),
		"prompt_bytes":  len(ev.Prompt),
	}
	if !ev.HasPrompt {
		body["prompt_missing"] = true
	}
	if ev.Cwd != "" {
		body["cwd"] = ev.Cwd
	}
	if ev.TurnID != "" {
		body["turn_id"] = ev.TurnID
	}
	if ev.AgentType != "" {
		body["agent_type"] = ev.AgentType
	}
	if peer != nil {
		body["peer"] = map[string]any{"uid": peer.UID, "gid": peer.GID, "pid": peer.PID}
	}
	arts := []ledger.Artifact{{Name: "payload.json", Data: bytes.NewReader(payload)}}
	if ev.HasPrompt {
		arts = append(arts, ledger.Artifact{Name: "prompt.txt", Data: strings.NewReader(ev.Prompt)})
	}
	e, err := l.Append(ev.SessionID, ledger.Record{Kind: ledger.KindUserPrompt, Runtime: string(ev.Runtime), Event: hooks.UserPromptSubmit,
		AgentID: ev.AgentID, Body: body, Artifacts: arts})
	if err != nil {
		return err
	}
	_ = h.RecordSessionForDir(ev.Cwd, ev.SessionID)
	o := trust.Origin{OTag: trust.OTagOf(e), Session: ev.SessionID, Seq: e.Seq, Time: e.Time}
	if err := trust.WriteOrigin(h, l.Keys(), o); err != nil {
		fmt.Fprintf(stderr, "docket-ledger: warning: %v\n", err)
	}
	p, perr := trust.LoadPolicy(h)
	if perr != nil {
		fmt.Fprintf(stderr, "docket-ledger: warning: %v\n", perr)
	}
	st := &trust.Store{Home: h, Keys: l.Keys(), LockWait: 3 * time.Second}
	if _, err := st.Refresh(&p, time.Now()); err != nil {
		fmt.Fprintf(stderr, "docket-ledger: warning: trust levels not refreshed: %v\n", err)
	}
	return nil
}

// forcedRetry reports whether a Gemini CLI BeforeAgent is the retry the
// stop gate forced, not a prompt of the user's: Gemini starts the agent
// again after an AfterAgent block, with docket's block reason as the
// "prompt", and fires BeforeAgent for it. The gate's count of the
// session's consecutive blocks says the last stop was blocked; it is
// reset when a stop goes through, which is the only point a user's next
// prompt can come from in a headless run. Recording the retry would start
// a new causal chain at docket's own words and, as a new turn, make the
// gate forget the text it had blocked. An unreadable count reads as no
// block: the prompt is recorded, as before. The cost, in an interactive
// session: a prompt the user types into a retry the gate forced is taken
// for the retry, and its calls stay in the previous chain.
func forcedRetry(h home.Home, ev *hooks.Event) bool {
	if ev.Runtime != hooks.Gemini {
		return false // Claude Code and Codex fire no prompt event for the continuation
	}
	b, err := os.ReadFile(h.GateBlocksPath(ev.SessionID, ""))
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return err == nil && n > 0
}

// promptError is a prompt that could not be recorded: docket-ledger
// exits 1, not 2, which on UserPromptSubmit would erase the prompt.
type promptError struct{ err error }

func (e *promptError) Error() string { return e.err.Error() }
func (e *promptError) Unwrap() error { return e.err }

func promptErr(ev *hooks.Event, err error) error {
	if ev.Name == hooks.UserPromptSubmit {
		return &promptError{err}
	}
	return err
}
