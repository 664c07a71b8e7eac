package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/mod/sumdb/note"
)

// The head beside each ledger (<session>.head) holds two slots of
// HeadSlotSize bytes. Each slot is a signed checkpoint note padded with
// NUL bytes; appends write the slots alternately, in place, so a crash in
// the middle of a head write leaves the other slot intact and no file is
// created per append. The head is the valid slot with the larger tree.

// HeadSlotSize is the size of one head slot.
const HeadSlotSize = 1024

var errNoValidHead = errors.New("no valid signed head")

// readHead returns the newest validly signed checkpoint in the head file
// and its raw note. With no verifiers (an auditor without the HMAC key)
// the slots' text is parsed without checking the MAC. A missing file is
// fs.ErrNotExist.
func readHead(path string, verifiers note.Verifiers) (*Checkpoint, []byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return parseHead(b, verifiers)
}

// parseHead is readHead on the head file's bytes.
func parseHead(b []byte, verifiers note.Verifiers) (*Checkpoint, []byte, error) {
	var best *Checkpoint
	var bestRaw []byte
	var firstErr error
	for off := 0; off < len(b); off += HeadSlotSize {
		slot := b[off:min(off+HeadSlotSize, len(b))]
		slot = bytes.TrimRight(slot, "\x00")
		if len(slot) == 0 {
			continue
		}
		c, err := openHeadSlot(slot, verifiers)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if best == nil || c.Size > best.Size {
			best, bestRaw = c, slot
		}
	}
	if best == nil {
		if firstErr != nil {
			return nil, nil, fmt.Errorf("%w: %v", errNoValidHead, firstErr)
		}
		return nil, nil, errNoValidHead
	}
	return best, bestRaw, nil
}

func openHeadSlot(slot []byte, verifiers note.Verifiers) (*Checkpoint, error) {
	if verifiers == nil {
		text, _, ok := bytes.Cut(slot, []byte("\n\n"))
		if !ok {
			return nil, errCheckpointSyntax
		}
		return parseCheckpointText(string(text) + "\n")
	}
	n, err := note.Open(slot, verifiers)
	if err != nil {
		return nil, err
	}
	return parseCheckpointText(n.Text)
}

// writeHeadSlot writes a signed note into slot (size % 2) of the head.
func writeHeadSlot(path string, size int64, note []byte) error {
	if len(note) > HeadSlotSize {
		return fmt.Errorf("signed head is %d bytes, over the %d-byte slot", len(note), HeadSlotSize)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	err = writeHeadSlotTo(f, size, note)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeHeadSlotTo is writeHeadSlot on the open head file.
func writeHeadSlotTo(f *os.File, size int64, note []byte) error {
	if len(note) > HeadSlotSize {
		return fmt.Errorf("signed head is %d bytes, over the %d-byte slot", len(note), HeadSlotSize)
	}
	var slot [HeadSlotSize]byte
	copy(slot[:], note)
	_, err := f.WriteAt(slot[:], (size%2)*HeadSlotSize)
	return err
}

// readAllAt reads f from offset 0 to its end, expecting a head's size.
func readAllAt(f *os.File) ([]byte, error) {
	b := make([]byte, 2*HeadSlotSize+1)
	n := 0
	for {
		m, err := f.ReadAt(b[n:], int64(n))
		n += m
		if errors.Is(err, io.EOF) {
			return b[:n], nil
		}
		if err != nil {
			return nil, err
		}
		if n == len(b) {
			b = append(b, make([]byte, len(b))...)
		}
	}
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
