package store

import (
	"errors"
	"fmt"
)

// Sentinel errors. Backends wrap them; test with errors.Is.
var (
	// ErrNotFound: the memory, decision, review item, recall, approval or
	// session owner does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: an insert named an id that is already taken.
	ErrExists = errors.New("already exists")
	// ErrConflict: the record is not in a state that allows the change
	// (a resolved review item, a decided approval).
	ErrConflict = errors.New("conflict")
	// ErrWaitTimeout: Wait gave up before a human decided. Callers fail
	// closed: the action does not run.
	ErrWaitTimeout = errors.New("approval wait timed out")
)

// errInvalid marks malformed input.
var errInvalid = errors.New("invalid")

// InvariantError says a memory would break an injection invariant. The SQL
// backends' schema refuses the same rows.
type InvariantError struct {
	MemoryID string
	Rule     string
}

func (e *InvariantError) Error() string {
	if e.MemoryID == "" {
		return "memory invariant: " + e.Rule
	}
	return fmt.Sprintf("memory %s invariant: %s", e.MemoryID, e.Rule)
}

// ErrInvariant is matched by every *InvariantError.
var ErrInvariant = errors.New("memory invariant")

func (e *InvariantError) Is(target error) bool { return target == ErrInvariant }

// ValidationError says a request field is malformed.
type ValidationError struct {
	Field string
	Msg   string
}

func (e *ValidationError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Msg) }
func (e *ValidationError) Unwrap() error { return errInvalid }

// IsInvalid reports whether err is (or wraps) a *ValidationError.
func IsInvalid(err error) bool { return errors.Is(err, errInvalid) }

func invalid(field, format string, a ...any) error {
	return &ValidationError{Field: field, Msg: fmt.Sprintf(format, a...)}
}
