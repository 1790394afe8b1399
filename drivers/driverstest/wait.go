package driverstest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

func waiter(t *testing.T, d drivers.Driver) drivers.Driver {
	t.Helper()
	if !d.Capabilities().Wait {
		t.Skip("driver does not declare drivers.Capabilities.Wait; the Manager falls back to polling")
	}
	return d
}

var waitOpts = drivers.WaitOptions{RetryDelay: 20 * time.Millisecond}

type waitResult struct {
	fence uint64
	err   error
	at    time.Time
}

func startWait(ctx context.Context, w drivers.Driver, key, owner string, ttl time.Duration) <-chan waitResult {
	done := make(chan waitResult, 1)
	go func() {
		f, err := TakeWait(ctx, w, key, owner, ttl, waitOpts)
		done <- waitResult{fence: f, err: err, at: time.Now()}
	}()
	return done
}

// stillWaiting checks that a waiter has not returned while the key is held.
func stillWaiting(t *testing.T, done <-chan waitResult) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("AcquireWait returned while the key was held: fence=%d err=%v", r.fence, r.err)
	case <-time.After(150 * time.Millisecond):
	}
}

func testWaitHandOffOnRelease(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	wb := waiter(t, b)
	key, ownerA, ownerB := s.key("handoff"), token(), token()
	f1 := mustAcquire(t, a, key, ownerA, longTTL)
	done := startWait(ctxFor(t), wb, key, ownerB, longTTL)
	stillWaiting(t, done)
	released := time.Now()
	mustRelease(t, a, key, ownerA, true)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("AcquireWait: %v", r.err)
		}
		if f1 != 0 && r.fence <= f1 {
			t.Fatalf("hand-off fence = %d, want > %d", r.fence, f1)
		}
		t.Logf("release -> waiter granted in %v", r.at.Sub(released))
	case <-time.After(10 * time.Second):
		t.Fatal("waiter not granted within 10s of the release")
	}
	mustNotAcquire(t, a, key, ownerA, longTTL)
	mustRelease(t, a, key, ownerB, true)
}

func testWaitHandOffOnExpiry(t *testing.T, s *suite) {
	a, b := s.driver(), s.driver()
	wb := waiter(t, b)
	key, ownerA, ownerB := s.key("expiry-handoff"), token(), token()
	sent := time.Now()
	f1 := mustAcquire(t, a, key, ownerA, ttlShort)
	done := startWait(ctxFor(t), wb, key, ownerB, longTTL)
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("AcquireWait: %v", r.err)
		}
		if held := r.at.Sub(sent); held < ttlShort {
			t.Fatalf("waiter granted %v after the first acquire, before its TTL of %v", held, ttlShort)
		}
		if f1 != 0 && r.fence <= f1 {
			t.Fatalf("fence after expiry hand-off = %d, want > %d", r.fence, f1)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("waiter not granted within 15s of an expiring lock")
	}
	mustRelease(t, a, key, ownerA, false)
	mustRelease(t, b, key, ownerB, true)
}

func testWaitDeadline(t *testing.T, s *suite) {
	a, b, c := s.driver(), s.driver(), s.driver()
	wb := waiter(t, b)
	key, ownerA := s.key("wait-deadline"), token()
	mustAcquire(t, a, key, ownerA, longTTL)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := TakeWait(ctx, wb, key, token(), longTTL, waitOpts)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireWait past its deadline: err = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("AcquireWait returned %v after a 300ms deadline", took)
	}
	mustRelease(t, a, key, ownerA, true)
	// The abandoned waiter must not be handed the key.
	ownerC := token()
	eventually(t, 10*time.Second, "key free after the abandoned wait", func() bool {
		_, ok, err := Take(ctxFor(t), c, key, ownerC, longTTL)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		return ok
	})
	mustRelease(t, c, key, ownerC, true)
}
