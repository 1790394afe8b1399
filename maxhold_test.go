package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/holdcap"
	"github.com/zerotal/lock/internal/testkit/poll"
	"github.com/zerotal/lock/internal/testkit/realbackends"
)

// The figures of the hold cap's tests on real backends: a TTL the holder
// keeps refreshing every capEvery, far longer than the cap, so that only
// the cap can end the grant before the test gives up.
const (
	capTTL   = 6 * time.Second
	capEvery = time.Second
	capHold  = 3 * time.Second
	// capGiveUp bounds every wait of these tests.
	capGiveUp = 30 * time.Second
)

// onEveryBackend runs check on every backend of this module, PostgreSQL
// too (realbackends.Every); -short skips it, as they are real processes
// and files.
func onEveryBackend(t *testing.T, check func(t *testing.T, name string, m *lock.Manager)) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real backends")
	}
	realbackends.Each(t, realbackends.Every(), check)
}

// capWindow checks that the key passed on at the cap: not before the cap
// counted from when the acquire was sent (the backend's grant came later),
// and not later than one refresh period after the cap counted from the
// grant's answer.
func capWindow(t *testing.T, what string, sent, granted, at time.Time) {
	t.Helper()
	t.Logf("%s %v after the grant (cap %v)", what, at.Sub(granted).Round(time.Millisecond), capHold)
	if early := sent.Add(capHold); at.Before(early) {
		t.Errorf("%s %v after the acquire was sent; the cap is %v", what, at.Sub(sent), capHold)
	}
	if late := granted.Add(capHold + capEvery); at.After(late) {
		t.Errorf("%s %v after the grant; want by the cap %v plus a refresh period %v", what, at.Sub(granted), capHold, capEvery)
	}
}

// serveNext has the next waiter Block for key and returns when it was
// served, on a channel; the waiter releases at once.
func serveNext(t *testing.T, m *lock.Manager, key string) <-chan time.Time {
	t.Helper()
	served := make(chan time.Time, 1)
	errs := make(chan error, 1)
	go func() {
		errs <- m.Block(context.Background(), key, capTTL, func(context.Context, *lock.Lock) error {
			served <- time.Now()
			return nil
		}, lock.WithTimeout(capGiveUp))
	}()
	t.Cleanup(func() {
		if err := <-errs; err != nil {
			t.Errorf("the next waiter's Block: %v", err)
		}
	})
	return served
}

// A holder that keeps its lock refreshed, and one wedged in a loop of
// raw Extend calls that ignores everything, both lose the key at its cap
// on total hold time, on every backend, enforced by the backend itself:
// not before the cap and not later than a refresh period after it; the
// next waiter is then served, and the callback was told first, with a
// *LostError of reason ErrLostMaxHold. A backend that cannot enforce a
// cap fails here, saying so.
func TestMaxHold_EveryBackendEndsARefreshedGrantAtItsCap(t *testing.T) {
	onEveryBackend(t, func(t *testing.T, name string, m *lock.Manager) {
		if !m.Driver().Capabilities().MaxHold {
			t.Fatalf("the %s backend does not declare drivers.Capabilities.MaxHold: it cannot enforce WithMaxHold", name)
		}
		clockRuns(t, m)
		t.Run("WithRefresh", func(t *testing.T) { refreshedHolderEndsAtCap(t, m) })
		t.Run("raw Extend", func(t *testing.T) { wedgedExtendEndsAtCap(t, m) })
	})
}

// clockRuns waits until the backend's clock runs: a cluster's leader
// holds its clock still for a moment after it takes over (a TTL, and a
// cap, never shrink across a failover), which would make a grant made
// then end that much later than the cap, by the wall clock.
func clockRuns(t *testing.T, m *lock.Manager) {
	t.Helper()
	in, ok := m.Driver().(drivers.Inspector)
	if !ok {
		return
	}
	const ttl = 10 * time.Second
	l := m.Make("clock", ttl)
	mustAcquire(t, l)
	defer func() { _ = l.Release(context.Background()) }()
	poll.Until(t, capGiveUp, "the backend's clock to run", func() bool {
		h, found, err := in.Inspect(t.Context(), m.Prefix()+"clock")
		return err == nil && found && len(h.Holders) == 1 && h.Holders[0].Remaining < ttl-100*time.Millisecond
	})
}

// refreshedHolderEndsAtCap holds a key with WithRefresh and a cap, its
// callback wedged (it goes on until the next waiter has the key), and
// checks when the key passes on and what the callback was told.
func refreshedHolderEndsAtCap(t *testing.T, m *lock.Manager) {
	const key = "capped"
	type heldTimes struct {
		granted, told time.Time
		cause         error
		pastCap       bool // ExpiresAt was seen past MaxHoldAt
	}
	held := make(chan struct{})
	got := make(chan heldTimes, 1)
	release := make(chan struct{})
	sent := time.Now()
	errs := make(chan error, 1)
	go func() {
		errs <- m.Try(context.Background(), key, capTTL, func(ctx context.Context, l *lock.Lock) error {
			h := heldTimes{granted: time.Now()}
			if l.MaxHoldAt().IsZero() || l.MaxHoldAt().After(h.granted.Add(capHold)) {
				h.pastCap = true
			}
			close(held)
			// The work samples its lock's estimates until it is told.
			tick := time.NewTicker(capEvery / 4)
			defer tick.Stop()
		work:
			for ctx.Err() == nil {
				if exp, at := l.ExpiresAt(), l.MaxHoldAt(); !exp.IsZero() && exp.After(at) {
					h.pastCap = true
				}
				select {
				case <-ctx.Done():
				case <-tick.C:
				case <-release:
					break work
				}
			}
			if ctx.Err() != nil {
				h.told, h.cause = time.Now(), context.Cause(ctx)
			}
			got <- h
			// Wedged: it goes on as if it still held the key.
			select {
			case <-release:
			case <-time.After(capGiveUp):
			}
			return nil
		}, lock.WithRefreshEvery(capEvery), lock.WithMaxHold(capHold))
	}()
	select {
	case <-held:
	case err := <-errs:
		t.Fatalf("Try with WithMaxHold: %v", err)
	}
	served := serveNext(t, m, key)

	var at time.Time
	select {
	case at = <-served:
	case <-time.After(capGiveUp):
		close(release)
		<-errs
		t.Fatalf("the next waiter was not served within %v of a cap of %v", capGiveUp, capHold)
	}
	close(release)
	err := <-errs
	h := <-got
	capWindow(t, "the next waiter was served", sent, h.granted, at)

	var lost *lock.LostError
	if !errors.As(h.cause, &lost) || lost.Reason != lock.ErrLostMaxHold {
		t.Errorf("the callback's cause is %v; want a *LostError of reason ErrLostMaxHold", h.cause)
	}
	if !errors.Is(err, lock.ErrLostMaxHold) {
		t.Errorf("Try = %v; want the loss, ErrLostMaxHold", err)
	}
	if h.told.IsZero() {
		t.Fatal("the callback was never told")
	}
	if !h.told.Before(at) {
		t.Errorf("the callback was told %v after the next waiter was served; want before", h.told.Sub(at))
	}
	if h.told.Before(sent.Add(capHold - capTTL/5)) {
		t.Errorf("the callback was told %v after the acquire was sent; want a safety margin %v before the cap %v, not earlier", h.told.Sub(sent), capTTL/5, capHold)
	}
	if h.pastCap {
		t.Error("ExpiresAt was past MaxHoldAt, or MaxHoldAt past the cap counted from the grant")
	}
}

// wedgedExtendEndsAtCap holds a key through a handle made with a cap and
// extends it with raw Extend calls every refresh period, as a refresh
// loop that ignores everything would, until the backend refuses.
func wedgedExtendEndsAtCap(t *testing.T, m *lock.Manager) {
	const key = "wedged"
	ext, ok := m.Driver().(drivers.Extender)
	if !ok {
		t.Fatalf("the %T driver has no Extend", m.Driver())
	}
	l := m.Make(key, capTTL, lock.WithMaxHold(capHold))
	if err := l.Err(); err != nil {
		t.Fatalf("Make with WithMaxHold: %v", err)
	}
	sent := time.Now()
	mustAcquire(t, l)
	granted := time.Now()
	owner := l.Owner()
	served := serveNext(t, m, key)

	refused, _, err := holdcap.RefreshUntilLost(t.Context(), func(ctx context.Context) (bool, error) {
		return ext.Extend(ctx, m.Prefix()+key, owner, capTTL)
	}, capEvery, capGiveUp)
	if err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if refused.IsZero() {
		t.Fatalf("Extend still kept the key %v after the grant; the cap is %v", time.Since(granted), capHold)
	}
	if refused.Before(sent.Add(capHold)) {
		t.Errorf("Extend refused %v after the acquire was sent, before the cap %v", refused.Sub(sent), capHold)
	}
	select {
	case at := <-served:
		capWindow(t, "the next waiter was served", sent, granted, at)
	case <-time.After(capGiveUp):
		t.Fatal("the next waiter was not served")
	}
}
