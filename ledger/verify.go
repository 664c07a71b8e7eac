package ledger

import (
	"fmt"
	"io"
)

// ReadSeekCloser is an opened artifact.
type ReadSeekCloser interface {
	io.ReadSeeker
	io.Closer
}

// VerifyError names the first entry that failed verification and why.
type VerifyError struct {
	Session string
	Seq     int64 // -1 when the failure is not about one entry (head, file)
	Reason  string
	Err     error
}

func (e *VerifyError) Error() string {
	if e.Seq < 0 {
		return fmt.Sprintf("ledger %s: %s", e.Session, e.Reason)
	}
	return fmt.Sprintf("ledger %s: seq %d: %s", e.Session, e.Seq, e.Reason)
}

func (e *VerifyError) Unwrap() error { return e.Err }
