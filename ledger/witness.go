package ledger

import "fmt"

// SignedHead returns the session's current signed head as a checkpoint
// signed with the Ed25519 key, without verifying the ledger first: for
// the process that has just appended to it (the daemon, at each gate
// decision), to hand to a witness. A later 'docket verify' against the
// witnessed checkpoint proves the ledger only grew since.
func (l *Ledger) SignedHead(session string) ([]byte, *Checkpoint, error) {
	c, _, err := readHead(filesFor(l.home, session).head, l.keys.headVerifiers())
	if err != nil {
		return nil, nil, fmt.Errorf("read ledger head: %w", err)
	}
	signer, err := l.keys.checkpointSigner()
	if err != nil {
		return nil, nil, err
	}
	c.End, c.Last, c.Pack = -1, "", -1
	msg, err := signCheckpoint(c, signer)
	if err != nil {
		return nil, nil, err
	}
	return msg, c, nil
}

// IndexedKind reports whether entries of kind k are among those every
// ReadRelevant returns whatever the decision (validator results, seals).
func IndexedKind(k Kind) bool { return indexedKinds[k] }

// Superseded reports whether a stop that reads entries after e no
// longer needs e: a stop reads the indexed kinds, the tool calls, and
// of the gate decisions only the last of each event and agent — what the
// verified-prefix state lists — so any other entry is superseded by any
// later one, and a gate decision by a later one of its event and agent.
func Superseded(e, later *Entry) bool {
	switch {
	case indexedKinds[e.Kind], e.Kind == KindToolCall, e.Kind == KindToolFailure:
		return false
	case e.Kind == KindGateDecision:
		return later.Kind == KindGateDecision && later.Event == e.Event && later.AgentID == e.AgentID
	}
	return true
}
