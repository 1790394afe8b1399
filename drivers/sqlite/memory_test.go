package sqlite_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/sqlite"
)

// memoryHarness shares one ":memory:" driver between handles: a private
// in-memory database cannot be opened twice, so each handle is a view that
// can be closed on its own. The database is closed with the test.
type memoryHarness struct {
	once sync.Once
	d    *sqlite.Driver
	err  error
	t    *testing.T
}

func (h *memoryHarness) NewDriver(ctx context.Context) (drivers.Driver, error) {
	h.once.Do(func() {
		h.d, h.err = sqlite.Open(ctx, sqlite.Config{Path: sqlite.MemoryPath})
		if h.err == nil {
			h.t.Cleanup(func() { _ = h.d.Close() })
		}
	})
	if h.err != nil {
		return nil, h.err
	}
	return &view{d: h.d}, nil
}

// view is one handle on a shared driver.
type view struct {
	d      *sqlite.Driver
	closed atomic.Bool
}

func (v *view) check() error {
	if v.closed.Load() {
		return drivers.ErrClosed
	}
	return nil
}

func (v *view) Acquire(ctx context.Context, r drivers.Request) (drivers.Grant, error) {
	if err := v.check(); err != nil {
		return drivers.Grant{}, err
	}
	if r.Claim != (drivers.Claim{}) {
		return drivers.Grant{}, drivers.ErrUnsupported
	}
	return v.d.Acquire(ctx, r)
}

func (v *view) Capabilities() drivers.Capabilities {
	return drivers.Capabilities{Wait: true, Sets: true}
}

func (v *view) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := v.check(); err != nil {
		return false, err
	}
	return v.d.Release(ctx, key, owner)
}

func (v *view) ForceRelease(ctx context.Context, key string) error {
	if err := v.check(); err != nil {
		return err
	}
	return v.d.ForceRelease(ctx, key)
}

func (v *view) Exists(ctx context.Context, key string) (bool, error) {
	if err := v.check(); err != nil {
		return false, err
	}
	return v.d.Exists(ctx, key)
}

func (v *view) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := v.check(); err != nil {
		return false, err
	}
	return v.d.Extend(ctx, key, owner, ttl)
}

func (v *view) Close() error { v.closed.Store(true); return nil }

func TestConformance_Memory(t *testing.T) {
	driverstest.Run(t, func(t *testing.T) driverstest.Harness { return &memoryHarness{t: t} })
}

func TestMemory_PrivateToTheHandle(t *testing.T) {
	a := openT(t, sqlite.Config{Path: sqlite.MemoryPath})
	b := openT(t, sqlite.Config{Path: sqlite.MemoryPath})
	if _, ok, err := driverstest.Take(t.Context(), a, "k", "owner-a", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire on a = %v, %v", ok, err)
	}
	if _, ok, err := driverstest.Take(t.Context(), b, "k", "owner-b", time.Minute); err != nil || !ok {
		t.Fatalf("Acquire on b = %v, %v; a second :memory: handle must not see a's locks", ok, err)
	}
}

func TestMemory_ClosedHandle(t *testing.T) {
	d, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlite.MemoryPath})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := driverstest.Take(t.Context(), d, "k", "o", time.Minute); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Acquire after Close = %v, want ErrClosed", err)
	}
}
