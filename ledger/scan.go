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
	return scanLinesHint(r, -1, fn)
}

// scanLinesHint is scanLines for a reader of about hint bytes (-1:
// unknown): a short read takes a short buffer, whose pages the process
// does not have to fault in.
func scanLinesHint(r io.Reader, hint int64, fn func(line []byte, complete bool) error) error {
	size := 256 << 10
	if sr, ok := r.(*io.SectionReader); ok && (hint < 0 || sr.Size() < hint) {
		hint = sr.Size()
	}
	if hint >= 0 && hint < int64(size) {
		size = max(int(hint)+1, 4096)
	}
	br := bufio.NewReaderSize(r, size)
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
