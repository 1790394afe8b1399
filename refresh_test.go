package lock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

func TestManager_RefreshKeepsLockPastTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		const ttl = 400 * time.Millisecond
		err := m.Try(t.Context(), "long", ttl, func(ctx context.Context, l *lock.Lock) error {
			fence := l.Fence()
			work := time.NewTimer(3 * ttl) // the job outlives its TTL several times over
			defer work.Stop()
			select {
			case <-work.C:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			if !exists(t, m, "long") {
				t.Error("the backend freed a refreshed lock")
			}
			if l.Fence() != fence || !l.IsAcquired() {
				t.Errorf("after refreshes: fence %d -> %d, acquired=%v", fence, l.Fence(), l.IsAcquired())
			}
			if err := m.Try(ctx, "long", ttl, noop); !errors.Is(err, lock.ErrNotAcquired) {
				t.Errorf("another Try got a refreshed lock: %v", err)
			}
			return nil
		}, lock.WithRefresh())
		if err != nil {
			t.Fatalf("Try with refresh: %v", err)
		}
		if exists(t, m, "long") {
			t.Error("not released after Try")
		}
	})
}

func TestManager_LostLockCancelsCallback(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		var cause error
		var fence uint64
		err := m.Try(t.Context(), "victim", time.Second, func(ctx context.Context, l *lock.Lock) error {
			fence = l.Fence()
			if err := m.Make("victim", time.Second).ForceRelease(ctx); err != nil {
				return err
			}
			<-ctx.Done() // the next refresh finds the lock gone
			cause = context.Cause(ctx)
			if l.IsAcquired() {
				t.Error("IsAcquired still true after the lock was lost")
			}
			return ctx.Err()
		}, lock.WithRefreshEvery(20*time.Millisecond))
		if !errors.Is(cause, lock.ErrLost) {
			t.Fatalf("callback's context cause = %v, want ErrLost", cause)
		}
		var lost *lock.LostError
		if !errors.As(err, &lost) {
			t.Fatalf("Try = %v, want *LostError", err)
		}
		if lost.Key != "victim" || lost.Fence != fence || lost.Reason != lock.ErrLostTaken || lost.Cause != nil {
			t.Errorf("LostError = %+v, want key victim, fence %d, reason taken, no cause", lost, fence)
		}
		if error(lost) != cause {
			t.Error("Try did not return the same LostError the context was cancelled with")
		}
	})
}

func TestManager_LostLockKeepsCallbackError(t *testing.T) {
	m := newManager(t, newFake())
	boom := errors.New("boom")
	err := m.Try(t.Context(), "k", time.Second, func(ctx context.Context, l *lock.Lock) error {
		_ = m.Make("k", time.Second).ForceRelease(ctx)
		<-ctx.Done()
		return boom
	}, lock.WithRefreshEvery(10*time.Millisecond))
	if !errors.Is(err, lock.ErrLost) || !errors.Is(err, boom) {
		t.Fatalf("Try = %v, want both ErrLost and the callback's error", err)
	}
	var lost *lock.LostError
	if !errors.As(err, &lost) {
		t.Fatal("errors.As *LostError failed")
	}
}

func TestManager_ExpiryWithoutRefreshCancelsCallback(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		const ttl = 60 * time.Millisecond
		start := time.Now()
		var cause error
		err := m.Try(t.Context(), "slow", ttl, func(ctx context.Context, _ *lock.Lock) error {
			<-ctx.Done()
			cause = context.Cause(ctx)
			return ctx.Err()
		})
		// Told at the stop point: the TTL less the default safety margin.
		if d := time.Since(start); d < ttl-ttl/5 {
			t.Errorf("cancelled after %v, before the stop point %v", d, ttl-ttl/5)
		}
		if !errors.Is(cause, lock.ErrLost) || !errors.Is(cause, lock.ErrLostExpired) {
			t.Fatalf("cause = %v, want ErrLost with reason ErrLostExpired", cause)
		}
		var lost *lock.LostError
		if !errors.As(err, &lost) || lost.Key != "slow" {
			t.Fatalf("Try = %v, want *LostError for slow", err)
		}
	})
}

func TestManager_ManualRefreshPostponesExpiry(t *testing.T) {
	m := newManager(t, fakeExtender{newFake()})
	const ttl = 400 * time.Millisecond
	err := m.Try(t.Context(), "k", ttl, func(ctx context.Context, l *lock.Lock) error {
		end := time.Now().Add(2 * ttl)
		for time.Now().Before(end) {
			if ok, err := l.Refresh(ctx); err != nil || !ok {
				t.Errorf("Refresh = %v, %v", ok, err)
			}
			step := time.NewTimer(ttl / 4)
			select {
			case <-step.C:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Try with manual refreshes: %v", err)
	}
}

func TestManager_CallbackReleaseStopsRefresher(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		err := m.Try(t.Context(), "k", 90*time.Millisecond, func(ctx context.Context, l *lock.Lock) error {
			if err := l.Release(ctx); err != nil {
				return err
			}
			work := time.NewTimer(200 * time.Millisecond) // several refresh intervals
			defer work.Stop()
			select {
			case <-work.C:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, lock.WithRefresh())
		if err != nil {
			t.Fatalf("releasing inside the callback was reported as %v", err)
		}
	})
}

func TestManager_BackendDownUntilTTLIsLost(t *testing.T) {
	for _, b := range []struct {
		name string
		f    func() (*fakeDriver, drivers.Driver)
	}{
		{"extender", func() (*fakeDriver, drivers.Driver) { f := newFake(); return f, fakeExtender{f} }},
		{"fallback", func() (*fakeDriver, drivers.Driver) { f := newFake(); return f, f }},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f, d := b.f()
			m := newManager(t, d)
			// Long enough that a loaded machine runs a refresh before the
			// stop point: a loss with no refresh tried is ErrLostExpired.
			const ttl = 1200 * time.Millisecond
			var expires, told time.Time
			err := m.Try(t.Context(), "k", ttl, func(ctx context.Context, l *lock.Lock) error {
				expires = l.ExpiresAt()
				f.setDown(true)
				<-ctx.Done()
				told = time.Now()
				return ctx.Err()
			}, lock.WithRefresh())
			f.setDown(false)
			var lost *lock.LostError
			if !errors.As(err, &lost) || !errors.Is(err, lock.ErrUnavailable) || lost.Reason != lock.ErrLostUnreachable {
				t.Fatalf("Try = %v, want *LostError for an unreachable backend, caused by ErrUnavailable", err)
			}
			// Retried until the stop point: the TTL less the default safety margin.
			if stop := expires.Add(-ttl / 5); told.Before(stop) {
				t.Errorf("gave up %v before the stop point: refresh errors must be retried until then", stop.Sub(told))
			}
		})
	}
}

func TestManager_TransientBackendErrorIsSurvived(t *testing.T) {
	f := newFake()
	m := newManager(t, fakeExtender{f})
	const ttl = time.Second
	err := m.Try(t.Context(), "k", ttl, func(ctx context.Context, l *lock.Lock) error {
		f.setDown(true)
		before := f.faults.Calls(driverstest.OpExtend)
		poll.Until(t, 5*time.Second, "a failed refresh", func() bool { return f.faults.Calls(driverstest.OpExtend) > before })
		f.setDown(false)
		after := f.faults.Calls(driverstest.OpExtend)
		poll.Until(t, 5*time.Second, "a successful refresh", func() bool { return f.faults.Calls(driverstest.OpExtend) > after })
		return context.Cause(ctx)
	}, lock.WithRefreshEvery(40*time.Millisecond))
	if err != nil {
		t.Fatalf("a short outage lost the lock: %v", err)
	}
}

func TestManager_RefreshUsesExtenderOrFallback(t *testing.T) {
	withExt := fakeExtender{newFake()}
	plain := newFake()
	for _, c := range []struct {
		name     string
		f        *fakeDriver
		m        *lock.Manager
		extended bool
	}{
		{"extender", withExt.fakeDriver, newManager(t, withExt), true},
		{"fallback", plain, newManager(t, plain), false},
	} {
		l := c.m.Make("k", time.Minute)
		mustAcquire(t, l)
		acquires := c.f.faults.Calls(driverstest.OpAcquire)
		if ok, err := l.Refresh(t.Context()); err != nil || !ok {
			t.Fatalf("%s: Refresh = %v, %v", c.name, ok, err)
		}
		if got := c.f.faults.Calls(driverstest.OpExtend) == 1; got != c.extended {
			t.Errorf("%s: Extend used = %v", c.name, got)
		}
		if got := c.f.faults.Calls(driverstest.OpAcquire) > acquires; got == c.extended {
			t.Errorf("%s: Acquire used for the refresh = %v", c.name, got)
		}
	}
}

func TestManager_BlockUsesWaiterOrPolls(t *testing.T) {
	waiter := fakeWaiter{fakeExtender{newFake()}}
	plain := newFake()
	for _, c := range []struct {
		name   string
		f      *fakeDriver
		m      *lock.Manager
		pushed bool
	}{
		{"waiter", waiter.fakeDriver, newManager(t, waiter), true},
		{"polling", plain, newManager(t, plain), false},
	} {
		release := hold(t, c.m, "k", time.Minute)
		acquires := c.f.faults.Calls(driverstest.OpAcquire)
		got := make(chan error, 1)
		go func() {
			got <- c.m.Block(t.Context(), "k", time.Minute, noop, lock.WithTimeout(10*time.Second), lock.WithRetryDelay(2*time.Millisecond))
		}()
		if c.pushed {
			poll.Until(t, 5*time.Second, "the waiter to queue", func() bool { return c.f.faults.Calls(driverstest.OpAcquireWait) == 1 })
		} else {
			poll.Until(t, 5*time.Second, "several polls", func() bool { return c.f.faults.Calls(driverstest.OpAcquire) >= acquires+3 })
		}
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("%s: Block: %v", c.name, err)
		}
		if c.pushed && c.f.faults.Calls(driverstest.OpAcquireWait) != 1 {
			t.Errorf("%s: AcquireWait called %d times", c.name, c.f.faults.Calls(driverstest.OpAcquireWait))
		}
		if !c.pushed && c.f.faults.Calls(driverstest.OpAcquireWait) != 0 {
			t.Errorf("%s: AcquireWait used on a polling driver", c.name)
		}
	}
}

func TestManager_LongWaitReanchorsExpiry(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		const ttl = 200 * time.Millisecond
		release := hold(t, m, "k", time.Minute)
		got := make(chan error, 1)
		var expires, granted time.Time
		go func() {
			got <- m.Block(t.Context(), "k", ttl, func(ctx context.Context, l *lock.Lock) error {
				granted, expires = time.Now(), l.ExpiresAt()
				return nil
			}, lock.WithTimeout(10*time.Second), lock.WithRetryDelay(2*time.Millisecond))
		}()
		wait := time.NewTimer(ttl) // let the waiter wait longer than its TTL
		<-wait.C
		if err := release(); err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("Block: %v", err)
		}
		if expires.Before(granted) {
			t.Errorf("ExpiresAt %v is before the grant %v: the estimate must count from the grant, not the start of the wait", expires, granted)
		}
	})
}

func TestManager_ExpiryOfManyCallbacksEachAtItsOwnTTL(t *testing.T) {
	m := newManager(t, fakeExtender{newFake()})
	ttls := []time.Duration{250 * time.Millisecond, 40 * time.Millisecond, 120 * time.Millisecond, 80 * time.Millisecond}
	type result struct {
		i       int
		elapsed time.Duration
		err     error
	}
	results := make(chan result, len(ttls)*2)
	for i, ttl := range ttls {
		// A callback that outlives its TTL, and one that returns at once:
		// the first must be told at its own TTL, the second never.
		go func() {
			start := time.Now()
			err := m.Try(t.Context(), fmt.Sprint("slow", i), ttl, func(ctx context.Context, _ *lock.Lock) error {
				<-ctx.Done()
				return ctx.Err()
			})
			results <- result{i, time.Since(start), err}
		}()
		go func() {
			// Its own TTL too, but long enough that no scheduling delay of
			// a loaded machine outlasts it: the callback returns at once.
			err := m.Try(t.Context(), fmt.Sprint("quick", i), ttl+5*time.Second, noop)
			results <- result{-1, 0, err}
		}()
	}
	for range len(ttls) * 2 {
		r := <-results
		if r.i < 0 {
			if r.err != nil {
				t.Errorf("a callback that returned at once: %v", r.err)
			}
			continue
		}
		if !errors.Is(r.err, lock.ErrLostExpired) {
			t.Errorf("ttl %v: %v, want ErrLostExpired", ttls[r.i], r.err)
		}
		if stop := ttls[r.i] - ttls[r.i]/5; r.elapsed < stop { // the default safety margin
			t.Errorf("ttl %v: told after %v, before its stop point %v", ttls[r.i], r.elapsed, stop)
		}
	}
}

func TestManager_CallerDeadlineBeforeTTLIsTheCallerError(t *testing.T) {
	m := newManager(t, newFake())
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	err := m.Try(ctx, "k", time.Minute, func(ctx context.Context, _ *lock.Lock) error {
		<-ctx.Done()
		if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) {
			t.Errorf("cause %v, want the caller's deadline", cause)
		}
		return ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, lock.ErrLost) {
		t.Fatalf("Try = %v, want the caller's deadline, not a lost lock", err)
	}
	poll.Until(t, 2*time.Second, "the release after the caller's deadline", func() bool { return !exists(t, m, "k") })
}
