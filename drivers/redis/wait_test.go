package redis_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// noPoll makes the fallback poll too slow to matter within a test, so a
// waiter that gets the key in time was woken by a message or by the TTL
// learned from its failed attempt.
var noPoll = redis.WithPollInterval(time.Hour)

func TestAcquireWait_WokenByReleaseMessage(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := open(t, srv), open(t, srv, noPoll)
	key, a, b := newKey("release"), token(), token()

	f1 := mustAcquire(t, holder, key, a, time.Hour)
	done := startWait(t, t.Context(), waiter, key, b, time.Hour)
	released := time.Now()
	if ok, err := holder.Release(t.Context(), key, a); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	r := receive(t, done, 5*time.Second)
	if r.err != nil {
		t.Fatalf("AcquireWait: %v", r.err)
	}
	if r.fence <= f1 {
		t.Fatalf("fence %d after %d", r.fence, f1)
	}
	t.Logf("release -> grant in another driver: %v", r.at.Sub(released))
}

func TestAcquireWait_WokenByForceRelease(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := open(t, srv), open(t, srv, noPoll)
	key := newKey("force")

	mustAcquire(t, holder, key, token(), time.Hour)
	done := startWait(t, t.Context(), waiter, key, token(), time.Hour)
	if err := holder.ForceRelease(t.Context(), key); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	if r := receive(t, done, 5*time.Second); r.err != nil {
		t.Fatalf("AcquireWait: %v", r.err)
	}
}

func TestAcquireWait_WokenWhenTheHolderExpires(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := open(t, srv), open(t, srv, noPoll)
	key := newKey("expiry")
	const ttl = 500 * time.Millisecond

	acquired := time.Now()
	mustAcquire(t, holder, key, token(), ttl)
	done := startWait(t, t.Context(), waiter, key, token(), time.Hour)
	r := receive(t, done, 5*time.Second)
	if r.err != nil {
		t.Fatalf("AcquireWait: %v", r.err)
	}
	if took := r.at.Sub(acquired); took < ttl {
		t.Fatalf("granted %v after the holder's acquire, before its TTL of %v", took, ttl)
	}
}

// A release that publishes nothing (the key deleted by hand) stands for a
// lost message: the fallback poll still finds the key free.
func TestAcquireWait_FallbackPollCoversALostMessage(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := open(t, srv), open(t, srv, redis.WithPollInterval(200*time.Millisecond))
	key := newKey("lost-message")

	mustAcquire(t, holder, key, token(), time.Hour)
	done := startWait(t, t.Context(), waiter, key, token(), time.Hour)
	lockKey, _, _ := redis.KeyNames(key)
	if err := srv.Client().Del(t.Context(), lockKey).Err(); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, done, 5*time.Second); r.err != nil {
		t.Fatalf("AcquireWait: %v", r.err)
	}
}

func TestAcquireWait_OneSubscriptionPerDriver(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := open(t, srv), open(t, srv)
	keys := []string{newKey("sub-a"), newKey("sub-b"), newKey("sub-c")}
	owners := map[string]string{}
	for _, k := range keys {
		owners[k] = token()
		mustAcquire(t, holder, k, owners[k], time.Hour)
	}
	var results []<-chan waitResult
	var waiterOwners []string
	for _, k := range keys {
		for i := 0; i < 4; i++ {
			o := token()
			waiterOwners = append(waiterOwners, o)
			results = append(results, startWait(t, t.Context(), waiter, k, o, time.Hour))
		}
	}

	raw := srv.Client()
	clients, err := raw.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := countPubSubClients(clients); n != 1 {
		t.Fatalf("%d pub/sub connections for 12 waiters on 3 keys, want 1:\n%s", n, clients)
	}
	for _, k := range keys {
		_, _, ch := redis.KeyNames(k)
		subs, err := raw.PubSubNumSub(t.Context(), ch).Result()
		if err != nil {
			t.Fatal(err)
		}
		if subs[ch] != 1 {
			t.Fatalf("channel %s has %d subscribers, want 1", ch, subs[ch])
		}
	}
	if n := redis.SubscribedChannels(waiter); n != len(keys) {
		t.Fatalf("driver keeps %d channels, want %d", n, len(keys))
	}

	// Every waiter gets its key in turn: each one that is granted releases.
	for _, k := range keys {
		if ok, err := holder.Release(t.Context(), k, owners[k]); !ok || err != nil {
			t.Fatalf("Release: %v, %v", ok, err)
		}
	}
	var wg sync.WaitGroup
	for i, done := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case r := <-done:
				if r.err != nil {
					t.Errorf("AcquireWait: %v", r.err)
					return
				}
				k := keys[i/4]
				if ok, err := waiter.Release(context.Background(), k, waiterOwners[i]); !ok || err != nil {
					t.Errorf("Release by waiter %d: %v, %v", i, ok, err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("waiter %d not granted within 10s", i)
			}
		}()
	}
	wg.Wait()
}

func countPubSubClients(list string) int {
	n := 0
	for _, line := range splitLines(list) {
		if containsField(line, "sub=") && !containsField(line, "sub=0") {
			n++
		}
	}
	return n
}

// TestAcquireWait_LocalWaitersInArrivalOrder queues five waiters in one
// driver, one after the other, and checks that each release goes to the
// longest waiting one (the local queue, and the direct hand-off from a
// release to the next local waiter).
func TestAcquireWait_LocalWaitersInArrivalOrder(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv, noPoll)
	key, first := newKey("fifo"), token()
	mustAcquire(t, d, key, first, time.Hour)

	const n = 5
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := 0; i < n; i++ {
		owner := token()
		before := redis.Waiters(d, key)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := driverstest.TakeWait(t.Context(), d, key, owner, time.Hour, drivers.WaitOptions{}); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if ok, err := d.Release(context.Background(), key, owner); !ok || err != nil {
				t.Errorf("waiter %d release: %v, %v", i, ok, err)
			}
		}()
		poll.Until(t, 10*time.Second, "waiter queued", func() bool { return redis.Waiters(d, key) > before })
	}
	if ok, err := d.Release(t.Context(), key, first); !ok || err != nil {
		t.Fatalf("Release: %v, %v", ok, err)
	}
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("grant order %v, want arrival order", order)
		}
	}
	if len(order) != n {
		t.Fatalf("%d of %d waiters granted", len(order), n)
	}
}

// TestAcquireWait_OtherProcessesAreNotShutOut keeps one driver's waiters
// handing the key to each other, and checks that a waiter of a second
// driver (another process) still gets it soon.
func TestAcquireWait_OtherProcessesAreNotShutOut(t *testing.T) {
	srv := redistest.Start(t)
	busy, other := open(t, srv), open(t, srv, noPoll)
	key := newKey("no-starvation")

	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				owner := token()
				if _, err := driverstest.TakeWait(ctx, busy, key, owner, time.Hour, drivers.WaitOptions{}); err != nil {
					return
				}
				if _, err := busy.Release(context.Background(), key, owner); err != nil {
					t.Errorf("Release: %v", err)
					return
				}
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	poll.Until(t, 10*time.Second, "busy driver has waiters", func() bool { return redis.Waiters(busy, key) > 0 })

	start := time.Now()
	fence, err := driverstest.TakeWait(ctxWithin(t, 5*time.Second), other, key, token(), time.Hour, drivers.WaitOptions{})
	if err != nil {
		t.Fatalf("waiter of another driver: %v after %v", err, time.Since(start))
	}
	t.Logf("other driver granted fence %d after %v", fence, time.Since(start))
	_ = other.ForceRelease(context.Background(), key)
}

func TestAcquireWait_DriverClosedWhileWaiting(t *testing.T) {
	srv := redistest.Start(t)
	holder := open(t, srv)
	waiter, err := redis.Open(t.Context(), redis.Config{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	key := newKey("closed")
	mustAcquire(t, holder, key, token(), time.Hour)
	done := startWait(t, t.Context(), waiter, key, token(), time.Hour)
	if err := waiter.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if r := receive(t, done, 5*time.Second); !errors.Is(r.err, drivers.ErrClosed) {
		t.Fatalf("AcquireWait after Close: %v, want ErrClosed", r.err)
	}
}

func ctxWithin(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
