package drivers_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/zerotal/lock/drivers"
)

// statusCoder is what an HTTP framework asks an error for (go-kit's
// StatusCoder has this shape).
type statusCoder interface{ StatusCode() int }

// Every error of the module has its one status; the typed errors report it
// themselves, also when wrapped, so that an error that reaches a
// framework's handler unhandled becomes the status the seed promises (409
// for contention).
func TestStatusCode_OneStatusPerError(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"not acquired", &drivers.NotAcquiredError{Key: "k"}, http.StatusConflict},
		{"wait ended while held", drivers.HeldByWhenEnded(context.DeadlineExceeded, "k", drivers.HeldBy{}), http.StatusConflict},
		{"sentinel not acquired", drivers.ErrNotAcquired, http.StatusConflict},
		{"lost taken", &drivers.LostError{Key: "k", Reason: drivers.ErrLostTaken}, http.StatusConflict},
		{"lost expired", &drivers.LostError{Key: "k", Reason: drivers.ErrLostExpired}, http.StatusConflict},
		{"lost unreachable", &drivers.LostError{Key: "k", Reason: drivers.ErrLostUnreachable, Cause: drivers.Unavailable("refresh", errors.New("dial"))}, http.StatusServiceUnavailable},
		{"lost closed", &drivers.LostError{Key: "k", Reason: drivers.ErrLostClosed}, http.StatusServiceUnavailable},
		{"invalid", &drivers.InvalidError{Field: "ttl", Reason: "zero"}, http.StatusBadRequest},
		{"not linked", &drivers.NotLinkedError{Driver: "redis"}, http.StatusBadRequest},
		{"unauthorized", fmt.Errorf("open: %w", drivers.ErrUnauthorized), http.StatusUnauthorized},
		{"forbidden", fmt.Errorf("acquire: %w", drivers.ErrForbidden), http.StatusForbidden},
		{"lost refused, token revoked", &drivers.LostError{Key: "k", Reason: drivers.ErrLostRefused, Cause: fmt.Errorf("refresh: %w", drivers.ErrUnauthorized)}, http.StatusUnauthorized},
		{"lost refused, key no longer allowed", &drivers.LostError{Key: "k", Reason: drivers.ErrLostRefused, Cause: fmt.Errorf("refresh: %w", drivers.ErrForbidden)}, http.StatusForbidden},
		{"lost refused, no cause", &drivers.LostError{Key: "k", Reason: drivers.ErrLostRefused}, http.StatusUnauthorized},
		{"full", drivers.ErrFull, http.StatusTooManyRequests},
		{"unsupported", drivers.ErrUnsupported, http.StatusNotImplemented},
		{"unavailable", drivers.Unavailable("acquire", errors.New("refused")), http.StatusServiceUnavailable},
		{"outcome unknown", drivers.OutcomeUnknown("acquire", errors.New("reset")), http.StatusServiceUnavailable},
		{"closed", drivers.ErrClosed, http.StatusServiceUnavailable},
		{"deadline", context.DeadlineExceeded, http.StatusServiceUnavailable},
		{"anything else", errors.New("disk on fire"), http.StatusInternalServerError},
		{"nil", nil, http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := drivers.StatusCode(tc.err); got != tc.want {
				t.Fatalf("StatusCode(%v) = %d, want %d", tc.err, got, tc.want)
			}
			wrapped := fmt.Errorf("handler: %w", tc.err)
			var sc statusCoder
			if tc.err == nil || !errors.As(wrapped, &sc) {
				return // not a typed error: the function is the way in
			}
			if got := sc.StatusCode(); got != tc.want {
				t.Fatalf("%T.StatusCode() = %d, want %d", sc, got, tc.want)
			}
		})
	}
}

// The typed errors are status coders: a framework that looks for the
// method finds it on each of them.
func TestStatusCode_TypedErrorsAreStatusCoders(t *testing.T) {
	for _, err := range []error{
		&drivers.NotAcquiredError{}, &drivers.LostError{}, &drivers.InvalidError{}, &drivers.NotLinkedError{},
	} {
		if _, ok := err.(statusCoder); !ok {
			t.Errorf("%T has no StatusCode() int", err)
		}
	}
}
