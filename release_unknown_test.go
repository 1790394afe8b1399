package lock_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

// A release whose outcome is unknown but whose owner no longer holds the
// key has done what Release is for: the handle says so, without an error.
func TestRelease_OutcomeUnknownButNoLongerHeld(t *testing.T) {
	// The driver releases for real and then answers as a client whose
	// first attempt's reply was lost and whose retry found the key gone.
	f := newFake()
	f.faults.Lose(drivers.OutcomeUnknown("release", fmt.Errorf("the retry found the key gone: %w", drivers.ErrNoLongerHeld)),
		driverstest.OpRelease)
	m := newManager(t, f)
	l := m.Make("k", time.Minute)
	ctx := t.Context()
	if ok, err := l.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v; the owner no longer holds the key, so the release is done", err)
	}
	if l.IsAcquired() {
		t.Fatal("the handle still says it holds the key")
	}
}
