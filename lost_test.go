package lock_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

// Timing bounds of the tests below. The lower bound is exact (a timer never
// fires early); the upper one leaves room for a loaded machine, and is still
// well before the estimated expiry, which is when the callback used to be
// told.
const (
	marginTTL   = 1500 * time.Millisecond
	marginSlack = 150 * time.Millisecond // < the default margin, marginTTL/5
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

func TestManager_FailingRefreshToldSafetyMarginBeforeTTL(t *testing.T) {
	f := newFake()
	m := newManager(t, fakeExtender{f})
	expires, told, _ := toldAt(t, m, "k", func() { f.failing.Store(true) }, lock.WithRefresh())
	f.failing.Store(false)
	checkToldAt(t, expires, told, expires.Add(-marginTTL/5))
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
				d.drop.Store(true) // refreshes are applied, their answers lost
				<-ctx.Done()
				return ctx.Err()
			}, lock.WithRefresh())
			d.drop.Store(false)
			if err == nil {
				t.Fatal("Try = nil, want the lock lost")
			}
			waitFor(t, "the lost grant's release", 2*time.Second, func() bool { return d.freed.Load() > 0 })
			if exists(t, m, "k") {
				t.Error("the key is still held after the release")
			}
		})
	}
}

// dropper wraps a driver: while drop is set, Acquire and Extend are applied
// but fail as if their answer had been lost (a client-side timeout). It
// counts the releases that freed a grant.
type dropper struct {
	drivers.Driver
	drop  atomic.Bool
	freed atomic.Int64
}

// dropperExt is a dropper over a driver that implements drivers.Extender.
type dropperExt struct{ *dropper }

var errAnswerLost = drivers.Unavailable("dropper", context.DeadlineExceeded)

// newDropper wraps d, keeping drivers.Extender if d has it.
func newDropper(d drivers.Driver) (drivers.Driver, *dropper) {
	dr := &dropper{Driver: d}
	if _, ok := d.(drivers.Extender); ok {
		return dropperExt{dr}, dr
	}
	return dr, dr
}

func (d *dropper) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	fence, ok, err := d.Driver.Acquire(ctx, key, owner, ttl)
	if err == nil && d.drop.Load() {
		return 0, false, errAnswerLost
	}
	return fence, ok, err
}

func (d *dropper) Release(ctx context.Context, key, owner string) (bool, error) {
	ok, err := d.Driver.Release(ctx, key, owner)
	if ok {
		d.freed.Add(1)
	}
	return ok, err
}

func (d dropperExt) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	ok, err := d.Driver.(drivers.Extender).Extend(ctx, key, owner, ttl)
	if err == nil && d.drop.Load() {
		return false, errAnswerLost
	}
	return ok, err
}
