package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
)

func TestShared_BadClaimsAreInvalid(t *testing.T) {
	m := newManager(t, openMemory(t))
	noop := func(context.Context, *lock.Lock) error { return nil }
	for name, err := range map[string]error{
		"Semaphore(0)":               m.Try(t.Context(), "k", time.Second, noop, lock.Semaphore(0)),
		"Semaphore(-1) in Make":      m.Make("k", time.Second, lock.Semaphore(-1)).Release(t.Context()),
		"Semaphore above MaxHolders": m.Try(t.Context(), "k", time.Second, noop, lock.Semaphore(drivers.MaxHolders+1)),
		"Make with WithTimeout":      m.Make("k", time.Second, lock.WithTimeout(time.Second)).Release(t.Context()),
		"Lock.Block with a kind":     m.Make("k", time.Second).Block(t.Context(), time.Second, lock.Read()),
	} {
		var inv *lock.InvalidError
		if !errors.As(err, &inv) || !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: %v, want an *InvalidError", name, err)
		}
	}
}

func TestShared_DriverWithoutThemIsUnsupported(t *testing.T) {
	m := newManager(t, fakeExtender{newFake()})
	err := m.Try(t.Context(), "k", time.Second, func(context.Context, *lock.Lock) error { return nil }, lock.Write())
	if !errors.Is(err, lock.ErrUnsupported) {
		t.Fatalf("Try(Write) on a driver without drivers.Capabilities.Shared = %v, want ErrUnsupported", err)
	}
	if err := m.Make("k", time.Second, lock.Semaphore(2)).Release(t.Context()); !errors.Is(err, lock.ErrUnsupported) {
		t.Fatalf("Make(Semaphore) on a driver without drivers.Capabilities.Shared: %v, want ErrUnsupported", err)
	}
}

// Block with a semaphore runs at most n callbacks at once, and every
// caller gets its turn.
func TestShared_BlockSemaphoreBoundsConcurrency(t *testing.T) {
	m := newManager(t, openMemory(t))
	const n, callers = 2, 6
	var inside, most, done atomic.Int32
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := m.Block(t.Context(), "pool", 10*time.Second, func(ctx context.Context, l *lock.Lock) error {
				now := inside.Add(1)
				for cur := most.Load(); now > cur && !most.CompareAndSwap(cur, now); cur = most.Load() {
				}
				time.Sleep(5 * time.Millisecond) // hold the slot a moment, so callers overlap
				inside.Add(-1)
				done.Add(1)
				return nil
			}, lock.Semaphore(n))
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most.Load() > n || most.Load() == 0 || done.Load() != callers {
		t.Fatalf("at most %d inside at once (limit %d), %d of %d done", most.Load(), n, done.Load(), callers)
	}
}

// Each holder of a shared key is told of its own loss.
func TestShared_EveryHolderHearsItsLoss(t *testing.T) {
	m := newManager(t, openMemory(t))
	const ttl = time.Second
	held := make(chan struct{}, 2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			errs <- m.Try(t.Context(), "catalog", ttl, func(ctx context.Context, _ *lock.Lock) error {
				held <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			}, lock.Read(), lock.WithRefreshEvery(10*time.Millisecond))
		}()
	}
	<-held
	<-held
	if err := m.Make("catalog", ttl, lock.Write()).ForceRelease(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		var lost *lock.LostError
		if err := <-errs; !errors.As(err, &lost) || lost.Reason != lock.ErrLostTaken {
			t.Fatalf("a reader whose grant was force-released got %v, want ErrLostTaken", err)
		}
	}
}
