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
