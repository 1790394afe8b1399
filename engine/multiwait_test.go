package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/internal/testkit/poll"
)

type allResult struct {
	grants []Grant
	busy   Grant
	err    error
}

func startAllWaiter(t *testing.T, ctx context.Context, e *Engine, keys []string, owner string) <-chan allResult {
	t.Helper()
	out := make(chan allResult, 1)
	go func() {
		g, busy, err := e.acquireSetWait(ctx, keys, owner, time.Minute)
		out <- allResult{g, busy, err}
	}()
	return out
}

// A request for several keys keeps its place on every one of them from
// the moment it comes: the free ones are its own at once (held with no
// deadline while it waits), a later request for any of them waits behind
// it, and when its last key comes every key starts its TTL together.
func TestAcquireAllWait_KeepsItsPlaceOnEveryKey(t *testing.T) {
	e, clock := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "b", "h", time.Minute)
	all := startAllWaiter(t, ctx, e, []string{"a", "b"}, "set")
	poll.Until(t, 5*time.Second, "the set to be queued for b", func() bool { return waiters(t, e, "b") == 1 })
	a, _, _ := e.Get(ctx, "a")
	if a.Owner != "set" || a.Deadline != math.MaxInt64 {
		t.Fatalf("a while the set waits for b = %+v; want held by the set, with no deadline", a)
	}
	single := make(chan waitResult, 1)
	startWaiter(t, ctx, e, "a", "single", time.Minute, single)
	poll.Until(t, 5*time.Second, "the single request to queue behind the set", func() bool { return waiters(t, e, "a") == 1 })

	clock.Advance(2 * time.Minute) // b's grant ends; a, held for the set, does not
	r := <-all
	if r.err != nil || len(r.grants) != 2 || r.grants[0].Key != "a" || r.grants[1].Key != "b" {
		t.Fatalf("AcquireAllWait = %+v", r)
	}
	now := epoch.Add(2 * time.Minute).UnixNano()
	for _, g := range r.grants {
		if g.Owner != "set" || g.Deadline != now+int64(time.Minute) {
			t.Fatalf("grant %+v; want the set's, its TTL counted from the last hand-off", g)
		}
	}
	select {
	case w := <-single:
		t.Fatalf("the single request got a while the set holds it: %+v", w)
	default:
	}
	if ok, err := e.Release(ctx, "a", "set"); !ok || err != nil {
		t.Fatalf("Release a: %v %v", ok, err)
	}
	if w := <-single; w.err != nil || w.grant.Owner != "single" {
		t.Fatalf("the single request after the set released a: %+v", w)
	}
}

// A request that gives up withdraws from every queue and lets go of the
// keys it held while it waited; it is told who held the key it waited
// for.
func TestAcquireAllWait_GivingUpLeavesNothingBehind(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "c", "h", time.Minute)
	wctx, cancel := context.WithCancel(ctx)
	all := startAllWaiter(t, wctx, e, []string{"a", "b", "c"}, "set")
	poll.Until(t, 5*time.Second, "the set to be queued for c", func() bool { return waiters(t, e, "c") == 1 })
	cancel()
	r := <-all
	if !errors.Is(r.err, context.Canceled) || r.busy.Key != "c" || r.busy.Owner != "h" {
		t.Fatalf("cancelled AcquireAllWait = %+v; want context.Canceled, waiting for c held by h", r)
	}
	for _, k := range []string{"a", "b"} {
		if _, held, _ := e.Get(ctx, k); held {
			t.Fatalf("%s still held after the set gave up", k)
		}
	}
	if n := waiters(t, e, "c"); n != 0 {
		t.Fatalf("%d waiters left on c", n)
	}
}

// The last key reaches the request at the very moment its caller gives
// up: the engine releases every key it was answered with.
func TestAcquireAllWait_CancelCrossingTheLastHandOffReleasesEveryKey(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "b", "h", time.Minute)
	w := getReq(kAcquire)
	w.keys, w.owner, w.ttl, w.wait = []string{"a", "b"}, "set", time.Minute, true
	if err := e.send(ctx, w); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "the set queued", func() bool { return waiters(t, e, "b") == 1 })
	next := make(chan waitResult, 1)
	startWaiter(t, ctx, e, "a", "next", time.Minute, next)
	poll.Until(t, 5*time.Second, "next queued for a", func() bool { return waiters(t, e, "a") == 1 })
	if ok, err := e.Release(ctx, "b", "h"); !ok || err != nil {
		t.Fatalf("Release b: %v %v", ok, err)
	}
	if b, _, _ := e.Get(ctx, "b"); b.Owner != "set" {
		t.Fatalf("b after the release = %+v; want the set's", b)
	}
	e.withdraw(w) // the caller acts on its cancelled context, not the answer
	if r := <-next; r.err != nil || r.grant.Owner != "next" {
		t.Fatalf("next = %+v; want a, released by the withdrawn set", r)
	}
	if _, held, _ := e.Get(ctx, "b"); held {
		t.Fatal("b still held by the withdrawn set")
	}
}

// Requests for overlapping sets, named in random orders, all finish (no
// two wait for each other in a circle), and no key ever has two holders.
func TestAcquireAllWait_OverlappingSetsNeverDeadlock(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	keys := []string{"a", "b", "c", "d", "e"}
	var mu sync.Mutex
	holder := map[string]string{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 11))
			for i := range 200 {
				set := slices.Clone(keys)
				rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
				set = set[:1+rng.IntN(4)]
				owner := fmt.Sprintf("g%d-%d", g, i)
				grants, _, err := e.acquireSetWait(ctx, set, owner, time.Minute)
				if err != nil {
					t.Errorf("AcquireAllWait(%v) = %v: a wait that never ends is a deadlock", set, err)
					return
				}
				mu.Lock()
				for _, gr := range grants {
					if h := holder[gr.Key]; h != "" {
						t.Errorf("%s granted %s while %s holds it", owner, gr.Key, h)
					}
					holder[gr.Key] = owner
				}
				for _, gr := range grants {
					holder[gr.Key] = ""
				}
				mu.Unlock()
				for _, k := range set {
					if ok, err := e.Release(ctx, k, owner); !ok || err != nil {
						t.Errorf("Release(%s) by %s: %v %v", k, owner, ok, err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	for _, k := range keys {
		if _, held, _ := e.Get(t.Context(), k); held {
			t.Fatalf("%s held at the end", k)
		}
	}
}

// A key the set took while it waited, forced free meanwhile, breaks the
// set: when its last key comes it is answered not acquired, naming the
// lost key, and lets go of the others instead of reporting a key
// someone else may hold.
func TestAcquireAllWait_AKeyForcedFreeWhileWaitingBreaksTheSet(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "c", "h", time.Minute)
	all := startAllWaiter(t, ctx, e, []string{"a", "c"}, "set")
	poll.Until(t, 5*time.Second, "the set to queue for c", func() bool { return waiters(t, e, "c") == 1 })
	if ok, err := e.ForceRelease(ctx, "a"); !ok || err != nil {
		t.Fatalf("ForceRelease a: %v %v", ok, err)
	}
	mustAcquireOne(t, e, "a", "thief", time.Minute)
	if ok, err := e.Release(ctx, "c", "h"); !ok || err != nil {
		t.Fatalf("Release c: %v %v", ok, err)
	}
	r := <-all
	var na *drivers.NotAcquiredError
	if !errors.As(r.err, &na) || na.Key != "a" || r.grants != nil {
		t.Fatalf("AcquireAllWait = %+v; want not acquired, naming a", r)
	}
	if _, held, _ := e.Get(ctx, "c"); held {
		t.Fatal("c still held by the broken set")
	}
	if a, _, _ := e.Get(ctx, "a"); a.Owner != "thief" {
		t.Fatalf("a = %+v; want left to its holder", a)
	}
}
