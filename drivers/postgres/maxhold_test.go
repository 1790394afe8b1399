package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/postgres/pgtest"
	"github.com/zerotal/lock/internal/testkit/poll"
)

// TestMaxHold_RefreshLoopLosesTheKeyAtTheCap: a holder that extends its
// grant (TTL 1s) every 200ms loses it at its cap of 3s: no Extend fails
// while the grant's deadline and cap are ahead, and none succeeds once
// the cap has passed, so the loss comes within a refresh period of the
// cap. A waiter in another process is then served, with a larger fence.
func TestMaxHold_RefreshLoopLosesTheKeyAtTheCap(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	d := open(t, srv.URL())
	if !d.Capabilities().MaxHold {
		t.Error("Capabilities().MaxHold = false; want true")
	}
	const ttl, maxHold, period = time.Second, 3 * time.Second, 200 * time.Millisecond
	key, owner := newKey("max-hold"), newOwner()
	before := time.Now()
	g, err := d.Acquire(t.Context(), drivers.Request{Keys: []string{key}, Owner: owner, TTL: ttl, MaxHold: maxHold})
	granted := time.Now() // the cap is at most this + maxHold, at least before + maxHold
	if err != nil || !g.Acquired {
		t.Fatalf("Acquire = %v, %v", g, err)
	}
	_, _, out := startChild(t, "wait", childURL+"="+srv.URL(), childKey+"="+key)
	got := make(chan string, 1)
	go func() {
		if out.Scan() {
			got <- out.Text()
		}
		close(got)
	}()

	tick := time.NewTicker(period)
	defer tick.Stop()
	lastOK := before // when the deadline in force was set, at the latest
	for i := 0; ; i++ {
		if i > 3*int(maxHold/period) {
			t.Fatalf("still extended after %d refreshes, %v after the grant, with a cap of %v", i, time.Since(before), maxHold)
		}
		<-tick.C
		start := time.Now()
		ok, err := d.Extend(t.Context(), key, owner, ttl)
		end := time.Now()
		if err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if ok && start.After(granted.Add(maxHold)) {
			t.Fatalf("Extend %v after the grant = true; want false past the cap of %v", start.Sub(granted), maxHold)
		}
		if !ok {
			if end.Before(lastOK.Add(ttl)) && end.Before(before.Add(maxHold)) {
				t.Fatalf("Extend %v after the grant = false, with its deadline and its cap (%v) still ahead", end.Sub(before), maxHold)
			}
			t.Logf("lost %v after the grant, with a cap of %v", end.Sub(before), maxHold)
			break
		}
		lastOK = start
	}

	select {
	case line := <-got:
		var fence uint64
		if _, err := fmt.Sscanf(line, "got %d", &fence); err != nil || fence <= g.Fence() {
			t.Fatalf("the waiting process said %q; want the key with a fence above %d", line, g.Fence())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiting process was not served within 30s of the cap")
	}
}

// TestMaxHold_KeptByRefreshCountedFromEachGrant: a refresh by Acquire
// keeps the first grant's cap whatever cap it asks for; a waiter's cap
// counts from its grant, and so does a set's, once it holds every key.
func TestMaxHold_KeptByRefreshCountedFromEachGrant(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t)
	d := open(t, srv.URL())
	const long = time.Hour
	remaining := func(key, owner string) time.Duration {
		t.Helper()
		h, ok, err := d.Inspect(t.Context(), key)
		if err != nil || !ok {
			t.Fatalf("Inspect(%s) = %v, %v, %v", key, h, ok, err)
		}
		for _, g := range h.Holders {
			if g.Owner == owner {
				return g.Remaining
			}
		}
		t.Fatalf("%s not held by %s: %+v", key, owner, h)
		return 0
	}
	acquire := func(r drivers.Request) {
		t.Helper()
		if g, err := d.Acquire(t.Context(), r); err != nil || !g.Acquired {
			t.Fatalf("Acquire(%+v) = %v, %v", r, g, err)
		}
	}

	// servedOnRelease starts r's wait and, once it is queued for key,
	// releases holder's grant of key and waits for r to be served.
	servedOnRelease := func(r drivers.Request, key, holder string) {
		t.Helper()
		res := make(chan error, 1)
		go func() {
			g, err := d.Acquire(t.Context(), r)
			if err == nil && !g.Acquired {
				err = fmt.Errorf("not acquired: %+v", g)
			}
			res <- err
		}()
		poll.Until(t, 10*time.Second, "the waiter queued", func() bool {
			h, _, err := d.Inspect(t.Context(), key)
			return err == nil && h.WaiterCount == 1
		})
		if ok, err := d.Release(t.Context(), key, holder); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		if err := <-res; err != nil {
			t.Fatalf("the waiter let in by the release: %v", err)
		}
	}

	key, owner := newKey("cap-kept"), newOwner()
	acquire(drivers.Request{Keys: []string{key}, Owner: owner, TTL: long, MaxHold: 2 * time.Second})
	acquire(drivers.Request{Keys: []string{key}, Owner: owner, TTL: long, MaxHold: long})
	if r := remaining(key, owner); r > 2*time.Second {
		t.Fatalf("after a refresh asking for a cap of 1h, %v left; want the first grant's cap of 2s kept", r)
	}

	// A waiter with no cap, then one with a cap of 1m, let in by a
	// release: the first holds for its TTL, the second for its cap from
	// then.
	waiter, capped := newOwner(), newOwner()
	servedOnRelease(drivers.Request{Keys: []string{key}, Owner: waiter, TTL: long, Wait: true}, key, owner)
	if r := remaining(key, waiter); r < long-time.Minute {
		t.Fatalf("a waiter with no cap holds for %v; want its TTL of 1h", r)
	}
	servedOnRelease(drivers.Request{Keys: []string{key}, Owner: capped, TTL: long, MaxHold: time.Minute, Wait: true}, key, waiter)
	if r := remaining(key, capped); r > time.Minute || r < 30*time.Second {
		t.Fatalf("a waiter with a cap of 1m let in holds for %v; want its cap from its grant", r)
	}

	// A set that waits: the key it takes at once and the one it is let
	// into both end at the set's cap, counted from when it has both.
	free, busy, other, set := newKey("set-free"), newKey("set-busy"), newOwner(), newOwner()
	acquire(drivers.Request{Keys: []string{busy}, Owner: other, TTL: long})
	servedOnRelease(drivers.Request{Keys: []string{free, busy}, Owner: set, TTL: long, MaxHold: time.Minute, Wait: true}, busy, other)
	for _, k := range []string{free, busy} {
		if r := remaining(k, set); r > time.Minute || r < 30*time.Second {
			t.Fatalf("%s of a set with a cap of 1m holds for %v; want the cap from the set's grant", k, r)
		}
	}
}
