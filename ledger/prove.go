package ledger

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/docket/docket/internal/home"
)

// CurrentCheckpoint verifies the session's ledger with the keys and returns
// its head as a checkpoint signed with the Ed25519 key, for an auditor to
// keep.
func CurrentCheckpoint(h home.Home, session string, opts VerifyOptions) ([]byte, *Report, error) {
	if opts.Keys == nil {
		return nil, nil, fmt.Errorf("checkpoint: %w", ErrNoKey)
	}
	// A checkpoint attests to the ledger as it is, seals included; that
	// they are findings is verify's business.
	opts.AcceptSealed = true
	rep, err := Verify(h, session, opts)
	if err != nil {
		return nil, nil, err
	}
	if !rep.OK {
		return nil, rep, rep.Failure
	}
	c, _, err := readHead(filesFor(h, session).head, opts.Keys.headVerifiers())
	if err != nil {
		return nil, rep, fmt.Errorf("read ledger head: %w", err)
	}
	signer, err := opts.Keys.checkpointSigner()
	if err != nil {
		return nil, rep, err
	}
	c.End, c.Last, c.Pack = -1, "", -1
	msg, err := signCheckpoint(c, signer)
	return msg, rep, err
}

// proofHeader starts the text form of an inclusion proof.
const proofHeader = "docket inclusion proof v1"

// InclusionProof shows that one entry is in a ledger a signed checkpoint
// describes. Its text form is the header line, "seq N", "entry <line>",
// one "hash <base64>" line per proof hash, a blank line, then the signed
// checkpoint note.
type InclusionProof struct {
	Seq        int64
	Entry      []byte // the entry's ledger line, without newline
	Hashes     tlog.RecordProof
	Checkpoint []byte
}

// Prove builds an inclusion proof for entry seq of a session, against the
// current signed head, after verifying the ledger.
func Prove(h home.Home, session string, seq int64, opts VerifyOptions) (*InclusionProof, error) {
	var lines [][]byte
	var tree memTree
	sf := filesFor(h, session)
	head, _, err := CurrentCheckpoint(h, session, opts)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(sf.ledger)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = scanLines(f, func(line []byte, complete bool) error {
		if int64(len(lines)) == seq {
			lines = append(lines, append([]byte(nil), line...))
		} else {
			lines = append(lines, nil)
		}
		return tree.add(line)
	})
	if err != nil {
		return nil, err
	}
	if seq < 0 || seq >= tree.n {
		return nil, fmt.Errorf("prove: seq %d out of range (ledger has %d entries)", seq, tree.n)
	}
	p, err := tlog.ProveRecord(tree.n, seq, &tree)
	if err != nil {
		return nil, fmt.Errorf("prove: %w", err)
	}
	return &InclusionProof{Seq: seq, Entry: lines[seq], Hashes: p, Checkpoint: head}, nil
}

// Marshal renders the proof's text form.
func (p *InclusionProof) Marshal() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nseq %d\nentry %s\n", proofHeader, p.Seq, p.Entry)
	for _, h := range p.Hashes {
		fmt.Fprintf(&b, "hash %s\n", base64.StdEncoding.EncodeToString(h[:]))
	}
	b.WriteString("\n")
	b.Write(p.Checkpoint)
	return b.Bytes()
}

var errProofSyntax = errors.New("malformed inclusion proof")

// CheckInclusion verifies an inclusion proof's text form offline with the
// checkpoint verifier key and returns the proven entry and checkpoint.
func CheckInclusion(text []byte, vkey string) (*Entry, *Checkpoint, error) {
	head, note, ok := bytes.Cut(text, []byte("\n\n"))
	if !ok {
		return nil, nil, errProofSyntax
	}
	sc := bufio.NewScanner(bytes.NewReader(head))
	sc.Buffer(nil, MaxEntryLine+64)
	p := &InclusionProof{Seq: -1}
	for i := 0; sc.Scan(); i++ {
		line := sc.Text()
		switch {
		case i == 0:
			if line != proofHeader {
				return nil, nil, errProofSyntax
			}
		case strings.HasPrefix(line, "seq "):
			n, err := strconv.ParseInt(line[4:], 10, 64)
			if err != nil || n < 0 {
				return nil, nil, errProofSyntax
			}
			p.Seq = n
		case strings.HasPrefix(line, "entry "):
			p.Entry = []byte(line[6:])
		case strings.HasPrefix(line, "hash "):
			raw, err := base64.StdEncoding.DecodeString(line[5:])
			if err != nil || len(raw) != tlog.HashSize {
				return nil, nil, errProofSyntax
			}
			var h tlog.Hash
			copy(h[:], raw)
			p.Hashes = append(p.Hashes, h)
		default:
			return nil, nil, errProofSyntax
		}
	}
	if p.Seq < 0 || p.Entry == nil {
		return nil, nil, errProofSyntax
	}
	c, err := OpenCheckpoint(note, vkey)
	if err != nil {
		return nil, nil, err
	}
	e, err := ParseEntry(p.Entry)
	if err != nil {
		return nil, nil, fmt.Errorf("proof entry: %w", err)
	}
	if int64(e.Seq) != p.Seq || Origin(e.Session) != c.Origin {
		return nil, nil, fmt.Errorf("%w: entry does not match the proof's seq or checkpoint", ErrTampered)
	}
	if h, err := entryHash(e); err != nil || h != e.Hash {
		return nil, nil, fmt.Errorf("%w: entry hash mismatch", ErrTampered)
	}
	if err := tlog.CheckRecord(p.Hashes, c.Size, c.Root, p.Seq, tlog.RecordHash(p.Entry)); err != nil {
		return nil, nil, fmt.Errorf("%w: inclusion proof does not verify: %v", ErrTampered, err)
	}
	return e, c, nil
}
