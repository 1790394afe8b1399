package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock"
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
			if f, ok := d.(*fakeDriver); ok && !f.isClosed() {
				t.Error("Close did not close the driver")
			}
			goleak.VerifyNone(t, ignore)
		})
	}
}
