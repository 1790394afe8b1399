package engine

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock/internal/testkit/poll"
)

var (
	propKeys   = []string{"a", "b", "c", "d"}
	propOwners = []string{"p", "q", "r", "s", "t"}
)

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
	switch n := rng.IntN(100); {
	case n < 30:
		c.Op, c.TTL, c.Wait = OpAcquire, ttl, rng.IntN(2) == 0
	case n < 35:
		c.Op, c.TTL, c.Key, c.Wait = OpAcquireAll, ttl, "", rng.IntN(2) == 0
		for _, k := range propKeys {
			if rng.IntN(2) == 0 || k == key {
				c.Keys = append(c.Keys, k)
			}
		}
		if l := m.locks[key]; l != nil && rng.IntN(2) == 0 {
			// The key's holder, often past its deadline with waiters
			// queued: it must never end up queued behind them while
			// still the holder (the snapshot would refuse that table).
			c.Owner = l.owner
		}
		if rng.IntN(10) == 0 && len(c.Keys) > 0 {
			c.Keys = append(c.Keys, c.Keys[0]) // invalid: named twice
		}
	case n < 55:
		c.Op = OpRelease
		if l := m.locks[key]; l != nil && rng.IntN(3) > 0 {
			c.Owner = l.owner // mostly the holder, so releases do happen
		}
	case n < 65:
		c.Op, c.TTL = OpExtend, ttl
		if l := m.locks[key]; l != nil && rng.IntN(2) == 0 {
			c.Owner = l.owner
		}
	case n < 70:
		c.Op = OpForceRelease
	case n < 85:
		c.Op = OpExpire
		if l := m.locks[key]; l != nil && rng.IntN(4) > 0 {
			c.Owner, c.ExpectFence = l.owner, l.fence
		} else {
			c.ExpectFence = uint64(rng.IntN(10))
		}
	case n < 92:
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
// virtual time to a replicated engine and to the model, and compares every
// answer, every fence, Due, Get, and — through a snapshot restored into a
// fresh engine — the whole state.
func TestProperty_ReplicatedMatchesModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			maxKeys, maxWaiters := 0, 0
			if seed%2 == 1 {
				maxKeys, maxWaiters = 3, 2
			}
			m := newModel(maxKeys, maxWaiters)
			e := newReplicated(t, Config{MaxKeys: maxKeys, MaxWaitersPerKey: maxWaiters})
			now := t0
			var index uint64
			for step := range 300 {
				index += uint64(1 + rng.IntN(3))
				batch := make([]Command, 1+rng.IntN(5))
				want := make([]modelResult, len(batch))
				for i := range batch {
					now += int64(rng.IntN(60)) - 10 // sometimes backwards
					batch[i] = randomCommand(rng, now, index, m)
					want[i] = m.apply(batch[i])
				}
				got := mustApply(t, e, batch...)
				for i := range batch {
					if d := want[i].matches(got[i]); d != "" {
						t.Fatalf("step %d cmd %d %+v: %s", step, i, batch[i], d)
					}
				}
				checkAgainstModel(t, e, m, rng.IntN(300)-50+int(m.now))
				checkRestorable(t, e, propKeys)
				if step%50 == 49 {
					e = restoredCopy(t, e)
				}
			}
		})
	}
}

// checkAgainstModel compares Get of every key and Due at dueAt.
func checkAgainstModel(t *testing.T, e *Replicated, m *model, dueAt int) {
	t.Helper()
	ctx := t.Context()
	for _, k := range propKeys {
		got, ok, err := e.Get(ctx, k)
		want, wantOK := m.info(k)
		if err != nil || ok != wantOK || got != want {
			t.Fatalf("Get(%q) = %+v %v %v, model %+v %v", k, got, ok, err, want, wantOK)
		}
	}
	due, err := e.Due(ctx, int64(dueAt), 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := m.due(int64(dueAt), 2); fmt.Sprint(due) != fmt.Sprint(want) && !(len(due) == 0 && len(want) == 0) {
		t.Fatalf("Due = %v, model %v", due, want)
	}
	var want []Waiter
	for k, l := range m.locks {
		for _, w := range l.waiters {
			want = append(want, Waiter{Key: k, Owner: w.owner})
		}
	}
	slices.SortFunc(want, func(a, b Waiter) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Owner, b.Owner)) })
	ws, err := e.Waiters(ctx)
	if err != nil || fmt.Sprint(ws) != fmt.Sprint(want) || e.WaiterCount() != len(want) {
		t.Fatalf("Waiters = %v %v (count %d), model %v", ws, err, e.WaiterCount(), want)
	}
	for _, w := range want {
		if ok, err := e.IsWaiting(ctx, w.Key, w.Owner); !ok || err != nil {
			t.Fatalf("IsWaiting(%q, %q) = %v %v, model queues it", w.Key, w.Owner, ok, err)
		}
	}
	if e.Len() != len(m.locks) {
		t.Fatalf("Len = %d, model %d", e.Len(), len(m.locks))
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
			m := newModel(0, 2)
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
				if l := m.locks[key]; l != nil && rng.IntN(2) == 0 {
					owner = l.owner
				}
				_, queued := waiting[[2]string{key, owner}]
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
					want := m.apply(Command{Op: OpAcquire, Key: key, Owner: owner, TTL: ttl, Now: m.now})
					g, ok, err := e.Acquire(ctx, key, owner, ttl)
					if d := want.matches(Result{OK: ok, Grant: g, Err: err}); d != "" {
						t.Fatalf("step %d Acquire(%s,%s): %s", step, key, owner, d)
					}
				case n < 60 && !queued:
					want := m.apply(Command{Op: OpAcquire, Key: key, Owner: owner, TTL: ttl, Now: m.now, Wait: true})
					wctx, cancel := context.WithCancel(ctx)
					w := &liveWaiter{key: key, owner: owner, cancel: cancel, out: make(chan waitResult, 1)}
					go func() {
						g, err := e.AcquireWait(wctx, key, owner, ttl)
						w.out <- waitResult{owner: owner, grant: g, err: err}
					}()
					if want.Queued {
						waiting[[2]string{key, owner}] = w
						poll.Until(t, 5*time.Second, "queued", func() bool {
							info, _, _ := e.Get(ctx, key)
							return info.Waiters == len(m.locks[key].waiters)
						})
						continue
					}
					r := <-w.out
					cancel()
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
					if err != nil || ok != wantOK || got != want {
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
