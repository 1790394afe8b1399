package lock_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

// TestErrors_OutcomeUnknownIsAlsoUnavailable: a caller that only knows
// ErrUnavailable keeps working, one that knows ErrOutcomeUnknown can tell
// "reached nothing" from "may have taken effect", and the cause stays
// reachable through both wrappers.
func TestErrors_OutcomeUnknownIsAlsoUnavailable(t *testing.T) {
	cause := errors.New("connection refused")
	tests := []struct {
		name        string
		err         error
		unavailable bool
		unknown     bool
	}{
		{"unavailable", drivers.Unavailable("release", cause), true, false},
		{"outcome unknown", drivers.OutcomeUnknown("release", cause), true, true},
		{"wrapped outcome unknown", fmt.Errorf("lock: release %q: %w", "k", drivers.OutcomeUnknown("release", cause)), true, true},
		{"plain", cause, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := errors.Is(tc.err, lock.ErrUnavailable); got != tc.unavailable {
				t.Errorf("errors.Is(%v, ErrUnavailable) = %v, want %v", tc.err, got, tc.unavailable)
			}
			if got := errors.Is(tc.err, lock.ErrOutcomeUnknown); got != tc.unknown {
				t.Errorf("errors.Is(%v, ErrOutcomeUnknown) = %v, want %v", tc.err, got, tc.unknown)
			}
			if !errors.Is(tc.err, cause) {
				t.Errorf("%v does not wrap its cause", tc.err)
			}
			if errors.Is(tc.err, lock.ErrNotAcquired) {
				t.Errorf("%v matches ErrNotAcquired", tc.err)
			}
		})
	}
	if drivers.OutcomeUnknown("x", nil) != nil || drivers.Unavailable("x", nil) != nil {
		t.Error("wrapping a nil error must give nil")
	}
}
