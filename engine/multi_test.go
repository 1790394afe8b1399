package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers"
)

func TestAcquireAll_TakesEveryKeyOrNone(t *testing.T) {
	e, clock := newLive(t, Config{})
	ctx := t.Context()
	mustAcquireOne(t, e, "b", "other", time.Minute)
	_, busy, ok, err := e.acquireSet(ctx, []string{"a", "b", "c"}, "me", time.Minute)
	if err != nil || ok {
		t.Fatalf("AcquireAll over a held key = %v %v, want refused", ok, err)
	}
	if busy.Key != "b" || busy.Owner != "other" {
		t.Fatalf("busy = %+v, want b held by other", busy)
	}
	for _, k := range []string{"a", "c"} {
		if _, held, _ := e.Get(ctx, k); held {
			t.Fatalf("%s is held after a refused AcquireAll", k)
		}
	}

	if ok, err := e.Release(ctx, "b", "other"); err != nil || !ok {
		t.Fatalf("Release b: %v %v", ok, err)
	}
	grants, _, ok, err := e.acquireSet(ctx, []string{"c", "a", "b"}, "me", time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireAll of free keys = %v %v", ok, err)
	}
	seen := map[uint64]bool{}
	for i, k := range []string{"c", "a", "b"} {
		g := grants[i]
		if g.Key != k || g.Owner != "me" || g.Fence == 0 || seen[g.Fence] {
			t.Fatalf("grant %d = %+v, want %s held by me with a fence of its own", i, g, k)
		}
		seen[g.Fence] = true
	}

	// The holder takes them again: a refresh, fences kept, deadlines moved.
	clock.Advance(10 * time.Second)
	again, _, ok, err := e.acquireSet(ctx, []string{"a", "b", "c"}, "me", time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireAll by the holder = %v %v", ok, err)
	}
	if again[0].Fence != grants[1].Fence || again[0].Deadline <= grants[1].Deadline {
		t.Fatalf("refresh of a = %+v, was %+v: want the same fence and a later deadline", again[0], grants[1])
	}
}

func TestAcquireAll_ExpiredKeyWithWaitersIsTheirs(t *testing.T) {
	tb := newTable(0, 0)
	tb.advance(100)
	tb.take("a", "old", 10, Claim{}, false)
	tb.take("a", "queued", 10, Claim{}, true)
	tb.advance(200) // a's grant has ended, but nothing has expired it yet
	out := tb.acquire(&ask{keys: []string{"a", "b"}, owner: "me", ttl: 10})
	if out.ok || out.grant.Key != "a" {
		t.Fatalf("acquireAll = %+v, want refused on a: its waiter comes first", out)
	}
	if _, held := tb.get("b"); held {
		t.Fatal("b taken by a refused acquireAll")
	}
}

func TestAcquireAll_RefusesBadInput(t *testing.T) {
	e, _ := newLive(t, Config{MaxKeys: 2})
	ctx := t.Context()
	many := make([]string, drivers.MaxMultiKeys+1)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	for name, c := range map[string]struct {
		keys  []string
		owner string
		ttl   time.Duration
		want  error
	}{
		"no keys":      {nil, "me", time.Second, drivers.ErrInvalid},
		"too many":     {many, "me", time.Second, drivers.ErrInvalid},
		"named twice":  {[]string{"a", "a"}, "me", time.Second, drivers.ErrInvalid},
		"empty key":    {[]string{"a", ""}, "me", time.Second, drivers.ErrInvalid},
		"no owner":     {[]string{"a"}, "", time.Second, drivers.ErrInvalid},
		"zero ttl":     {[]string{"a"}, "me", 0, drivers.ErrInvalid},
		"over MaxKeys": {[]string{"a", "b", "c"}, "me", time.Second, drivers.ErrFull},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, ok, err := e.acquireSet(ctx, c.keys, c.owner, c.ttl)
			if ok || !errors.Is(err, c.want) {
				t.Fatalf("AcquireAll = %v %v, want %v", ok, err, c.want)
			}
			if info, err := e.List(ctx, "", 0); err != nil || len(info) != 0 {
				t.Fatalf("keys held after a refused AcquireAll: %+v %v", info, err)
			}
		})
	}
}

func TestAcquireAll_SharedNameIsAKindMismatch(t *testing.T) {
	e, _ := newLive(t, Config{})
	ctx := t.Context()
	if _, ok, err := e.acquireClaim(ctx, "s", "x", time.Minute, Claim{Kind: Semaphore, Limit: 2}); err != nil || !ok {
		t.Fatalf("AcquireShared: %v %v", ok, err)
	}
	if _, _, ok, err := e.acquireSet(ctx, []string{"a", "s"}, "me", time.Minute); ok || !errors.Is(err, drivers.ErrInvalid) {
		t.Fatalf("AcquireAll over a semaphore = %v %v, want ErrInvalid", ok, err)
	}
	if _, held, _ := e.Get(ctx, "a"); held {
		t.Fatal("a taken by a refused AcquireAll")
	}
}
