package engine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock/engine"
)

// A live engine: one owner takes a key, another is refused and told who
// is in the way, a refresh keeps the fence, and a set of keys of any claim
// is one request too.
func ExampleEngine_Acquire() {
	e, err := engine.New(engine.Config{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	take := func(owner string, keys ...string) engine.AcquireRequest {
		return engine.AcquireRequest{Keys: keys, Owner: owner, TTL: 30 * time.Second}
	}

	g, _, _ := e.Acquire(ctx, take("worker-1", "report"), nil)
	fmt.Println("worker-1: fence", g[0].Fence)

	g, busy, _ := e.Acquire(ctx, take("worker-2", "report"), nil)
	fmt.Println("worker-2:", g != nil, "held by", busy.Owner)

	g, _, _ = e.Acquire(ctx, take("worker-1", "report"), nil)
	fmt.Println("worker-1 refresh: fence", g[0].Fence)

	pool := take("worker-2", "pool-a", "pool-b")
	pool.Claim = engine.Claim{Kind: engine.Semaphore, Limit: 2}
	g, _, _ = e.Acquire(ctx, pool, nil)
	fmt.Println("worker-2 slots: fences", g[0].Fence, g[1].Fence)

	released, _ := e.Release(ctx, "report", "worker-1")
	fmt.Println("released:", released)
	// Output:
	// worker-1: fence 1
	// worker-2: false held by worker-1
	// worker-1 refresh: fence 1
	// worker-2 slots: fences 2 3
	// released: true
}

// A wait queues behind the holder and is handed the key when the holder's
// TTL runs out; the fake clock makes that instant.
func ExampleEngine_Acquire_wait() {
	clock := engine.NewFakeClock(time.Unix(0, 0))
	e, err := engine.New(engine.Config{Clock: clock})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()

	e.Acquire(ctx, engine.AcquireRequest{Keys: []string{"door"}, Owner: "alice", TTL: time.Second}, nil)

	got := make(chan engine.Grant)
	go func() {
		g, _, err := e.Acquire(ctx, engine.AcquireRequest{Keys: []string{"door"}, Owner: "bob", TTL: time.Second, Wait: true}, nil)
		if err != nil {
			panic(err)
		}
		got <- g[0]
	}()
	for i := 0; i < 5000; i++ { // wait (bounded) until bob is queued
		if info, _, _ := e.Get(ctx, "door"); info.Waiters == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	clock.Advance(time.Second) // alice's lock expires; bob is next
	g := <-got
	fmt.Println(g.Owner, "holds door with fence", g.Fence)
	// Output:
	// bob holds door with fence 2
}

// A replicated engine applies committed batches; the fence of a grant is
// the log index given in the command, and expiry happens only when a
// command says so, and only for the exact grant it names.
func ExampleReplicated_Apply() {
	e, err := engine.NewReplicated(engine.Config{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx := context.Background()
	sec := int64(time.Second)

	res, _ := e.Apply(ctx, []engine.Command{
		{Op: engine.OpAcquireKeys, Keys: []string{"job"}, Owner: "a", TTL: time.Second, Now: 10 * sec, Fence: 7},
		{Op: engine.OpAcquireKeys, Keys: []string{"job"}, Owner: "b", TTL: time.Second, Now: 10 * sec, Fence: 7, Wait: true},
	})
	fmt.Println("a:", res[0].OK, "fence", res[0].Grant.Fence, "| b queued:", res[1].Queued)

	due, _ := e.Due(ctx, 12*sec, 10)
	fmt.Println("due:", len(due), due[0].Owner)

	res, _ = e.Apply(ctx, []engine.Command{
		{Op: engine.OpExpire, Key: "job", Owner: "a", ExpectFence: 6, Now: 12 * sec, Fence: 9},
		{Op: engine.OpExpire, Key: "job", Owner: "a", ExpectFence: 7, Now: 12 * sec, Fence: 9},
	})
	fmt.Println("stale expire:", res[0].OK, "| expire:", res[1].OK, "-> handed to", res[1].Handoffs[0].Owner, "fence", res[1].Handoffs[0].Fence)
	// Output:
	// a: true fence 7 | b queued: true
	// due: 1 a
	// stale expire: false | expire: true -> handed to b fence 9
}

// Snapshots are deterministic bytes that restore the whole table.
func ExampleReplicated_Snapshot() {
	ctx := context.Background()
	src, _ := engine.NewReplicated(engine.Config{})
	defer src.Close()
	src.Apply(ctx, []engine.Command{{Op: engine.OpAcquire, Key: "k", Owner: "o", TTL: time.Minute, Now: 1}})
	snap, _ := src.Snapshot(ctx)

	dst, _ := engine.NewReplicated(engine.Config{})
	defer dst.Close()
	if err := dst.Restore(ctx, snap); err != nil {
		panic(err)
	}
	info, ok, _ := dst.Get(ctx, "k")
	fmt.Println(ok, info.Owner, info.Fence, dst.Len())
	// Output:
	// true o 1 1
}
