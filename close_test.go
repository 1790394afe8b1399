package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock"
	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// Not parallel: goleak.VerifyNone must see this test's goroutines only.
func TestManager_CloseStopsEverything(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			d := b.open(t)
			m := lock.New(d)

			started := make(chan struct{}, 2)
			causes := make(chan error, 2)
			results := make(chan error, 2)
			for _, opts := range [][]lock.Option{{lock.WithRefreshEvery(5 * time.Millisecond)}, nil} {
				key := "refreshed"
				if opts == nil {
					key = "plain"
				}
				go func() {
					results <- m.Try(context.Background(), key, time.Minute, func(ctx context.Context, _ *lock.Lock) error {
						started <- struct{}{}
						<-ctx.Done()
						causes <- context.Cause(ctx)
						return ctx.Err()
					}, opts...)
				}()
			}
			<-started
			<-started
			if err := m.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for range 2 {
				if cause := <-causes; !errors.Is(cause, lock.ErrClosed) {
					t.Errorf("callback context cause = %v, want ErrClosed", cause)
				}
				if err := <-results; !errors.Is(err, lock.ErrClosed) {
					t.Errorf("Try running during Close = %v, want ErrClosed", err)
				}
			}
			if err := m.Close(); err != nil {
				t.Errorf("second Close = %v, want nil", err)
			}
			ctx := t.Context()
			l := m.Make("k", time.Minute)
			calls := map[string]error{
				"Try":          m.Try(ctx, "k", time.Minute, noop),
				"Block":        m.Block(ctx, "k", time.Minute, noop),
				"Lock.Block":   l.Block(ctx, time.Second),
				"Lock.Release": l.Release(ctx),
				"ForceRelease": l.ForceRelease(ctx),
			}
			_, calls["Acquire"] = l.Acquire(ctx)
			_, calls["Refresh"] = l.Refresh(ctx)
			_, calls["Exists"] = m.Exists(ctx, "k")
			for name, err := range calls {
				if !errors.Is(err, lock.ErrClosed) {
					t.Errorf("%s after Close = %v, want ErrClosed", name, err)
				}
			}
			if f, ok := d.(*fakeDriver); ok && !f.ref.Closed() {
				t.Error("Close did not close the driver")
			}
			goleak.VerifyNone(t, ignore)
		})
	}
}

// A Block waiting when its Manager closes returns ErrClosed at once, on
// every driver: also on one whose Close does not interrupt a wait in
// flight (here a handle on an engine shared with others, which stays
// open; the cluster client's HTTP wait is another).
func TestManager_CloseEndsBlockedWaits(t *testing.T) {
	t.Parallel()
	all := append(backends(), backend{"memory-shared-engine", true, func(t *testing.T) drivers.Driver {
		e, err := engine.New(engine.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return memory.Wrap(e)
	}})
	for _, b := range all {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := b.open(t)
			if _, ok, err := driverstest.Take(t.Context(), d, lock.DefaultPrefix+"busy", "someone-else", time.Minute); err != nil || !ok {
				t.Fatalf("holder's Acquire = %v, %v", ok, err)
			}
			m := lock.New(d)
			done := make(chan error, 1)
			go func() {
				done <- m.Block(t.Context(), "busy", time.Minute, noop,
					lock.WithTimeout(time.Minute), lock.WithRetryDelay(5*time.Millisecond))
			}()
			// Close must end the Block whether it is waiting yet or not; on
			// a shared engine, make sure it is queued, which is the case a
			// driver's own Close does not end.
			if w, ok := d.(*memory.Driver); ok && b.name == "memory-shared-engine" {
				queued := poll.Wait(5*time.Second, func() bool {
					info, _, err := w.Engine().Get(t.Context(), lock.DefaultPrefix+"busy")
					if err != nil {
						t.Fatal(err)
					}
					return info.Waiters == 1
				})
				if !queued {
					t.Fatal("Block never queued on the engine")
				}
			}
			select {
			case err := <-done:
				t.Fatalf("Block returned while the key was held: %v", err)
			default:
			}
			closed := time.Now()
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !errors.Is(err, lock.ErrClosed) {
					t.Fatalf("Block during Close = %v, want ErrClosed", err)
				}
				if took := time.Since(closed); took > 2*time.Second {
					t.Fatalf("Block returned %v after Close", took)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Block still waiting 10s after its Manager closed")
			}
		})
	}
}
