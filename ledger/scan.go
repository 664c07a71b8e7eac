package ledger

import (
	"bufio"
	"errors"
	"io"

	"golang.org/x/mod/sumdb/tlog"
)

func tlogStoredBytes(n int64) int64 { return tlog.StoredHashCount(n) * tlog.HashSize }

func treeRoot(r tlog.HashReader, n int64) (tlog.Hash, error) {
	if n == 0 {
		return tlog.Hash{}, nil
	}
	return tlog.TreeHash(n, r)
}

var errLineTooLong = errors.New("ledger line exceeds 1 MiB")

// scanLines calls fn for each line of r without its newline; complete is
// false for a final line with no newline (a torn tail).
func scanLines(r io.Reader, fn func(line []byte, complete bool) error) error {
	br := bufio.NewReaderSize(r, 256<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line := chunk[:len(chunk)-1]
			if long != nil {
				line = append(long, line...)
				long = nil
			}
			if len(line) > MaxEntryLine {
				return errLineTooLong
			}
			if err := fn(line, true); err != nil {
				return err
			}
		case errors.Is(err, bufio.ErrBufferFull):
			long = append(long, chunk...)
			if len(long) > MaxEntryLine {
				return errLineTooLong
			}
		case errors.Is(err, io.EOF):
			line := append(long, chunk...)
			if len(line) > 0 {
				return fn(line, false)
			}
			return nil
		default:
			return err
		}
	}
}
