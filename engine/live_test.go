package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
)

var epoch = time.Unix(1_700_000_000, 0)

// newLive starts a live engine on a fake clock and closes it at the end.
func newLive(t *testing.T, cfg Config) (*Engine, *FakeClock) {
	t.Helper()
	clock := NewFakeClock(epoch)
	cfg.Clock = clock
	e, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e, clock
}

// mustAcquireOne has owner take key for ttl, or fails the test.
func mustAcquireOne(t *testing.T, e *Engine, key, owner string, ttl time.Duration) {
	t.Helper()
	if _, ok, err := e.acquireOne(t.Context(), key, owner, ttl); !ok || err != nil {
		t.Fatalf("Acquire %s by %s: %v %v", key, owner, ok, err)
	}
}

// waiters returns the number of owners queued for key.
func waiters(t *testing.T, e *Engine, key string) int {
	t.Helper()
	info, ok, err := e.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !ok {
		return 0
	}
	return info.Waiters
}

type waitResult struct {
	owner string
	grant Grant
	err   error
}

// startWaiter runs AcquireWait in a goroutine and waits until it is queued.
func startWaiter(t *testing.T, ctx context.Context, e *Engine, key, owner string, ttl time.Duration, out chan<- waitResult) {
	t.Helper()
	before := waiters(t, e, key)
	go func() {
		g, err := e.acquireOneWait(ctx, key, owner, ttl)
		out <- waitResult{owner: owner, grant: g, err: err}
	}()
	poll.Until(t, 5*time.Second, owner+" queued", func() bool { return waiters(t, e, key) == before+1 })
}

func TestEngine_AcquireReleaseRefresh(t *testing.T) {
	e, clock := newLive(t, Config{})
	ctx := t.Context()
	g, ok, err := e.acquireOne(ctx, "k", "a", time.Second)
	if err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
	if g.Fence != 1 || g.Owner != "a" || g.Key != "k" || g.Deadline != epoch.Add(time.Second).UnixNano() {
		t.Fatalf("grant = %+v", g)
	}
	g2, ok, err := e.acquireOne(ctx, "k", "b", time.Second)
	if err != nil || ok {
		t.Fatalf("Acquire by b: ok=%v err=%v", ok, err)
	}
	if g2.Owner != "a" || g2.Fence != 1 {
		t.Fatalf("holder grant = %+v", g2)
	}
	clock.Advance(500 * time.Millisecond)
	g3, ok, err := e.acquireOne(ctx, "k", "a", time.Second)
	if err != nil || !ok || g3.Fence != 1 || g3.Deadline != epoch.Add(1500*time.Millisecond).UnixNano() {
		t.Fatalf("refresh = %+v %v %v", g3, ok, err)
	}
	if ok, err := e.Release(ctx, "k", "b"); err != nil || ok {
		t.Fatalf("foreign release = %v %v", ok, err)
	}
	if ok, err := e.Release(ctx, "k", "a"); err != nil || !ok {
		t.Fatalf("release = %v %v", ok, err)
	}
	if ok, err := e.Release(ctx, "k", "a"); err != nil || ok {
		t.Fatalf("second release = %v %v", ok, err)
	}
	if n := e.Len(); n != 0 {
		t.Fatalf("Len = %d", n)
	}
	g4, ok, err := e.acquireOne(ctx, "k", "b", time.Second)
	if err != nil || !ok || g4.Fence != 2 {
		t.Fatalf("re-acquire = %+v %v %v", g4, ok, err)
	}
}

func TestEngine_BlockedAcquireGetsLockOnReleaseFIFO(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "k", "holder", time.Minute)
	out := make(chan waitResult, 3)
	for i := range 3 {
		startWaiter(t, ctx, e, "k", fmt.Sprintf("w%d", i), time.Minute, out)
	}
	prev := "holder"
	var lastFence uint64 = 1
	for i := range 3 {
		if ok, err := e.Release(ctx, "k", prev); !ok || err != nil {
			t.Fatalf("Release by %s: %v %v", prev, ok, err)
		}
		r := <-out
		want := fmt.Sprintf("w%d", i)
		if r.err != nil || r.owner != want || r.grant.Owner != want {
			t.Fatalf("hand-off %d went to %+v, want %s", i, r, want)
		}
		if r.grant.Fence <= lastFence {
			t.Fatalf("fence %d not above %d", r.grant.Fence, lastFence)
		}
		lastFence = r.grant.Fence
		prev = want
	}
}

func TestEngine_ExpiryHandsOffWithFakeClock(t *testing.T) {
	e, clock := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "k", "holder", time.Second)
	out := make(chan waitResult, 1)
	startWaiter(t, ctx, e, "k", "w", 2*time.Second, out)
	clock.Advance(999 * time.Millisecond)
	select {
	case r := <-out:
		t.Fatalf("handed off before the deadline: %+v", r)
	default:
	}
	clock.Advance(time.Millisecond)
	r := <-out
	if r.err != nil || r.grant.Owner != "w" || r.grant.Fence != 2 {
		t.Fatalf("hand-off = %+v", r)
	}
	if want := epoch.Add(3 * time.Second).UnixNano(); r.grant.Deadline != want {
		t.Fatalf("deadline = %d, want %d", r.grant.Deadline, want)
	}
	// The new holder expires in turn and the key is purged.
	clock.Advance(2 * time.Second)
	poll.Until(t, 5*time.Second, "purge", func() bool { return e.Len() == 0 })
}

func TestEngine_CancelledWaiterIsWithdrawn(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "k", "holder", time.Minute)
	wctx, cancel := context.WithCancel(ctx)
	out := make(chan waitResult, 1)
	startWaiter(t, wctx, e, "k", "w", time.Minute, out)
	cancel()
	r := <-out
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v", r.err)
	}
	poll.Until(t, 5*time.Second, "withdrawal", func() bool { return waiters(t, e, "k") == 0 })
	if ok, err := e.Release(ctx, "k", "holder"); !ok || err != nil {
		t.Fatalf("Release: %v %v", ok, err)
	}
	if _, ok, _ := e.Get(ctx, "k"); ok {
		t.Fatal("the withdrawn waiter was granted the key")
	}
}

func TestEngine_CloseAnswersWaitersAndCalls(t *testing.T) {
	clock := NewFakeClock(epoch)
	e, err := New(Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	mustAcquireOne(t, e, "k", "holder", time.Minute)
	out := make(chan waitResult, 1)
	startWaiter(t, ctx, e, "k", "w", time.Minute, out)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if r := <-out; !errors.Is(r.err, drivers.ErrClosed) {
		t.Fatalf("waiter err = %v", r.err)
	}
	if _, _, err := e.acquireOne(ctx, "x", "a", time.Second); !errors.Is(err, drivers.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
}
