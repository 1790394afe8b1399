package driverstest

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/zerotal/lock/drivers"
)

// farCap is a cap on total hold time no schedule reaches: a grant keeps
// it through every refresh, and the backend must carry it all the same.
func farCap(rng *rand.Rand) time.Duration {
	return long + time.Duration(rng.Int64N(int64(long)))
}

// capped is a hold-cap step: a takes a key with a cap of MaxHold, another
// owner may queue for it, and a refreshes it in a loop (an acquire asking
// another cap, then Extend) that would take it past the cap. The backend
// must keep it until the cap, end it there however it was refreshed, and
// serve the next waiter.
//
// The backend's cap lies between the model's (the grant at the model's
// time, lo) and the acquire's answer (hi), plus MaxHold: an answer that
// came before lo+MaxHold is judged as still held, a call made after
// hi+MaxHold as past the cap, and one in between not at all.
func (r *modelRun) capped(a *actor) bool {
	held := r.m.Held(a.owner)
	free := slices.DeleteFunc(slices.Clone(r.keys), func(k string) bool { return slices.Contains(held, k) })
	if a.wait != nil || len(free) == 0 {
		return false
	}
	if idle := slices.DeleteFunc(slices.Clone(free), func(k string) bool { _, ok := r.m.Holding(k); return ok }); len(idle) > 0 {
		free = idle // a key nobody holds, mostly: the cap is then reached
	}
	key, maxHold := free[r.rng.IntN(len(free))], r.opt.MaxHold
	q := drivers.Request{Keys: []string{key}, Owner: a.owner, TTL: long, Claim: r.f.claim(r.rng), MaxHold: maxHold}
	lo := r.start.Add(r.m.Now())
	want := r.m.Acquire(q)
	r.note("%s acquires %q as %v with a cap of %v: model %s", a.owner, key, q.Claim, maxHold, show(want))
	ctx, cancel := r.ctx()
	defer cancel()
	g, err := r.driver(a).Acquire(ctx, q)
	hi := time.Now()
	r.checkAcquire(q, want, g, err)
	if !want.Grant.Acquired {
		return true
	}
	if b := r.other(a, key); b != nil {
		r.send(b, drivers.Request{Keys: []string{key}, Owner: b.owner, TTL: long, Claim: r.f.claim(r.rng), MaxHold: farCap(r.rng), Wait: true})
	}

	// A refresh by an acquire asking another cap keeps the first.
	again := q
	again.MaxHold = farCap(r.rng)
	want = r.m.Acquire(again)
	r.note("%s acquires %q again with a cap of %v: model %s", a.owner, key, again.MaxHold, show(want))
	g2, err := r.driver(a).Acquire(ctx, again)
	switch {
	case time.Now().Before(lo.Add(maxHold)):
		r.checkAcquire(again, want, g2, err)
	case err != nil || !g2.Acquired || g2.Fence() != g.Fence():
		r.fail("%s's refresh of %q answered after the cap (%v): %+v, %v; ModelOptions.MaxHold must leave time for a call", a.owner, key, maxHold, g2, err)
	}

	// Extend in a loop until the backend's cap has surely passed.
	for n := 0; n < 64 && time.Now().Before(hi.Add(maxHold)); n++ {
		want := r.m.Extend(key, a.owner, long) // the model's time is before its cap
		ok, err := r.driver(a).Extend(ctx, key, a.owner, long)
		if err != nil || ok != want.OK && time.Now().Before(lo.Add(maxHold)) {
			r.fail("extend %q by %s before its cap: %v, %v; the model: %v", key, a.owner, ok, err, want.OK)
		}
		time.Sleep(maxHold / 8) // the pace of the refresh loop under test
	}
	r.note("%s's grant of %q reaches its cap", a.owner, key)
	r.until(hi.Add(maxHold + 10*time.Millisecond))
	want = r.m.Extend(key, a.owner, long)
	if ok, err := r.driver(a).Extend(ctx, key, a.owner, long); err != nil || ok != want.OK {
		r.fail("extend %q by %s past its cap of %v: %v, %v; the model: %v", key, a.owner, maxHold, ok, err, want.OK)
	}
	return true
}

// other is an actor of a live process, not a, with no wait under way and
// no grant of key: one that may queue for it.
func (r *modelRun) other(a *actor, key string) *actor {
	for _, i := range r.rng.Perm(len(r.actors)) {
		b := r.actors[i]
		if b != a && b.wait == nil && r.alive[b.proc] && !slices.Contains(r.m.Held(b.owner), key) {
			return b
		}
	}
	return nil
}
