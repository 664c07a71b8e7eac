package ledger

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is a signed statement of a ledger's Merkle tree: C2SP
// tlog-checkpoint text (origin, size, base64 root) in a signed note. The
// head beside each ledger file is a checkpoint with extension lines:
// "end <byte offset>", where the covered entries end; "last <hex>", the
// hash of the last covered entry; "pack <byte offset>", where their
// artifact bundles end.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
	End    int64  // -1 when the checkpoint has no end extension
	Last   string // hash of the last covered entry; "" when absent
	Pack   int64  // bytes of the artifact pack the entries account for; -1 when absent
}

// Origin is the checkpoint origin line of a session's ledger.
func Origin(session string) string { return "docket/ledger/" + session }

// text renders the checkpoint body (the note text).
func (c *Checkpoint) text() string {
	s := fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
	if c.End >= 0 {
		s += fmt.Sprintf("end %d\n", c.End)
	}
	if c.Last != "" {
		s += "last " + c.Last + "\n"
	}
	if c.Pack >= 0 {
		s += fmt.Sprintf("pack %d\n", c.Pack)
	}
	return s
}

// signCheckpoint signs c's text. Checkpoints given out are signed with the
// Ed25519 key; heads with the HMAC key (see headsig.go).
func signCheckpoint(c *Checkpoint, signer note.Signer) ([]byte, error) {
	msg, err := note.Sign(&note.Note{Text: c.text()}, signer)
	if err != nil {
		return nil, fmt.Errorf("sign checkpoint: %w", err)
	}
	return msg, nil
}

var errCheckpointSyntax = errors.New("malformed checkpoint")

// OpenCheckpoint verifies a signed checkpoint with the verifier key and
// parses it.
func OpenCheckpoint(msg []byte, vkey string) (*Checkpoint, error) {
	v, err := note.NewVerifier(strings.TrimSpace(vkey))
	if err != nil {
		return nil, fmt.Errorf("checkpoint verifier key: %w", err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return nil, fmt.Errorf("checkpoint signature: %w", err)
	}
	return parseCheckpointText(n.Text)
}

func parseCheckpointText(text string) (*Checkpoint, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 || lines[0] == "" {
		return nil, errCheckpointSyntax
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != lines[1] {
		return nil, fmt.Errorf("%w: tree size", errCheckpointSyntax)
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize {
		return nil, fmt.Errorf("%w: root hash", errCheckpointSyntax)
	}
	c := &Checkpoint{Origin: lines[0], Size: size, End: -1, Pack: -1}
	copy(c.Root[:], root)
	for _, ext := range lines[3:] {
		if v, ok := strings.CutPrefix(ext, "end "); ok {
			end, err := strconv.ParseInt(v, 10, 64)
			if err != nil || end < 0 || strconv.FormatInt(end, 10) != v {
				return nil, fmt.Errorf("%w: end extension", errCheckpointSyntax)
			}
			c.End = end
		}
		if v, ok := strings.CutPrefix(ext, "pack "); ok {
			p, err := strconv.ParseInt(v, 10, 64)
			if err != nil || p < 0 || strconv.FormatInt(p, 10) != v {
				return nil, fmt.Errorf("%w: pack extension", errCheckpointSyntax)
			}
			c.Pack = p
		}
		if v, ok := strings.CutPrefix(ext, "last "); ok {
			if len(v) != 64 {
				return nil, fmt.Errorf("%w: last extension", errCheckpointSyntax)
			}
			c.Last = v
		}
	}
	return c, nil
}
