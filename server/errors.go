package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/docket/docket/store"
)

// Error is an API error: the HTTP status and the JSON body
// {"error":{"code","message","field"}}. Handlers return it (or any error,
// which statusOf maps) and never write an error response themselves.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s: %s", e.Code, e.Field, e.Message)
	}
	return e.Code + ": " + e.Message
}

// Error codes.
const (
	CodeInvalid      = "invalid_request"
	CodeTooLarge     = "too_large"
	CodeUnauthorized = "unauthorized"
	CodeForbidden    = "forbidden"
	CodeNotFound     = "not_found"
	CodeConflict     = "conflict"
	CodeInvariant    = "invariant"
	CodeUnavailable  = "unavailable"
	CodeInternal     = "internal"
)

func badRequest(field, format string, a ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Field: field, Message: fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) *Error {
	return &Error{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf(format, a...)}
}

func conflict(field, format string, a ...any) *Error {
	return &Error{Status: http.StatusConflict, Code: CodeConflict, Field: field, Message: fmt.Sprintf(format, a...)}
}

// apiError maps any error onto an *Error. This is the one place where
// errors become statuses.
func apiError(err error) *Error {
	var ae *Error
	var ve *store.ValidationError
	var ie *store.InvariantError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &mbe):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeTooLarge, Message: fmt.Sprintf("request body is larger than %d bytes", mbe.Limit)}
	case errors.As(err, &ve):
		return badRequest(ve.Field, "%s", ve.Msg)
	case errors.As(err, &ie):
		return &Error{Status: http.StatusUnprocessableEntity, Code: CodeInvariant, Message: ie.Error()}
	case errors.Is(err, store.ErrNotFound):
		return notFound("%v", err)
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrExists):
		return conflict("", "%v", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "the request did not finish in time"}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"}
}

// writeError writes err as the API's JSON error.
func writeError(w http.ResponseWriter, err error) *Error {
	ae := apiError(err)
	if ae.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="docket"`)
	}
	writeJSON(w, ae.Status, map[string]*Error{"error": ae})
	return ae
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"encode response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
