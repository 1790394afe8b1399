package redis_test

import (
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/driverstest"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// A semaphore's queue outlives grants that lapse with nobody releasing
// them (Redis deletes the grants' hash, claim and all; here by hand, at
// once): its waiters are let in under the semaphore's rules, both at
// once, not as a mutex's one, nor refused as the wrong claim.
func TestQueue_KeepsTheClaimWhenTheGrantsLapse(t *testing.T) {
	srv := redistest.Start(t)
	holder, waiter := open(t, srv), open(t, srv, noPoll)
	key := newKey("sem-lapse")
	sem := drivers.Claim{Kind: drivers.Semaphore, Limit: 2}
	for range 2 {
		if _, ok, _, err := driverstest.TakeShared(t.Context(), holder, key, token(), time.Minute, sem); !ok || err != nil {
			t.Fatalf("TakeShared = %v, %v", ok, err)
		}
	}
	type got struct {
		fence uint64
		err   error
	}
	done := make(chan got, 2)
	for range 2 {
		go func() {
			f, err := driverstest.TakeSharedWait(ctxWithin(t, 10*time.Second), waiter, key, token(), time.Minute, sem, drivers.WaitOptions{})
			done <- got{f, err}
		}()
	}
	poll.Until(t, 10*time.Second, "two waiters queued", func() bool {
		h, _, err := waiter.Inspect(t.Context(), key)
		return err == nil && h.WaiterCount == 2
	})
	lock, _, _ := redis.KeyNames(key)
	if err := srv.Client().Del(t.Context(), lock).Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if r := <-done; r.err != nil || r.fence == 0 {
			t.Fatalf("waiter of the semaphore after its grants lapsed = %d, %v; want a grant", r.fence, r.err)
		}
	}
	if h, _, err := waiter.Inspect(t.Context(), key); err != nil || len(h.Holders) != 2 || h.Claim != sem {
		t.Fatalf("Inspect = %+v, %v; want the two waiters holding the semaphore of 2", h, err)
	}
}
