package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// The hand-off reaches a waiter at the very moment its caller gives up:
// the grant is answered into the reply channel, but the caller is already
// withdrawing. The engine must release that grant and hand it on.
func TestEngine_CancelCrossingHandOffReleasesTheGrant(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "k", "holder", time.Minute)
	// w1 is a waiter whose caller we play by hand, to stop it exactly
	// between the hand-off and reading the answer.
	w1 := getReq(kAcquire)
	w1.keys, w1.owner, w1.ttl, w1.wait = []string{"k"}, "w1", time.Minute, true
	if err := e.send(ctx, w1); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "w1 queued", func() bool { return waiters(t, e, "k") == 1 })
	out := make(chan waitResult, 1)
	startWaiter(t, ctx, e, "k", "w2", time.Minute, out)

	if ok, err := e.Release(ctx, "k", "holder"); !ok || err != nil {
		t.Fatalf("Release: %v %v", ok, err)
	}
	info, ok, _ := e.Get(ctx, "k")
	if !ok || info.Owner != "w1" || info.Fence != 2 {
		t.Fatalf("after the hand-off k = %+v", info)
	}
	// w1's caller now acts on its cancelled context instead of the answer.
	e.withdraw(w1)

	r := <-out
	if r.err != nil || r.grant.Owner != "w2" || r.grant.Fence != 3 {
		t.Fatalf("w2 got %+v, want the key with fence 3", r)
	}
}

// Many waiters with random deadlines race hand-offs against their own
// cancellation. Whatever the interleaving, a cancelled wait must never
// leave the key held: at the end, with every winner having released, the
// table is empty, and no two callers ever held the key at once.
func TestEngine_CancellationRaceLeavesNoOrphanGrant(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := t.Context()
	var (
		mu      sync.Mutex
		holding string
		wins    int
		cancels int
	)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 3))
			for i := range 150 {
				owner := fmt.Sprintf("g%d-%d", g, i)
				wctx, cancel := context.WithTimeout(ctx, time.Duration(rng.IntN(200))*time.Microsecond)
				grant, err := e.acquireOneWait(wctx, "hot", owner, time.Minute)
				cancel()
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("AcquireWait: %v", err)
						return
					}
					mu.Lock()
					cancels++
					mu.Unlock()
					continue
				}
				mu.Lock()
				if holding != "" {
					t.Errorf("%s granted while %s holds the key", owner, holding)
				}
				holding = owner
				wins++
				mu.Unlock()
				mu.Lock()
				holding = ""
				mu.Unlock()
				if ok, err := e.Release(ctx, "hot", owner); !ok || err != nil {
					t.Errorf("Release by %s (fence %d): %v %v", owner, grant.Fence, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if wins == 0 || cancels == 0 {
		t.Logf("wins %d, cancels %d: the race was not exercised both ways", wins, cancels)
	}
	poll.Until(t, 5*time.Second, "empty table", func() bool {
		_, ok, _ := e.Get(ctx, "hot")
		return !ok
	})
}

// Close while many callers are busy: every call returns either its normal
// answer or ErrClosed, none hangs, and the loop exits.
func TestEngine_CloseUnderLoadAnswersEveryCall(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	started := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("k%d", g%4)
			owner := fmt.Sprint("o", g)
			for {
				once.Do(func() { close(started) })
				var err error
				if g%2 == 0 {
					_, err = e.acquireOneWait(ctx, key, owner, time.Minute)
				} else {
					_, _, err = e.acquireOne(ctx, key, owner, time.Minute)
				}
				if err == nil {
					_, err = e.Release(ctx, key, owner)
				}
				if errors.Is(err, drivers.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("unexpected error: %v", err)
					return
				}
			}
		}()
	}
	<-started
	poll.Until(t, 5*time.Second, "some traffic", func() bool { return e.Len() > 0 })
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// Commands that were queued when the engine closed are answered with
// ErrClosed, never dropped.
func TestEngine_CloseAnswersQueuedCommands(t *testing.T) {
	e, err := NewReplicated(Config{})
	if err != nil {
		t.Fatal(err)
	}
	// Stop the loop from reading while commands queue up, by closing
	// before any are sent and pushing straight into the channel: the
	// loop's shutdown drains them.
	reqs := make([]*request, 10)
	for i := range reqs {
		reqs[i] = getReq(kGet)
		reqs[i].key = "k"
	}
	e.once.Do(func() {
		for _, r := range reqs {
			e.reqc <- r
		}
		e.stopping.Store(true)
		e.poke()
	})
	<-e.exited
	for i, r := range reqs {
		select {
		case <-r.reply:
			if r.err == nil && !r.ok {
				// Answered normally before the close was seen: fine.
				continue
			}
			if r.err != nil && !errors.Is(r.err, drivers.ErrClosed) {
				t.Fatalf("request %d: %v", i, r.err)
			}
		default:
			t.Fatalf("request %d was dropped", i)
		}
	}
	_ = e.Close()
}

func TestEngine_DuplicateWaitIsRefused(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	if _, ok, _ := e.acquireOne(ctx, "k", "holder", time.Minute); !ok {
		t.Fatal("Acquire failed")
	}
	out := make(chan waitResult, 1)
	startWaiter(t, ctx, e, "k", "w", time.Minute, out)
	if _, err := e.acquireOneWait(ctx, "k", "w", time.Minute); !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("second wait: %v", err)
	}
	if _, err := e.ForceRelease(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if r := <-out; r.err != nil || r.grant.Owner != "w" {
		t.Fatalf("first waiter: %+v", r)
	}
}

func TestEngine_WaiterLimitAndKeyLimitLive(t *testing.T) {
	e, _ := newLive(t, Config{MaxKeys: 1, MaxWaitersPerKey: 1})
	ctx := t.Context()
	if _, ok, _ := e.acquireOne(ctx, "k", "holder", time.Minute); !ok {
		t.Fatal("Acquire failed")
	}
	_, _, err := e.acquireOne(ctx, "other", "holder", time.Minute)
	if !errors.Is(err, drivers.ErrFull) || err.Error() != "engine: key limit 1 reached: lock: limit reached" {
		t.Fatalf("second key: %v", err)
	}
	out := make(chan waitResult, 1)
	startWaiter(t, ctx, e, "k", "w1", time.Minute, out)
	if _, err := e.acquireOneWait(ctx, "k", "w2", time.Minute); !errors.Is(err, drivers.ErrFull) {
		t.Fatalf("second waiter: %v", err)
	}
	if _, err := e.ForceRelease(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	<-out
}

func TestEngine_CancelledContextBeforeCall(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := e.acquireOne(ctx, "k", "a", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := e.acquireOneWait(ctx, "k", "a", time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireWait: %v", err)
	}
	if n := e.Len(); n != 0 {
		t.Fatalf("a call with a dead context took effect: Len %d", n)
	}
}

func TestEngine_ExtendAndForceReleaseLive(t *testing.T) {
	e, clock := newLive(t, Config{})
	ctx := t.Context()
	if _, ok, _ := e.acquireOne(ctx, "k", "a", time.Second); !ok {
		t.Fatal("Acquire failed")
	}
	g, ok, err := e.Extend(ctx, "k", "a", 5*time.Second)
	if err != nil || !ok || g.Fence != 1 || g.Deadline != epoch.Add(5*time.Second).UnixNano() {
		t.Fatalf("Extend = %+v %v %v", g, ok, err)
	}
	if _, ok, _ := e.Extend(ctx, "k", "b", time.Second); ok {
		t.Fatal("Extend by a non-holder succeeded")
	}
	clock.Advance(5 * time.Second)
	if _, ok, _ := e.Extend(ctx, "k", "a", time.Second); ok {
		t.Fatal("Extend of an expired lock succeeded")
	}
	if _, ok, _ := e.Get(ctx, "k"); ok {
		t.Fatal("expired lock still listed")
	}
	if ok, err := e.ForceRelease(ctx, "k"); err != nil || ok {
		t.Fatalf("ForceRelease of a free key = %v %v", ok, err)
	}
	e.acquireOne(ctx, "k", "a", time.Second)
	if ok, err := e.ForceRelease(ctx, "k"); err != nil || !ok {
		t.Fatalf("ForceRelease = %v %v", ok, err)
	}
	infos, err := e.List(ctx, "", 0)
	if err != nil || len(infos) != 0 {
		t.Fatalf("List = %+v %v", infos, err)
	}
}

func TestEngine_LiveRestoreEndsBlockedWaits(t *testing.T) {
	src, _ := newLive(t, Config{})
	ctx := t.Context()
	src.acquireOne(ctx, "x", "a", time.Minute)
	snap, err := src.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := newLive(t, Config{})
	e.acquireOne(ctx, "k", "holder", time.Minute)
	out := make(chan waitResult, 1)
	startWaiter(t, ctx, e, "k", "w", time.Minute, out)
	if err := e.Restore(ctx, snap); err != nil {
		t.Fatal(err)
	}
	if r := <-out; !errors.Is(r.err, drivers.ErrUnavailable) {
		t.Fatalf("waiter after Restore: %+v", r)
	}
	if info, ok, _ := e.Get(ctx, "x"); !ok || info.Owner != "a" {
		t.Fatalf("restored x = %+v %v", info, ok)
	}
	if _, ok, _ := e.Get(ctx, "k"); ok {
		t.Fatal("k survived the restore")
	}
}

// gatedClock is a FakeClock whose Now blocks while the gate is shut, so a
// test can hold the loop inside a batch it has already received.
type gatedClock struct {
	*FakeClock
	shut    atomic.Bool
	entered chan struct{} // one signal per Now that met the shut gate
	open    chan struct{} // one signal lets one such Now through
}

func (c *gatedClock) Now() time.Time {
	if c.shut.Load() {
		c.entered <- struct{}{}
		<-c.open
	}
	return c.FakeClock.Now()
}

// A point command the loop has received is answered however its ctx ends
// meanwhile, so its caller always knows the outcome. Before, the caller
// returned ctx.Err() while the acquire took effect: a grant nobody knew
// of, held for its TTL.
func TestEngine_ReceivedCallKnowsItsOutcome(t *testing.T) {
	clock := &gatedClock{FakeClock: NewFakeClock(epoch), entered: make(chan struct{}), open: make(chan struct{})}
	e, err := New(Config{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for i := range 20 {
		key := fmt.Sprintf("k%d", i)
		ctx, cancel := context.WithCancel(t.Context())
		clock.shut.Store(true)
		type result struct {
			ok  bool
			err error
		}
		done := make(chan result, 1)
		go func() {
			_, ok, err := e.acquireOne(ctx, key, "a", time.Minute)
			done <- result{ok, err}
		}()
		<-clock.entered // the loop holds the acquire's batch
		clock.shut.Store(false)
		cancel()
		clock.open <- struct{}{}
		r := <-done
		info, held, err := e.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		if r.err != nil || !r.ok {
			t.Fatalf("round %d: Acquire answered ok=%v err=%v, and the key is held: %v (%+v)", i, r.ok, r.err, held, info)
		}
		if !held || info.Owner != "a" {
			t.Fatalf("round %d: Acquire said granted, the table has %+v (held %v)", i, info, held)
		}
	}
}
