package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

func TestLock_MakeDoesNotAcquire(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		l := m.Make("payment:456", 15*time.Second)
		if l.IsAcquired() || l.Fence() != 0 || !l.ExpiresAt().IsZero() {
			t.Fatalf("fresh handle: acquired=%v fence=%d expires=%v", l.IsAcquired(), l.Fence(), l.ExpiresAt())
		}
		if exists(t, m, "payment:456") {
			t.Fatal("Make took the lock")
		}
		if err := l.Release(t.Context()); err != nil {
			t.Fatalf("Release of a handle never acquired: %v", err)
		}
	})
}

func TestLock_AcquireReleaseCycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend, m *lock.Manager) {
		a, other := m.Make("k", time.Minute), m.Make("k", time.Minute)
		before := time.Now()
		ok, err := a.Acquire(t.Context())
		if err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		if !a.IsAcquired() {
			t.Error("IsAcquired false after Acquire")
		}
		if exp := a.ExpiresAt(); exp.Before(before.Add(time.Minute)) || exp.After(time.Now().Add(time.Minute)) {
			t.Errorf("ExpiresAt %v is not TTL after the acquire was sent", exp)
		}
		if ok, err := other.Acquire(t.Context()); err != nil || ok {
			t.Fatalf("second handle Acquire = %v, %v, want false", ok, err)
		}
		if err := a.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if a.IsAcquired() || exists(t, m, "k") {
			t.Fatal("still held after Release")
		}
		if ok, err := other.Acquire(t.Context()); err != nil || !ok {
			t.Fatalf("Acquire after release = %v, %v", ok, err)
		}
		if b.fenced && other.Fence() <= 0 {
			t.Error("no fence")
		}
	})
}

// Owner is the token the backend records for the grant: releasing the key
// at the driver under it frees the lock. Every grant has its own.
func TestLock_OwnerIsTheBackendsOwner(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		l := m.Make("k", time.Minute)
		if l.Owner() != "" {
			t.Fatalf("Owner of a handle never acquired = %q", l.Owner())
		}
		mustAcquire(t, l)
		first := l.Owner()
		if err := l.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if l.Owner() != "" {
			t.Fatalf("Owner after Release = %q", l.Owner())
		}
		mustAcquire(t, l)
		if l.Owner() == "" || l.Owner() == first {
			t.Fatalf("Owner of the second grant = %q, first %q; want a new token", l.Owner(), first)
		}
		if ok, err := m.Driver().Release(t.Context(), m.Prefix()+"k", l.Owner()); err != nil || !ok {
			t.Fatalf("driver Release under Owner() = %v, %v; want the grant released", ok, err)
		}
	})
}

func TestLock_AcquireWhileHeldRefreshes(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		l := m.Make("k", time.Minute)
		mustAcquire(t, l)
		fence, exp := l.Fence(), l.ExpiresAt()
		poll.Until(t, time.Second, "the clock to move", func() bool { return time.Now().After(exp.Add(-time.Minute)) })
		if ok, err := l.Acquire(t.Context()); err != nil || !ok {
			t.Fatalf("second Acquire = %v, %v", ok, err)
		}
		if l.Fence() != fence {
			t.Errorf("fence changed from %d to %d on a refresh", fence, l.Fence())
		}
		if !l.ExpiresAt().After(exp) {
			t.Error("ExpiresAt did not move forward")
		}
	})
}

func TestLock_StaleReleaseIsNoOp(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		a, b := m.Make("k", time.Minute), m.Make("k", time.Minute)
		mustAcquire(t, a)
		if err := b.ForceRelease(t.Context()); err != nil {
			t.Fatal(err)
		}
		if ok, _ := b.Acquire(t.Context()); !ok {
			t.Fatal("b: not acquired after force release")
		}
		if err := a.Release(t.Context()); err != nil {
			t.Fatalf("stale Release: %v", err)
		}
		if !exists(t, m, "k") || !b.IsAcquired() {
			t.Fatal("a's stale release freed b's lock")
		}
		if ok, err := b.Refresh(t.Context()); err != nil || !ok {
			t.Fatalf("b.Refresh = %v, %v", ok, err)
		}
	})
}

func TestLock_RefreshFalseWhenGone(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		l := m.Make("k", time.Minute)
		mustAcquire(t, l)
		fence := l.Fence()
		if err := m.Make("k", time.Minute).ForceRelease(t.Context()); err != nil {
			t.Fatal(err)
		}
		ok, err := l.Refresh(t.Context())
		if err != nil || ok {
			t.Fatalf("Refresh of a force-released lock = %v, %v, want false", ok, err)
		}
		if l.IsAcquired() || l.Fence() != fence {
			t.Errorf("after a failed refresh: acquired=%v fence=%d, want false and the last grant's fence %d", l.IsAcquired(), l.Fence(), fence)
		}
		if exists(t, m, "k") {
			t.Error("Refresh re-granted a lock that was gone")
		}
		if ok, err := l.Refresh(t.Context()); err != nil || ok {
			t.Errorf("Refresh of a handle not held = %v, %v", ok, err)
		}
	})
}

func TestLock_RefreshNeverRegrantsExpiredLock(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		l := m.Make("short", 30*time.Millisecond)
		mustAcquire(t, l)
		poll.Until(t, 5*time.Second, "the lock to expire", func() bool { return !exists(t, m, "short") })
		ok, err := l.Refresh(t.Context())
		if err != nil || ok {
			t.Fatalf("Refresh of an expired lock = %v, %v, want false", ok, err)
		}
		if exists(t, m, "short") {
			t.Error("Refresh left a new grant behind")
		}
	})
}

func TestLock_RefreshTakenOverByAnother(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		a, b := m.Make("k", 30*time.Millisecond), m.Make("k", time.Minute)
		mustAcquire(t, a)
		poll.Until(t, 5*time.Second, "b to take the expired lock", func() bool {
			ok, err := b.Acquire(t.Context())
			return err == nil && ok
		})
		if ok, err := a.Refresh(t.Context()); err != nil || ok {
			t.Fatalf("a.Refresh = %v, %v, want false", ok, err)
		}
		if !exists(t, m, "k") {
			t.Error("a's refresh freed b's lock")
		}
	})
}

func TestLock_BlockOnHandle(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		a, b := m.Make("k", time.Minute), m.Make("k", time.Minute)
		mustAcquire(t, a)
		err := b.Block(t.Context(), 50*time.Millisecond, lock.WithRetryDelay(5*time.Millisecond))
		var na *lock.NotAcquiredError
		if !errors.As(err, &na) || na.Key != "k" {
			t.Fatalf("Block on a held key = %v, want *NotAcquiredError", err)
		}
		got := make(chan error, 1)
		go func() { got <- b.Block(t.Context(), 10*time.Second, lock.WithRetryDelay(5*time.Millisecond)) }()
		if err := a.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("Block after release: %v", err)
		}
		if !b.IsAcquired() {
			t.Fatal("Block returned nil but the handle does not hold the lock")
		}
		if err := b.Block(t.Context(), time.Second); err != nil {
			t.Fatalf("Block on a handle that holds the lock: %v", err)
		}
		if err := b.Block(t.Context(), -time.Second); !errors.Is(err, lock.ErrInvalid) {
			t.Fatalf("negative timeout: %v", err)
		}
	})
}

func TestLock_ForceReleaseFreesAnyHolder(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		a := m.Make("k", time.Minute)
		mustAcquire(t, a)
		if err := a.ForceRelease(t.Context()); err != nil {
			t.Fatal(err)
		}
		if a.IsAcquired() || exists(t, m, "k") {
			t.Fatal("still held after ForceRelease")
		}
		if err := a.ForceRelease(t.Context()); err != nil {
			t.Fatalf("ForceRelease of a free key: %v", err)
		}
	})
}

func TestLock_BackendErrorIsUnavailableNotContention(t *testing.T) {
	f := newFake()
	m := newManager(t, f)
	l := m.Make("k", time.Minute)
	f.setDown(true)
	ok, err := l.Acquire(t.Context())
	if ok || !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Acquire on a down backend = %v, %v, want ErrUnavailable", ok, err)
	}
	err = m.Try(t.Context(), "k", time.Minute, noop)
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Try on a down backend = %v", err)
	}
	err = m.Block(t.Context(), "k", time.Minute, noop, lock.WithTimeout(time.Second))
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Block on a down backend = %v", err)
	}
}

// grantThenCancel grants the lock at the backend and then reports the
// caller's cancellation, as a backend does when the cancellation reaches it
// a moment too late.
type grantThenCancel struct {
	*fakeDriver
	cancel context.CancelFunc
}

func (g grantThenCancel) Acquire(ctx context.Context, r drivers.Request) (drivers.Grant, error) {
	got, err := g.fakeDriver.Acquire(context.WithoutCancel(ctx), r)
	if err != nil || !got.Acquired {
		return got, err
	}
	g.cancel()
	return drivers.Grant{}, ctx.Err()
}

func TestLock_CancelledAcquireLeavesNoGrantBehind(t *testing.T) {
	t.Parallel()
	f := newFake()
	ctx, cancel := context.WithCancel(t.Context())
	m := newManager(t, grantThenCancel{f, cancel})
	err := m.Try(ctx, "k", time.Minute, noop)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Try = %v, want context.Canceled", err)
	}
	poll.Until(t, 2*time.Second, "the release of the grant made as the caller gave up", func() bool {
		_, _, held := f.ref.Held(lock.DefaultPrefix + "k")
		return !held
	})
}

// answerLost makes f grant the lock at the backend and then fail as if
// the answer had been lost on the way back (a timeout, a dropped
// connection): the error matches ErrUnavailable, yet the backend holds a
// grant.
func answerLost(f *fakeDriver) *fakeDriver {
	f.faults.Lose(errFakeDown, driverstest.OpAcquire)
	return f
}

// answerLostWaiter does the same to a pushed wait.
func answerLostWaiter(f *fakeDriver) fakeWaiter {
	f.faults.Lose(errFakeDown, driverstest.OpAcquireWait)
	return fakeWaiter{fakeExtender{f}}
}

// An acquisition whose answer was lost may have been granted: nobody
// knows the owner token but this package, so unless it releases the grant,
// the key stays blocked for a whole TTL with no holder.
func TestLock_UnavailableAcquireLeavesNoGrantBehind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		d    func(f *fakeDriver) drivers.Driver
		call func(ctx context.Context, m *lock.Manager) error
	}{
		{"Try", func(f *fakeDriver) drivers.Driver { return answerLost(f) }, func(ctx context.Context, m *lock.Manager) error {
			return m.Try(ctx, "k", time.Hour, noop)
		}},
		{"Acquire", func(f *fakeDriver) drivers.Driver { return answerLost(f) }, func(ctx context.Context, m *lock.Manager) error {
			_, err := m.Make("k", time.Hour).Acquire(ctx)
			return err
		}},
		{"Block polling", func(f *fakeDriver) drivers.Driver { return answerLost(f) }, func(ctx context.Context, m *lock.Manager) error {
			return m.Block(ctx, "k", time.Hour, noop)
		}},
		{"Block pushed", func(f *fakeDriver) drivers.Driver { return answerLostWaiter(f) }, func(ctx context.Context, m *lock.Manager) error {
			return m.Block(ctx, "k", time.Hour, noop)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			m := newManager(t, tc.d(f))
			if err := tc.call(t.Context(), m); !errors.Is(err, lock.ErrUnavailable) {
				t.Fatalf("err = %v, want ErrUnavailable", err)
			}
			if !poll.Wait(5*time.Second, func() bool { _, _, held := f.ref.Held(lock.DefaultPrefix + "k"); return !held }) {
				t.Fatal("the grant whose answer was lost is still held: the key is blocked for its whole TTL")
			}
		})
	}
}

// Close does not wait for a background cleanup on a backend that hangs.
func TestManager_CloseCancelsBackgroundCleanup(t *testing.T) {
	t.Parallel()
	f := answerLost(newFake())
	f.faults.Delay(driverstest.Forever, driverstest.OpRelease) // Release never answers before its context ends
	m := lock.New(f)
	if err := m.Try(t.Context(), "k", time.Hour, noop); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Try = %v, want ErrUnavailable", err)
	}
	if !poll.Wait(5*time.Second, func() bool { return f.faults.Calls(driverstest.OpRelease) > 0 }) {
		t.Fatal("no cleanup release was attempted")
	}
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close waited %v for a cleanup on a hanging backend", took)
	}
}

// NewOwner makes the Manager's form of owner: a fresh token each time,
// then the holder, which HolderOf reads back.
func TestNewOwner_AFreshTokenAndTheHolder(t *testing.T) {
	a, b := lock.NewOwner("deploy@host-3"), lock.NewOwner("deploy@host-3")
	tok, holder, ok := drivers.SplitOwner(a)
	if !ok || holder != "deploy@host-3" || a == b || drivers.HolderOf(b) != "deploy@host-3" {
		t.Fatalf("NewOwner = %q and %q (token %q, holder %q, %v); want two tokens and the holder", a, b, tok, holder, ok)
	}
	if _, holder, ok := drivers.SplitOwner(lock.NewOwner("")); !ok || holder != "" {
		t.Fatalf("NewOwner(\"\") has holder %q, %v; want the tokened form with no holder", holder, ok)
	}
}
