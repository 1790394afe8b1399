package engine

import (
	"bytes"

	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// The names of the property tests and the claim each is held as: three
// mutexes, two semaphores of 2 and two read/write locks, so that sets of
// every kind can be drawn.
var (
	propKeys   = []string{"a", "b", "c", "s1", "s2", "r1", "r2"}
	propOwners = []string{"p", "q", "r", "s", "t"}
)

// claimOf is the claim key is held as.
func claimOf(key string) Claim {
	switch key[0] {
	case 's':
		return Claim{Kind: Semaphore, Limit: 2}
	case 'r':
		return Claim{Kind: RWLock}
	}
	return Claim{}
}

// randomClaim draws a claim for key: mostly its own kind (a read or a
// write of a read/write lock), sometimes another or none at all.
func randomClaim(rng *rand.Rand, key string) Claim {
	if rng.IntN(15) == 0 {
		return []Claim{{}, {Kind: Semaphore, Limit: 3}, {Kind: RWLock}, {Kind: Semaphore}, {Kind: RWLock, Limit: 1},
			{Kind: Semaphore, Limit: 4}, {Kind: Semaphore, Limit: drivers.MaxHolders + 1}, {Write: true}}[rng.IntN(8)]
	}
	c := claimOf(key)
	c.Write = c.Kind == RWLock && rng.IntN(3) == 0
	return c
}

// randomCommand draws one replicated command; now and fence are the
// caller's.
func randomCommand(rng *rand.Rand, now int64, fence uint64, m *model) Command {
	key := propKeys[rng.IntN(len(propKeys))]
	owner := propOwners[rng.IntN(len(propOwners))]
	ttl := time.Duration(1 + rng.IntN(200))
	c := Command{Key: key, Owner: owner, Now: now}
	if rng.IntN(2) == 0 {
		c.Fence = fence
	}
	// held draws a holder of key, often one past its deadline with
	// waiters queued: it must never end up queued behind them while still
	// a holder (the snapshot would refuse that table).
	held := func() (string, uint64, bool) {
		if n := m.names[key]; n != nil && len(n.holders) > 0 {
			h := n.holders[rng.IntN(len(n.holders))]
			return h.Owner, h.Fence, true
		}
		return "", 0, false
	}
	switch n := rng.IntN(100); {
	case n < 12:
		c.Op, c.TTL, c.Wait = OpAcquire, ttl, rng.IntN(2) == 0 // v0.1.0's entry
		if rng.IntN(8) > 0 {
			key = propKeys[rng.IntN(3)] // a mutex's, mostly
			c.Key = key
		}
		if o, _, ok := held(); ok && rng.IntN(3) == 0 {
			c.Owner = o
		}
	case n < 45:
		c.Op, c.TTL, c.Key, c.Wait, c.Claim = OpAcquireKeys, ttl, "", rng.IntN(3) > 0, randomClaim(rng, key)
		c.Keys = []string{key}
		for _, k := range propKeys {
			if k != key && (k[0] == key[0] && rng.IntN(3) == 0 || rng.IntN(80) == 0) {
				c.Keys = append(c.Keys, k) // a set, now and then of mixed kinds
			}
		}
		if o, _, ok := held(); ok && rng.IntN(3) == 0 {
			c.Owner = o
		}
		if rng.IntN(20) == 0 {
			c.Keys = append(c.Keys, key) // invalid: named twice
		}
		switch rng.IntN(12) {
		case 0, 1, 2, 3:
			c.MaxHold = time.Duration(rng.IntN(400) - 10) // a cap, now and then shorter than the TTL; below 1 invalid or none
		case 4:
			c.MaxHold = CapPending // a set's keep-alive
		}
	case n < 62:
		c.Op = OpRelease
		if o, _, ok := held(); ok && rng.IntN(3) > 0 {
			c.Owner = o // mostly a holder, so releases do happen
		}
	case n < 70:
		c.Op, c.TTL = OpExtend, ttl
		if o, _, ok := held(); ok && rng.IntN(2) == 0 {
			c.Owner = o
		}
	case n < 74:
		c.Op = OpForceRelease
	case n < 86:
		c.Op = OpExpire
		if o, f, ok := held(); ok && rng.IntN(4) > 0 {
			c.Owner, c.ExpectFence = o, f
		} else {
			c.ExpectFence = uint64(rng.IntN(10))
		}
	case n < 93:
		c.Op = OpCancelWait
	case n < 97:
		c.Op = OpTick
	case n < 98:
		c.Op, c.TTL = OpAcquire, 0 // invalid
	default:
		c.Op = Op(rng.IntN(3) * 100) // unknown, or zero
	}
	return c
}

// TestProperty_ReplicatedMatchesModel feeds random batches with random
// virtual time to a replicated engine and to the model — mutexes,
// semaphores, read/write locks and sets of each, with and without wait,
// claims of the wrong kind or limit among them — and compares every
// answer, every fence, Get, Due, the waiters and, through a snapshot
// restored into a fresh engine, the whole state after every step, under
// a referee that knows only the promises.
func TestProperty_ReplicatedMatchesModel(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			// Odd seeds: a key limit that holders and waiters reach, a
			// waiter limit, and a holder cap that readers reach.
			maxKeys, maxWaiters, maxHolders := 0, 0, drivers.MaxHolders
			if seed%2 == 1 {
				maxKeys, maxWaiters, maxHolders = 7, 2, 2
			}
			m := newModel(maxKeys, maxWaiters, maxHolders)
			e := newReplicated(t, Config{MaxKeys: maxKeys, MaxWaitersPerKey: maxWaiters, MaxHoldersPerKey: maxHolders})
			ref := newReferee(maxHolders)
			now := t0
			var index uint64
			for step := range 400 {
				index += uint64(1 + rng.IntN(3))
				batch := make([]Command, 1+rng.IntN(4))
				want := make([]modelResult, len(batch))
				queues := make([][]QueuedWaiter, len(batch))
				for i := range batch {
					now += int64(rng.IntN(60)) - 10 // sometimes backwards
					batch[i] = randomCommand(rng, now, index, m)
					queues[i] = m.queueOf(batch[i].Key)
					want[i] = m.apply(batch[i])
				}
				got := mustApply(t, e, batch...)
				for i := range batch {
					if d := want[i].matches(got[i]); d != "" {
						t.Fatalf("step %d cmd %d %+v: %s", step, i, batch[i], d)
					}
					ref.observe(t, step, batch[i], got[i], queues[i])
				}
				checkAgainstModel(t, e, m, rng.IntN(300)-50+int(m.now), ref)
				checkRestorable(t, e, propKeys)
				if step%50 == 49 {
					e = restoredCopy(t, e)
				}
			}
		})
	}
}

// queueOf is the queue of key as the model holds it.
func (m *model) queueOf(key string) []QueuedWaiter {
	var q []QueuedWaiter
	if n := m.names[key]; n != nil {
		for _, w := range n.queue {
			q = append(q, QueuedWaiter{Owner: w.owner, Write: w.write})
		}
	}
	return q
}

// referee holds the engine to its promises, whatever the model says.
type referee struct {
	lastFence  map[string]uint64 // the highest fence seen per name
	maxHolders int
}

func newReferee(maxHolders int) *referee {
	return &referee{lastFence: map[string]uint64{}, maxHolders: maxHolders}
}

// observe checks one command's new grants: each above every earlier fence
// of its name, and the hand-offs of an operation on one name in the
// order its waiters queued.
func (f *referee) observe(t *testing.T, step int, c Command, r Result, queue []QueuedWaiter) {
	t.Helper()
	fresh := slices.Clone(r.Handoffs)
	for _, g := range append([]Grant{r.Grant}, r.Grants...) {
		if r.OK && g.Fence > f.lastFence[g.Key] {
			fresh = append(fresh, g)
		}
	}
	slices.SortFunc(fresh, func(a, b Grant) int { return cmpFence(a.Fence, b.Fence) })
	// An acquire that found a key lapsed reports the head's grant as its
	// hand-off, and as its own when it was the head.
	fresh = slices.CompactFunc(fresh, func(a, b Grant) bool { return a.Fence == b.Fence })
	for _, g := range fresh {
		if g.Fence <= f.lastFence[g.Key] {
			t.Fatalf("step %d: %s granted fence %d after fence %d", step, g.Key, g.Fence, f.lastFence[g.Key])
		}
		f.lastFence[g.Key] = g.Fence
	}
	if c.Op == OpCancelWait {
		queue = slices.DeleteFunc(queue, func(q QueuedWaiter) bool { return q.Owner == c.Owner })
	}
	if c.Op == OpAcquire || c.Op == OpAcquireKeys {
		return // hand-offs of several names, or after the acquirer's own lapse
	}
	for i, h := range r.Handoffs {
		if i >= len(queue) || queue[i].Owner != h.Owner {
			t.Fatalf("step %d: hand-off %d went to %s; the queue was %+v", step, i, h.Owner, queue)
		}
	}
}

// check holds one name to its limits.
func (f *referee) check(t *testing.T, key string, in Info) {
	t.Helper()
	s := in.Shared
	switch {
	case s == nil:
	case len(s.Holders) == 0:
		t.Fatalf("%s is listed with no holder", key)
	case s.Kind == Semaphore && uint32(len(s.Holders)) > s.Limit:
		t.Fatalf("%s has %d holders, limit %d", key, len(s.Holders), s.Limit)
	case len(s.Holders) > f.maxHolders:
		t.Fatalf("%s has %d holders, over the cap of %d", key, len(s.Holders), f.maxHolders)
	case s.Writer && len(s.Holders) > 1:
		t.Fatalf("%s has a writer beside %d others", key, len(s.Holders)-1)
	}
}

// checkAgainstModel compares Get of every key, Due at dueAt, the
// waiters and the key count, and holds every name to its limits.
func checkAgainstModel(t *testing.T, e *Replicated, m *model, dueAt int, ref *referee) {
	t.Helper()
	ctx := t.Context()
	for _, k := range propKeys {
		got, ok, err := e.Get(ctx, k)
		want, wantOK := m.info(k)
		if err != nil || ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("Get(%q) = %+v %+v %v %v, model %+v %+v %v", k, got, got.Shared, ok, err, want, want.Shared, wantOK)
		}
		ref.check(t, k, got)
	}
	due, err := e.Due(ctx, int64(dueAt), 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := m.due(int64(dueAt), 2); fmt.Sprint(due) != fmt.Sprint(want) && !(len(due) == 0 && len(want) == 0) {
		t.Fatalf("Due = %v, model %v", due, want)
	}
	want := m.waiters()
	ws, err := e.Waiters(ctx)
	if err != nil || fmt.Sprint(ws) != fmt.Sprint(want) || e.WaiterCount() != len(want) {
		t.Fatalf("Waiters = %v %v (count %d), model %v", ws, err, e.WaiterCount(), want)
	}
	for _, w := range want {
		if ok, err := e.IsWaiting(ctx, w.Key, w.Owner); !ok || err != nil {
			t.Fatalf("IsWaiting(%q, %q) = %v %v, model queues it", w.Key, w.Owner, ok, err)
		}
	}
	if e.Len() != len(m.names) {
		t.Fatalf("Len = %d, model %d", e.Len(), len(m.names))
	}
}

// restoredCopy moves the state of e into a new engine by snapshot and
// checks the bytes survive the trip.
func restoredCopy(t *testing.T, e *Replicated) *Replicated {
	t.Helper()
	snap, err := e.Snapshot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := newReplicated(t, e.cfg)
	if err := n.Restore(t.Context(), snap); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	again, _ := n.Snapshot(t.Context())
	if !bytes.Equal(snap, again) {
		t.Fatal("snapshot changed across a restore")
	}
	_ = e.Close()
	return n
}

// checkRestorable snapshots e, restores the snapshot into a fresh engine
// and compares the two: every table a command leaves must survive the
// trip, since a node restarts from its snapshot and a follower installs
// the leader's.
func checkRestorable(t *testing.T, e *Replicated, keys []string) {
	t.Helper()
	ctx := t.Context()
	snap, err := e.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckSnapshot(snap); err != nil {
		t.Fatalf("CheckSnapshot of the live table: %v", err)
	}
	n := newReplicated(t, e.cfg)
	defer n.Close()
	if err := n.Restore(ctx, snap); err != nil {
		t.Fatalf("Restore of the live table: %v", err)
	}
	if again, _ := n.Snapshot(ctx); !bytes.Equal(snap, again) {
		t.Fatal("snapshot changed across a restore")
	}
	for _, k := range keys {
		want, wok, _ := e.Get(ctx, k)
		got, ok, err := n.Get(ctx, k)
		if err != nil || ok != wok || !reflect.DeepEqual(got, want) {
			t.Fatalf("restored Get(%q) = %+v %v %v, live %+v %v", k, got, ok, err, want, wok)
		}
	}
	wantW, _ := e.Waiters(ctx)
	gotW, err := n.Waiters(ctx)
	if err != nil || fmt.Sprint(gotW) != fmt.Sprint(wantW) || n.WaiterCount() != e.WaiterCount() || n.Len() != e.Len() {
		t.Fatalf("restored waiters %v (%d, %d keys) %v, live %v (%d, %d keys)", gotW, n.WaiterCount(), n.Len(), err, wantW, e.WaiterCount(), e.Len())
	}
	wd, wok, _ := e.NextDeadline(ctx)
	gd, gok, err := n.NextDeadline(ctx)
	if err != nil || gd != wd || gok != wok {
		t.Fatalf("restored NextDeadline = %d %v %v, live %d %v", gd, gok, err, wd, wok)
	}
}

// liveWaiter is a blocked AcquireWait of the live property test.
type liveWaiter struct {
	key, owner string
	cancel     context.CancelFunc
	out        chan waitResult
}

// TestProperty_LiveMatchesModel drives a live engine on a FakeClock with
// random calls — including real blocked AcquireWait goroutines and their
// cancellation — and checks every answer and every hand-off against the
// model.
func TestProperty_LiveMatchesModel(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			e, clock := newLive(t, Config{MaxWaitersPerKey: 2})
			m := newModel(0, 2, drivers.MaxHolders)
			m.now = epoch.UnixNano()
			ctx := t.Context()
			waiting := map[[2]string]*liveWaiter{}

			// expect applies the model's hand-offs to the blocked callers.
			expect := func(step int, hs ...Grant) {
				t.Helper()
				for _, h := range hs {
					w := waiting[[2]string{h.Key, h.Owner}]
					if w == nil {
						t.Fatalf("step %d: model hands %s to nobody waiting", step, fmtGrant(h))
					}
					select {
					case r := <-w.out:
						if r.err != nil || r.grant != h {
							t.Fatalf("step %d: waiter %s/%s got %+v, model %s", step, h.Key, h.Owner, r, fmtGrant(h))
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("step %d: waiter %s/%s never got %s", step, h.Key, h.Owner, fmtGrant(h))
					}
					w.cancel()
					delete(waiting, [2]string{h.Key, h.Owner})
				}
			}
			handoff := func(r modelResult) []Grant {
				return r.Handoffs
			}

			for step := range 400 {
				key := propKeys[rng.IntN(2)] // two keys: more contention
				owner := propOwners[rng.IntN(len(propOwners))]
				ttl := time.Duration(1+rng.IntN(100)) * time.Millisecond
				if n := m.names[key]; n != nil && rng.IntN(2) == 0 {
					owner = n.holders[0].Owner
				}
				_, queued := waiting[[2]string{key, owner}]
				var maxHold time.Duration // a cap on total hold time, now and then
				if rng.IntN(3) == 0 {
					maxHold = time.Duration(1+rng.IntN(150)) * time.Millisecond
				}
				req := AcquireRequest{Keys: []string{key}, Owner: owner, TTL: ttl, MaxHold: maxHold}
				switch n := rng.IntN(100); {
				case n < 15:
					clock.Advance(time.Duration(rng.IntN(60)) * time.Millisecond)
					m.now = clock.Now().UnixNano()
					hs := m.expireDue()
					if _, _, err := e.Get(ctx, key); err != nil { // a batch: expiry is done
						t.Fatal(err)
					}
					expect(step, hs...)
				case n < 40 && !queued:
					want := m.apply(Command{Op: OpAcquireKeys, Keys: req.Keys, Owner: owner, TTL: ttl, Now: m.now, MaxHold: maxHold})
					grants, busy, err := e.Acquire(ctx, req, nil)
					g, ok := busy, grants != nil
					if ok {
						g = grants[0]
					}
					want.Grants = nil // a live call of one key answers its Grant
					if d := want.matches(Result{OK: ok, Grant: g, Err: err}); d != "" {
						t.Fatalf("step %d Acquire(%s,%s): %s", step, key, owner, d)
					}
				case n < 60 && !queued:
					want := m.apply(Command{Op: OpAcquireKeys, Keys: req.Keys, Owner: owner, TTL: ttl, Now: m.now, Wait: true, MaxHold: maxHold})
					wctx, cancel := context.WithCancel(ctx)
					w := &liveWaiter{key: key, owner: owner, cancel: cancel, out: make(chan waitResult, 1)}
					req.Wait = true
					go func() {
						var g Grant
						grants, _, err := e.Acquire(wctx, req, nil)
						if err == nil {
							g = grants[0]
						}
						w.out <- waitResult{owner: owner, grant: g, err: err}
					}()
					if want.Queued {
						waiting[[2]string{key, owner}] = w
						poll.Until(t, 5*time.Second, "queued", func() bool {
							info, _, _ := e.Get(ctx, key)
							return info.Waiters == len(m.names[key].queue)
						})
						continue
					}
					r := <-w.out
					cancel()
					want.Grants = nil
					if d := want.matches(Result{OK: r.err == nil, Grant: r.grant, Err: r.err}); d != "" && !(want.errFull && r.err != nil) {
						t.Fatalf("step %d AcquireWait(%s,%s): %s", step, key, owner, d)
					}
				case n < 65 && queued:
					w := waiting[[2]string{key, owner}]
					w.cancel()
					r := <-w.out
					if !errors.Is(r.err, context.Canceled) {
						t.Fatalf("step %d: cancelled waiter got %+v", step, r)
					}
					delete(waiting, [2]string{key, owner})
					m.apply(Command{Op: OpCancelWait, Key: key, Owner: owner, Now: m.now})
				case n < 85:
					want := m.apply(Command{Op: OpRelease, Key: key, Owner: owner, Now: m.now})
					ok, err := e.Release(ctx, key, owner)
					if err != nil || ok != want.OK {
						t.Fatalf("step %d Release(%s,%s) = %v %v, model %v", step, key, owner, ok, err, want.OK)
					}
					expect(step, handoff(want)...)
				case n < 93:
					want := m.apply(Command{Op: OpExtend, Key: key, Owner: owner, TTL: ttl, Now: m.now})
					g, ok, err := e.Extend(ctx, key, owner, ttl)
					if d := want.matches(Result{OK: ok, Grant: g, Err: err}); d != "" {
						t.Fatalf("step %d Extend(%s,%s): %s", step, key, owner, d)
					}
				default:
					want := m.apply(Command{Op: OpForceRelease, Key: key, Now: m.now})
					ok, err := e.ForceRelease(ctx, key)
					if err != nil || ok != want.OK {
						t.Fatalf("step %d ForceRelease(%s) = %v %v, model %v", step, key, ok, err, want.OK)
					}
					expect(step, handoff(want)...)
				}
				for _, k := range propKeys[:2] {
					got, ok, err := e.Get(ctx, k)
					want, wantOK := m.info(k)
					if err != nil || ok != wantOK || !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d Get(%q) = %+v %v %v, model %+v %v", step, k, got, ok, err, want, wantOK)
					}
				}
			}
			for _, w := range waiting {
				w.cancel()
				<-w.out
			}
		})
	}
}
