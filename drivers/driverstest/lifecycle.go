package driverstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

func testCancelledContext(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, owner := s.key("cancelled"), token()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Take(ctx, a, key, owner, longTTL); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if _, err := a.Release(ctx, key, owner); !errors.Is(err, context.Canceled) {
		t.Fatalf("Release with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if err := a.ForceRelease(ctx, key); !errors.Is(err, context.Canceled) {
		t.Fatalf("ForceRelease with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if _, err := a.Exists(ctx, key); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exists with a cancelled ctx: err = %v, want context.Canceled", err)
	}
	if x, ok := a.(drivers.Extender); ok {
		if _, err := x.Extend(ctx, key, owner, longTTL); !errors.Is(err, context.Canceled) {
			t.Fatalf("Extend with a cancelled ctx: err = %v, want context.Canceled", err)
		}
	}
	if a.Capabilities().Wait {
		if _, err := TakeWait(ctx, a, key, owner, longTTL, waitOpts); !errors.Is(err, context.Canceled) {
			t.Fatalf("AcquireWait with a cancelled ctx: err = %v, want context.Canceled", err)
		}
	}
	mustExist(t, b, key, false)
	// The handle still works after a cancelled call.
	mustAcquire(t, a, key, owner, longTTL)
	mustRelease(t, a, key, owner, true)
}

func testClose(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	key, owner := s.key("close"), token()
	mustAcquire(t, b, key, owner, longTTL)
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := ctxFor(t)
	if _, _, err := Take(ctx, a, key, token(), longTTL); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Acquire after Close: err = %v, want ErrClosed", err)
	}
	if _, err := a.Release(ctx, key, owner); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Release after Close: err = %v, want ErrClosed", err)
	}
	if err := a.ForceRelease(ctx, key); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("ForceRelease after Close: err = %v, want ErrClosed", err)
	}
	if _, err := a.Exists(ctx, key); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Exists after Close: err = %v, want ErrClosed", err)
	}
	if a.Capabilities().Wait {
		if _, err := TakeWait(ctx, a, key, token(), longTTL, drivers.WaitOptions{RetryDelay: 10 * time.Millisecond}); !errors.Is(err, drivers.ErrClosed) {
			t.Fatalf("AcquireWait after Close: err = %v, want ErrClosed", err)
		}
	}
	// Closing one handle leaves the backend and the other handle alone.
	mustExist(t, b, key, true)
	mustRelease(t, b, key, owner, true)
}
