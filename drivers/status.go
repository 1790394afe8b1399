package drivers

import (
	"context"
	"errors"
	"net/http"
)

// StatusCode returns the HTTP status that err stands for: 409 Conflict for
// contention (ErrNotAcquired) and for a lock lost to another owner or to
// its TTL, 400 for ErrInvalid, 401 for ErrUnauthorized, 403 for
// ErrForbidden (a lock lost to refused credentials: its cause's, 401
// or 403), 429 for ErrFull,
// 501 for ErrUnsupported, 503 for a backend that cannot answer now
// (ErrUnavailable, ErrClosed, a lock lost because the backend was
// unreachable or the Manager closed, a deadline that passed), and 500 for
// anything else, nil included.
//
// It is the one map from this module's errors to HTTP statuses: the
// cluster's API answers with it, and the typed errors' StatusCode methods
// read it, so that an error that reaches an HTTP framework's handler
// unhandled becomes the status a client expects.
func StatusCode(err error) int {
	switch {
	case err == nil:
		return http.StatusInternalServerError
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrLostRefused): // without a cause that says which
		return http.StatusUnauthorized
	case errors.Is(err, ErrNotAcquired):
		return http.StatusConflict
	case errors.Is(err, ErrLostUnreachable), errors.Is(err, ErrLostClosed):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrLost):
		return http.StatusConflict
	case errors.Is(err, ErrFull):
		return http.StatusTooManyRequests
	case errors.Is(err, ErrUnsupported):
		return http.StatusNotImplemented
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrClosed),
		errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// StatusCode is 409 Conflict: the key is held by another owner. An
// HTTP framework that asks an error for its status (go-kit's StatusCoder,
// for one) answers a contention error that reached it unhandled with 409.
func (e *NotAcquiredError) StatusCode() int { return StatusCode(e) }

// StatusCode is 409 Conflict for a lock lost to its TTL or to another
// owner, 503 Service Unavailable when it was lost because the backend was
// unreachable or the Manager was closed, and 401 or 403 when a refresh was
// refused for the credentials (see StatusCode).
func (e *LostError) StatusCode() int { return StatusCode(e) }

// StatusCode is 400 Bad Request.
func (e *InvalidError) StatusCode() int { return StatusCode(e) }

// StatusCode is 400 Bad Request: the program was built without the driver
// its configuration names.
func (e *NotLinkedError) StatusCode() int { return StatusCode(e) }
