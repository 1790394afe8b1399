package redis_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// TestServerKilled_UnavailableThenRecovers kills the server under a driver
// and restarts it empty on the same port (no persistence): every call says
// Redis is unavailable, never "not acquired"; after the restart the same
// driver works again, the lost lock is not silently re-granted to its old
// owner by Extend, and the next fence is still larger than the old one.
func TestServerKilled_UnavailableThenRecovers(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	key, owner := newKey("killed"), token()
	f1 := mustAcquire(t, d, key, owner, time.Hour)

	srv.Kill()
	ctx := ctxWithin(t, 30*time.Second)
	_, ok, err := driverstest.Take(ctx, d, key, token(), time.Hour)
	if !errors.Is(err, drivers.ErrUnavailable) || ok {
		t.Fatalf("Acquire with Redis down = %v, %v; want ErrUnavailable", ok, err)
	}
	if errors.Is(err, drivers.ErrNotAcquired) {
		t.Fatalf("Acquire with Redis down matches ErrNotAcquired: %v", err)
	}
	if _, err := d.Release(ctx, key, owner); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("Release with Redis down: %v, want ErrUnavailable", err)
	}
	if _, err := d.Extend(ctx, key, owner, time.Hour); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("Extend with Redis down: %v, want ErrUnavailable", err)
	}
	if err := d.ForceRelease(ctx, key); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("ForceRelease with Redis down: %v, want ErrUnavailable", err)
	}
	if _, err := d.Exists(ctx, key); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("Exists with Redis down: %v, want ErrUnavailable", err)
	}
	if _, err := driverstest.TakeWait(ctx, d, key, token(), time.Hour, drivers.WaitOptions{}); !errors.Is(err, drivers.ErrUnavailable) {
		t.Fatalf("AcquireWait with Redis down: %v, want ErrUnavailable", err)
	}

	srv.Restart()
	var extended bool
	poll.Until(t, 10*time.Second, "driver reconnects", func() bool {
		extended, err = d.Extend(ctx, key, owner, time.Hour)
		return err == nil
	})
	if extended {
		t.Fatal("Extend re-created a lock that the restart lost")
	}
	f2 := mustAcquire(t, d, key, token(), time.Hour)
	if f2 <= f1 {
		t.Fatalf("fence after the restart = %d, want > %d (fences must not restart)", f2, f1)
	}
}

// TestServerRestart_WaiterGetsTheKey waits through an outage: the
// subscription reconnects by itself, and its confirmation makes the waiter
// look at the key again, which the restart freed.
func TestServerRestart_WaiterGetsTheKey(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := open(t, srv), open(t, srv, noPoll)
	key := newKey("restart-wait")
	mustAcquire(t, holder, key, token(), time.Hour)
	done := startWait(t, t.Context(), waiter, key, token(), time.Hour)

	srv.Kill()
	srv.Restart()
	r := receive(t, done, 20*time.Second)
	if r.err != nil {
		t.Fatalf("AcquireWait across a restart: %v", r.err)
	}
	held, err := holder.Exists(t.Context(), key)
	if err != nil || !held {
		t.Fatalf("Exists after the waiter's grant = %v, %v", held, err)
	}
}

// TestScriptFlush_FallsBackToEval empties the server's script cache: the
// next calls find their SHA unknown and send the script itself, whether
// they go straight to a connection or in a batch.
func TestScriptFlush_FallsBackToEval(t *testing.T) {
	for name, pipelineAt := range map[string]int{"direct": -1, "pipelined": 1} {
		t.Run(name, func(t *testing.T) { testScriptFlush(t, pipelineAt) })
	}
}

func testScriptFlush(t *testing.T, pipelineAt int) {
	srv := redistest.Start(t)
	d := open(t, srv, redis.WithPipelineAt(pipelineAt))
	key, owner := newKey("flush"), token()
	f1 := mustAcquire(t, d, key, owner, time.Hour)
	if ok, err := d.Release(t.Context(), key, owner); !ok || err != nil {
		t.Fatalf("Release: %v, %v", ok, err)
	}
	raw := srv.Client()
	if err := raw.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	f2 := mustAcquire(t, d, key, owner, time.Hour)
	if f2 <= f1 {
		t.Fatalf("fence %d after %d", f2, f1)
	}
	if ok, err := d.Extend(t.Context(), key, owner, time.Hour); !ok || err != nil {
		t.Fatalf("Extend after SCRIPT FLUSH: %v, %v", ok, err)
	}
	if ok, err := d.Release(t.Context(), key, owner); !ok || err != nil {
		t.Fatalf("Release after SCRIPT FLUSH: %v, %v", ok, err)
	}
	if err := d.ForceRelease(t.Context(), key); err != nil {
		t.Fatalf("ForceRelease after SCRIPT FLUSH: %v", err)
	}
}

// TestFenceSurvivesExpiry lets a lock expire; the fence counter stays and
// the next grant's fence is larger.
func TestFenceSurvivesExpiry(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	key := newKey("fence-expiry")
	f1 := mustAcquire(t, d, key, token(), 50*time.Millisecond)
	poll.Until(t, 5*time.Second, "lock expires", func() bool {
		held, err := d.Exists(t.Context(), key)
		return err == nil && !held
	})
	_, fenceKey, _ := redis.KeyNames(key)
	if n, err := srv.Client().Exists(t.Context(), fenceKey).Result(); err != nil || n != 1 {
		t.Fatalf("fence counter after expiry: exists=%d err=%v", n, err)
	}
	if f2 := mustAcquire(t, d, key, token(), time.Hour); f2 <= f1 {
		t.Fatalf("fence %d after %d", f2, f1)
	}
}

// Fence counters do not pile up: each expires FenceRetention after its
// key's last new grant, so Redis holds one per recently used key, not one
// per key ever locked; and a key whose counter is gone (expired, or lost)
// still gets a fence above every earlier one, from the server's clock.
func TestFenceCountersExpireAndFencesStillGrow(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	rc := srv.Client()
	last := map[string]uint64{}
	for i := range 50 {
		key := newKey(fmt.Sprintf("invoice:%d", i))
		owner := token()
		last[key] = mustAcquire(t, d, key, owner, time.Minute)
		if _, err := d.Release(t.Context(), key, owner); err != nil {
			t.Fatal(err)
		}
		_, fenceKey, _ := redis.KeyNames(key)
		ttl, err := rc.PTTL(t.Context(), fenceKey).Result()
		if err != nil || ttl <= 0 || ttl > redis.FenceRetention {
			t.Fatalf("fence counter of %q: PTTL %v, %v; want it to expire within %v", key, ttl, err, redis.FenceRetention)
		}
	}
	for key, f1 := range last {
		_, fenceKey, _ := redis.KeyNames(key)
		if err := rc.Del(t.Context(), fenceKey).Err(); err != nil { // as its expiry would
			t.Fatal(err)
		}
		if f2 := mustAcquire(t, d, key, token(), time.Minute); f2 <= f1 {
			t.Fatalf("%q: fence %d after %d, once its counter was gone", key, f2, f1)
		}
	}
}

func TestCancelledWaitDoesNotKeepTheKey(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	key := newKey("cancel")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := driverstest.TakeWait(ctx, d, key, token(), time.Hour, drivers.WaitOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireWait with a cancelled ctx: %v", err)
	}
	if held, err := d.Exists(t.Context(), key); err != nil || held {
		t.Fatalf("Exists after a cancelled wait = %v, %v", held, err)
	}
}
