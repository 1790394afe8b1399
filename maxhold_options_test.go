package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

// A cap on total hold time is refused with ErrUnsupported by a driver
// that cannot enforce it (a cap the holder alone kept would not stop a
// wedged holder), by every call that takes a lock, before anything is
// taken; 0 is no cap, which every driver serves.
func TestWithMaxHold_RefusedWhereTheDriverCannotEnforceIt(t *testing.T) {
	t.Parallel()
	f := newFake()
	m := newManager(t, fakeWaiter{fakeExtender{f}})
	capped := lock.WithMaxHold(time.Minute)
	calls := map[string]error{
		"Try":      m.Try(t.Context(), "k", time.Second, noop, capped),
		"Block":    m.Block(t.Context(), "k", time.Second, noop, capped),
		"TryAll":   m.TryAll(t.Context(), []string{"k", "j"}, time.Second, func(context.Context, []*lock.Lock) error { return nil }, capped),
		"BlockAll": m.BlockAll(t.Context(), []string{"k", "j"}, time.Second, func(context.Context, []*lock.Lock) error { return nil }, capped),
		"Make":     m.Make("k", time.Second, capped).Err(),
	}
	for call, err := range calls {
		if !errors.Is(err, lock.ErrUnsupported) {
			t.Errorf("%s with WithMaxHold on a driver without Capabilities.MaxHold = %v; want ErrUnsupported", call, err)
		}
	}
	if l := m.Make("k", time.Second, capped); !errors.Is(func() error { _, err := l.Acquire(t.Context()); return err }(), lock.ErrUnsupported) {
		t.Error("Acquire on a handle made with a cap the driver cannot enforce did not report ErrUnsupported")
	}
	for _, k := range []string{"k", "j"} {
		if exists(t, m, k) {
			t.Errorf("%s is held after the refusals", k)
		}
	}
	if err := m.Try(t.Context(), "k", time.Second, noop, lock.WithMaxHold(0)); err != nil {
		t.Errorf("Try with WithMaxHold(0), no cap: %v", err)
	}
}

// A cap is 0 (none) or a duration in the TTL's range, longer than the
// safety margin of a call with a callback (else the callback would be
// told at once); a handle's cap is given to Make, not to Lock.Block.
func TestWithMaxHold_Invalid(t *testing.T) {
	t.Parallel()
	m := newManager(t, openMemory(t))
	for name, err := range map[string]error{
		"negative":                m.Try(t.Context(), "k", time.Second, noop, lock.WithMaxHold(-time.Second)),
		"beyond MaxTTL":           m.Block(t.Context(), "k", time.Second, noop, lock.WithMaxHold(drivers.MaxTTL+time.Millisecond)),
		"within the margin":       m.Try(t.Context(), "k", 10*time.Second, noop, lock.WithMaxHold(2*time.Second)),
		"within a set's margin":   m.TryAll(t.Context(), []string{"k"}, time.Second, func(context.Context, []*lock.Lock) error { return nil }, lock.WithMaxHold(100*time.Millisecond), lock.WithSafetyMargin(200*time.Millisecond)),
		"Make, negative":          m.Make("k", time.Second, lock.WithMaxHold(-1)).Err(),
		"Lock.Block's own option": m.Make("k", time.Second).Block(t.Context(), time.Second, lock.WithMaxHold(time.Minute)),
	} {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: %v; want ErrInvalid", name, err)
		}
	}
	if exists(t, m, "k") {
		t.Error("k is held after the refusals")
	}
}

// A handle's estimates never pass its cap: MaxHoldAt is the cap counted
// from the acquire's sending, and ExpiresAt, after the grant and after
// every refresh, is at most that; a handle without a cap has none.
func TestWithMaxHold_ExpiresAtNeverPastTheCap(t *testing.T) {
	t.Parallel()
	m := newManager(t, openMemory(t))
	const hold = 2 * time.Second
	l := m.Make("k", time.Minute, lock.WithMaxHold(hold))
	before := time.Now()
	mustAcquire(t, l)
	after := time.Now()
	capAt := l.MaxHoldAt()
	if capAt.Before(before.Add(hold)) || capAt.After(after.Add(hold)) {
		t.Fatalf("MaxHoldAt %v after the acquire was sent; want the cap %v from then", capAt.Sub(before), hold)
	}
	for i := range 3 {
		if exp := l.ExpiresAt(); exp.After(capAt) {
			t.Fatalf("refresh %d: ExpiresAt %v past MaxHoldAt", i, exp.Sub(capAt))
		}
		if ok, err := l.Refresh(t.Context()); !ok || err != nil {
			t.Fatalf("Refresh %d = %v, %v", i, ok, err)
		}
		if got := l.MaxHoldAt(); !got.Equal(capAt) {
			t.Fatalf("refresh %d moved MaxHoldAt by %v", i, got.Sub(capAt))
		}
	}
	plain := m.Make("j", time.Minute)
	mustAcquire(t, plain)
	if !plain.MaxHoldAt().IsZero() {
		t.Errorf("a handle without a cap has MaxHoldAt %v", plain.MaxHoldAt())
	}
}
