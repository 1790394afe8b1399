package lock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// Timing bounds of the tests below. The lower bound is exact (a timer never
// fires early); the upper one leaves room for a loaded two-core machine
// running -race with parallel subtests, and is still half the default
// margin before the estimated expiry, which is when the callback used to
// be told.
const (
	marginTTL   = 3 * time.Second
	marginSlack = marginTTL / 10 // half the default margin, marginTTL/5
)

// toldAt runs a callback under key that waits for its context, and returns
// the lock's estimated expiry when the callback started, the moment it was
// told, and what Try returned. start runs first inside the callback.
func toldAt(t *testing.T, m *lock.Manager, key string, start func(), opts ...lock.Option) (expires, told time.Time, err error) {
	t.Helper()
	err = m.Try(t.Context(), key, marginTTL, func(ctx context.Context, l *lock.Lock) error {
		expires = l.ExpiresAt()
		if start != nil {
			start()
		}
		<-ctx.Done()
		told = time.Now()
		return ctx.Err()
	}, opts...)
	return expires, told, err
}

// checkToldAt asserts that the callback was told no earlier than stop and
// no later than stop plus the slack.
func checkToldAt(t *testing.T, expires, told, stop time.Time) {
	t.Helper()
	t.Logf("told %v before the estimated expiry (stop point %v before it)", expires.Sub(told), expires.Sub(stop))
	if told.Before(stop) {
		t.Errorf("told %v before the estimated expiry: earlier than the stop point %v before it",
			expires.Sub(told), expires.Sub(stop))
	}
	if told.After(stop.Add(marginSlack)) {
		t.Errorf("told %v before the estimated expiry, want about %v before it (slack %v)",
			expires.Sub(told), expires.Sub(stop), marginSlack)
	}
}

func TestManager_ExpiryToldSafetyMarginBeforeTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, _ backend, m *lock.Manager) {
		expires, told, _ := toldAt(t, m, "slow", nil)
		checkToldAt(t, expires, told, expires.Add(-marginTTL/5))
	})
}

func TestManager_SafetyMarginOption(t *testing.T) {
	for _, c := range []struct {
		name   string
		margin time.Duration
	}{
		{"zero: told at the estimated expiry", 0},
		{"half the ttl", marginTTL / 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := newManager(t, openMemory(t))
			expires, told, err := toldAt(t, m, "k", nil, lock.WithSafetyMargin(c.margin))
			if !errors.Is(err, lock.ErrLostExpired) {
				t.Fatalf("Try = %v, want ErrLostExpired", err)
			}
			checkToldAt(t, expires, told, expires.Add(-c.margin))
		})
	}
}

// Refreshes that keep failing: the holder is told at the stop point, not
// when the estimated expiry has passed.
func TestManager_FailingRefreshToldSafetyMarginBeforeTTL(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   []lock.Option
		margin time.Duration
	}{
		{"default margin", nil, marginTTL / 5},
		{"zero margin", []lock.Option{lock.WithSafetyMargin(0)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFake()
			m := newManager(t, fakeExtender{f})
			opts := append([]lock.Option{lock.WithRefresh()}, c.opts...)
			expires, told, err := toldAt(t, m, "k", func() { f.setDown(true) }, opts...)
			f.setDown(false)
			if !errors.Is(err, lock.ErrLostUnreachable) || !errors.Is(err, lock.ErrUnavailable) {
				t.Fatalf("Try = %v, want ErrLostUnreachable caused by ErrUnavailable", err)
			}
			checkToldAt(t, expires, told, expires.Add(-c.margin))
		})
	}
}

// A refresh that hangs in the driver does not hold the signal up: the
// holder is told at the stop point all the same, and the reason is the
// unreachable backend.
func TestManager_HangingRefreshToldAtStopPoint(t *testing.T) {
	drv, d := newDropper(fakeExtender{newFake()})
	m := newManager(t, drv)
	expires, told, err := toldAt(t, m, "k", func() { d.hang(true) }, lock.WithRefresh())
	d.hang(false)
	if !errors.Is(err, lock.ErrLostUnreachable) || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("Try = %v, want ErrLostUnreachable matching ErrUnavailable", err)
	}
	checkToldAt(t, expires, told, expires.Add(-marginTTL/5))
}

func TestManager_LostReasons(t *testing.T) {
	const ttl = 300 * time.Millisecond
	reasons := []lock.LostReason{lock.ErrLostExpired, lock.ErrLostTaken, lock.ErrLostUnreachable, lock.ErrLostClosed}
	for _, c := range []struct {
		want lock.LostReason
		opts []lock.Option
		// start runs inside the callback and makes the lock get lost.
		start func(t *testing.T, m *lock.Manager, f *fakeDriver)
	}{
		{lock.ErrLostExpired, nil, func(*testing.T, *lock.Manager, *fakeDriver) {}},
		{lock.ErrLostTaken, []lock.Option{lock.WithRefreshEvery(10 * time.Millisecond)},
			func(t *testing.T, m *lock.Manager, _ *fakeDriver) {
				if err := m.Make("k", ttl).ForceRelease(t.Context()); err != nil {
					t.Error(err)
				}
			}},
		{lock.ErrLostUnreachable, []lock.Option{lock.WithRefresh()},
			func(_ *testing.T, _ *lock.Manager, f *fakeDriver) { f.setDown(true) }},
		{lock.ErrLostClosed, []lock.Option{lock.WithRefresh()},
			func(t *testing.T, m *lock.Manager, _ *fakeDriver) {
				go func() { _ = m.Close() }() // Close does not wait for the callback
			}},
	} {
		t.Run(c.want.Error(), func(t *testing.T) {
			t.Parallel()
			f := newFake()
			m := newManager(t, fakeExtender{f})
			var cause error
			err := m.Try(t.Context(), "k", ttl, func(ctx context.Context, _ *lock.Lock) error {
				c.start(t, m, f)
				<-ctx.Done()
				cause = context.Cause(ctx)
				return ctx.Err()
			}, c.opts...)
			f.setDown(false)
			var lost *lock.LostError
			if !errors.As(err, &lost) {
				t.Fatalf("Try = %v, want a *LostError", err)
			}
			if error(lost) != cause {
				t.Errorf("the context's cause %v is not the error Try returned", cause)
			}
			if lost.Key != "k" || lost.Reason != c.want || !errors.Is(err, lock.ErrLost) {
				t.Errorf("LostError = %+v, want key k, reason %v, matching ErrLost", lost, c.want)
			}
			for _, r := range reasons {
				if got := errors.Is(err, r); got != (r == c.want) {
					t.Errorf("errors.Is(err, %v) = %v", r, got)
				}
			}
			if got := errors.Is(err, lock.ErrClosed); got != (c.want == lock.ErrLostClosed) {
				t.Errorf("errors.Is(err, ErrClosed) = %v", got)
			}
			unreachable := c.want == lock.ErrLostUnreachable
			if got := errors.Is(err, lock.ErrUnavailable); got != unreachable {
				t.Errorf("errors.Is(err, ErrUnavailable) = %v", got)
			}
			if cause := errors.Unwrap(lost); unreachable != (cause != nil && cause == lost.Cause && errors.Is(cause, lock.ErrUnavailable)) {
				t.Errorf("errors.Unwrap = %v, want the refresh error only when unreachable", cause)
			}
			if msg := err.Error(); !strings.Contains(msg, `"k"`) || !strings.Contains(msg, strings.TrimPrefix(c.want.Error(), "lock: lost: ")) {
				t.Errorf("Error() = %q: want the key and the reason", msg)
			}
		})
	}
}

// A refresh whose answer is lost may still have been applied: after the
// loss, the Manager releases the grant instead of leaving it to its TTL.
func TestManager_LossAfterRefreshErrorReleasesGrant(t *testing.T) {
	for _, b := range []struct {
		name string
		open func(t *testing.T) drivers.Driver
	}{
		{"fake-extender", func(*testing.T) drivers.Driver { return fakeExtender{newFake()} }},
		{"fake-fallback", func(*testing.T) drivers.Driver { return newFake() }},
		{"memory", func(t *testing.T) drivers.Driver { return openMemory(t) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			drv, d := newDropper(b.open(t))
			m := newManager(t, drv)
			const ttl = 600 * time.Millisecond
			err := m.Try(t.Context(), "k", ttl, func(ctx context.Context, l *lock.Lock) error {
				d.drop(true) // refreshes are applied, their answers lost
				<-ctx.Done()
				return ctx.Err()
			}, lock.WithRefresh())
			d.drop(false)
			if err == nil {
				t.Fatal("Try = nil, want the lock lost")
			}
			poll.Until(t, 2*time.Second, "the lost grant's release", func() bool { return d.freed() > 0 })
			if exists(t, m, "k") {
				t.Error("the key is still held after the release")
			}
		})
	}
}

// The background release after an outage neither delays the caller nor
// outlives Close. Not parallel: goleak.VerifyNone must see this test's
// goroutines only.
func TestManager_ReleaseAfterOutageEndsWithClose(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	drv, d := newDropper(fakeExtender{newFake()})
	m := lock.New(drv)
	const ttl = 300 * time.Millisecond
	var told time.Time
	err := m.Try(t.Context(), "k", ttl, func(ctx context.Context, _ *lock.Lock) error {
		d.hang(true) // the backend stops answering, also to the release
		<-ctx.Done()
		told = time.Now()
		return ctx.Err()
	}, lock.WithRefresh())
	if !errors.Is(err, lock.ErrLostUnreachable) {
		t.Fatalf("Try = %v, want ErrLostUnreachable", err)
	}
	if d := time.Since(told); d > time.Second {
		t.Errorf("Try returned %v after the callback: the release must not hold it up", d)
	}
	poll.Until(t, 5*time.Second, "the background release to reach the backend", func() bool { return d.releases() > 0 })
	closing := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(closing); d > 2*time.Second {
		t.Errorf("Close took %v: it must cancel the background release", d)
	}
	goleak.VerifyNone(t, ignore)
}

// errAnswerLost is the error of a call whose answer a dropper loses.
var errAnswerLost = drivers.Unavailable("dropper", context.DeadlineExceeded)

// dropper controls a driver wrapped by newDropper.
type dropper struct{ f *driverstest.Faults }

// newDropper wraps d in driverstest.Faulty, which keeps drivers.Extender
// if d has it.
func newDropper(d drivers.Driver) (drivers.Driver, dropper) {
	drv, f := driverstest.Faulty(d)
	return drv, dropper{f}
}

// drop makes Acquire and Extend be applied but fail as if their answer
// had been lost (a client-side timeout), or answer again.
func (d dropper) drop(on bool) {
	if on {
		d.f.Lose(errAnswerLost, driverstest.OpAcquire, driverstest.OpExtend)
	} else {
		d.f.Lose(nil, driverstest.OpAcquire, driverstest.OpExtend)
	}
}

// hang makes Extend and Release wait for their ctx to end, or answer
// again.
func (d dropper) hang(on bool) {
	if on {
		d.f.Delay(driverstest.Forever, driverstest.OpExtend, driverstest.OpRelease)
	} else {
		d.f.Delay(0, driverstest.OpExtend, driverstest.OpRelease)
	}
}

// freed is the number of releases that freed a grant; releases, of every
// release.
func (d dropper) freed() int64    { return d.f.Succeeded(driverstest.OpRelease) }
func (d dropper) releases() int64 { return d.f.Calls(driverstest.OpRelease) }
