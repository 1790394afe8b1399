package driverstest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// refBackend is the simplest correct backend: a mutex and a map. It exists
// to show that the suite passes a correct driver.
type refBackend struct {
	mu    sync.Mutex
	locks map[string]refEntry
	fence uint64
}

type refEntry struct {
	owner    string
	fence    uint64
	deadline time.Time
}

type refDriver struct {
	b      *refBackend
	mu     sync.Mutex
	closed bool
}

func (d *refDriver) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return drivers.ErrClosed
	}
	return nil
}

func (b *refBackend) live(key string, now time.Time) (refEntry, bool) {
	e, ok := b.locks[key]
	if ok && !now.Before(e.deadline) {
		delete(b.locks, key)
		return refEntry{}, false
	}
	return e, ok
}

func (d *refDriver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	if err := d.check(ctx); err != nil {
		return 0, false, err
	}
	b := d.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	e, held := b.live(key, now)
	switch {
	case held && e.owner != owner:
		return 0, false, nil
	case held:
		e.deadline = now.Add(ttl)
	default:
		b.fence++
		e = refEntry{owner: owner, fence: b.fence, deadline: now.Add(ttl)}
	}
	b.locks[key] = e
	return e.fence, true, nil
}

func (d *refDriver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.check(ctx); err != nil {
		return false, err
	}
	b := d.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, held := b.live(key, time.Now()); held && e.owner == owner {
		delete(b.locks, key)
		return true, nil
	}
	return false, nil
}

func (d *refDriver) ForceRelease(ctx context.Context, key string) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	delete(d.b.locks, key)
	return nil
}

func (d *refDriver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.check(ctx); err != nil {
		return false, err
	}
	d.b.mu.Lock()
	defer d.b.mu.Unlock()
	_, held := d.b.live(key, time.Now())
	return held, nil
}

func (d *refDriver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.check(ctx); err != nil {
		return false, err
	}
	b := d.b
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	e, held := b.live(key, now)
	if !held || e.owner != owner {
		return false, nil
	}
	e.deadline = now.Add(ttl)
	b.locks[key] = e
	return true, nil
}

// AcquireWait polls: the reference is about correctness, not speed.
func (d *refDriver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration, opts drivers.WaitOptions) (uint64, error) {
	t := time.NewTicker(opts.RetryDelay)
	defer t.Stop()
	for {
		fence, ok, err := d.Acquire(ctx, key, owner, ttl)
		if err != nil || ok {
			return fence, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

func (d *refDriver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}

type refHarness struct{ b *refBackend }

func (h refHarness) NewDriver(context.Context) (drivers.Driver, error) {
	return &refDriver{b: h.b}, nil
}

func TestReferenceDriverPassesSuite(t *testing.T) {
	b := &refBackend{locks: map[string]refEntry{}}
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return refHarness{b: b} })
}
