package memory_test

import (
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// A set of read locks is one request like a set of mutexes: it takes the
// keys it can, queues behind the writer for the others in the same step,
// and returns when the writer lets go, every key held.
func TestAcquire_ASetOfReadLocksWaitsBehindAWriter(t *testing.T) {
	d := newDriver(t, memory.Config{})
	ctx := t.Context()
	read := drivers.Claim{Kind: drivers.RWLock}
	write := read
	write.Write = true
	req := func(owner string, c drivers.Claim, wait bool, keys ...string) drivers.Request {
		return drivers.Request{Keys: keys, Owner: owner, TTL: time.Minute, Claim: c, Wait: wait}
	}
	if g, err := d.Acquire(ctx, req("writer", write, false, "r1")); err != nil || !g.Acquired {
		t.Fatalf("the writer: %+v %v", g, err)
	}
	if g, err := d.Acquire(ctx, req("reader", read, false, "r1", "r2")); err != nil || g.Acquired || g.Busy.Key != "r1" {
		t.Fatalf("a set busy on r1 without wait: %+v %v", g, err)
	}
	done := make(chan drivers.Grant, 1)
	go func() {
		g, err := d.Acquire(ctx, req("reader", read, true, "r1", "r2"))
		if err != nil {
			t.Errorf("the set's wait: %v", err)
		}
		done <- g
	}()
	poll.Until(t, 5*time.Second, "the set queued for r1", func() bool {
		h, ok, _ := d.Inspect(ctx, "r1")
		return ok && h.WaiterCount == 1
	})
	if g, err := d.Acquire(ctx, req("other", read, false, "r2")); err != nil || !g.Acquired {
		t.Fatalf("a reader beside the set's read of r2: %+v %v", g, err)
	}
	if ok, err := d.Release(ctx, "r1", "writer"); !ok || err != nil {
		t.Fatalf("Release: %v %v", ok, err)
	}
	g := <-done
	if !g.Acquired || len(g.Fences) != 2 || g.Fences[0] == 0 || g.Fences[1] == 0 {
		t.Fatalf("the set's grant: %+v", g)
	}
}
