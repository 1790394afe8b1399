package redis_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
	"github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
	"github.com/zerotal/lock/internal/testkit/holdcap"
)

// The cap on total hold time (drivers.Request.MaxHold), enforced by the
// scripts: these tests hold through the driver, with the waiter in
// another OS process, as the deployments the cap is for have them.

// A holder that refreshes in a loop, by Extend or by an Acquire of the key
// it holds, loses it at its cap, not before and not after by more than a
// refresh, and the waiter of another process gets it then.
func TestMaxHold_RefreshLoopLosesTheKeyAtTheCap(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	for _, r := range holdcap.Refreshes {
		t.Run(r.Name, func(t *testing.T) {
			key := newKey("capped")
			c := startChild(t, srv, "waiter")
			fence := holdcap.LoseAtCap(t, d, key, token(), r, func() {
				queueChildren(t, srv, key, time.Minute, []*child{c})
			})
			if f := gotFences(t, []*child{c}, 20*time.Second); f[0] <= fence {
				t.Fatalf("the waiter got fence %d; want above the capped holder's %d", f[0], fence)
			}
		})
	}
}

// childCapped: for each line "wait <key> <ttl ms> <max hold ms>" it is
// the capped holder of holdcap.HoldUntilLost, waiting for the key.
func childCapped(ctx context.Context, d *redis.Driver) error {
	return eachLine(func(line string) error {
		var key string
		var ttl, maxHold int64
		if _, err := fmt.Sscanf(line, "wait %s %d %d", &key, &ttl, &maxHold); err != nil {
			return fmt.Errorf("bad command %q: %w", line, err)
		}
		return holdcap.HoldUntilLost(ctx, d, drivers.Request{Keys: []string{key}, Owner: token(), TTL: time.Duration(ttl) * time.Millisecond,
			MaxHold: time.Duration(maxHold) * time.Millisecond, Wait: true}, os.Stdout)
	})
}

// A waiter's cap counts from its grant, not from its request: a waiter of
// another process, let in by this process's release after it waited
// longer than its cap, holds the key for its cap from then.
func TestMaxHold_WaiterOfAnotherProcessIsCappedFromItsGrant(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	c := startChild(t, srv, "capped")
	key, owner := newKey("capped-waiter"), token()
	mustAcquire(t, d, key, owner, time.Minute)
	c.send("wait %s %d %d", key, holdcap.TTL.Milliseconds(), holdcap.Cap.Milliseconds())
	waitSubscribers(t, srv, key, 1)
	// The key stays held past the waiter's cap, counted from its request.
	<-time.After(holdcap.Cap + holdcap.TTL)
	if ok, err := d.Release(t.Context(), key, owner); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if l := c.line(20 * time.Second); !strings.HasPrefix(l, "got ") {
		t.Fatalf("the capped waiter said %q; want its grant", l)
	}
	var held int64
	l := c.line(holdcap.Cap + 20*time.Second)
	if _, err := fmt.Sscanf(l, "lost %d", &held); err != nil {
		t.Fatalf("the capped waiter said %q; want it to lose the key at its cap, %v after its grant", l, holdcap.Cap)
	}
	if h := time.Duration(held) * time.Millisecond; h < holdcap.Cap/2 || h > holdcap.Cap+holdcap.Late {
		t.Fatalf("the waiter held the key %v from its grant; want its cap, %v (counted from the grant, not the request), within %v", h, holdcap.Cap, holdcap.Late)
	}
}

// A grant records its cap in the key's hash only when it has one: a grant
// without a cap writes what it wrote before the cap existed.
func TestMaxHold_GrantRecordsACapOnlyWhenItHasOne(t *testing.T) {
	srv := redistest.Start(t)
	d := open(t, srv)
	for _, tc := range []struct {
		maxHold time.Duration
		parts   int
	}{{0, 3}, {holdcap.Cap, 4}} {
		key, owner := newKey("layout"), token()
		g, err := d.Acquire(t.Context(), drivers.Request{Keys: []string{key}, Owner: owner, TTL: time.Hour, MaxHold: tc.maxHold})
		if err != nil || !g.Acquired {
			t.Fatalf("Acquire = %+v, %v", g, err)
		}
		lk, _, _ := redis.KeyNames(key)
		v, err := srv.Client().HGet(t.Context(), lk, "h:"+owner).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(strings.Split(v, ":")); n != tc.parts {
			t.Fatalf("MaxHold %v: the grant's field is %q; want %d parts", tc.maxHold, v, tc.parts)
		}
		h, ok, err := d.Inspect(t.Context(), key)
		if err != nil || !ok || len(h.Holders) != 1 {
			t.Fatalf("Inspect = %+v, %v, %v", h, ok, err)
		}
		if tc.maxHold > 0 && h.Holders[0].Remaining > tc.maxHold {
			t.Fatalf("a grant for an hour capped at %v has %v left; want at most its cap", tc.maxHold, h.Holders[0].Remaining)
		}
	}
}

// A set's cap starts when its last key comes, as its TTL does.
func TestMaxHold_SetCapStartsWithItsLastKey(t *testing.T) {
	srv := redistest.Start(t)
	holdcap.SetCapStartsWithItsLastKey(t, open(t, srv), open(t, srv), newKey("set-1"), newKey("set-2"))
}
