package engine

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/zerotal/lock/drivers"
)

// multiOutcome is what acquireAll decided: every grant, in the order of
// the keys, or the key that was busy and its holder's grant.
type multiOutcome struct {
	ok     bool
	queued bool    // acquireAllWait: owner waits for some keys, and holds the others (grants)
	grants []Grant // by key; for a wait, the keys taken now (zero for the others)
	busy   Grant   // the holder of the first busy key found (Key names it)
	// handed: the keys whose grant had run out with waiters queued, handed
	// to the first of them before anything else (whatever the outcome).
	handed outcome
	err    error
}

// checkKeys refuses a set of keys that acquireAll cannot take: none, too
// many, an empty or repeated one.
func checkKeys(keys []string) error {
	if len(keys) == 0 || len(keys) > drivers.MaxMultiKeys {
		return invalid("keys", fmt.Sprintf("must name between 1 and %d keys", drivers.MaxMultiKeys))
	}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if k == "" {
			return invalid("key", "empty")
		}
		if _, dup := seen[k]; dup {
			return invalid("keys", fmt.Sprintf("key %q is named twice", k))
		}
		seen[k] = struct{}{}
	}
	return nil
}

// AcquireAll takes every key for owner for ttl in one step, refreshing
// those owner holds already, and returns the grants in the order of keys.
// When another owner holds any of them nothing changes: ok is false and
// busy is that key's holder's grant (busy.Key names it). The keys must be
// distinct, at most drivers.MaxMultiKeys.
//
// ctx is heeded until the command reaches the engine, as for Acquire.
func (e *Engine) AcquireAll(ctx context.Context, keys []string, owner string, ttl time.Duration) (grants []Grant, busy Grant, ok bool, err error) {
	r := newReq(kAcquireAll, "", owner, ttl)
	r.keys = keys
	if err := e.settle(ctx, r); err != nil {
		return nil, Grant{}, false, err
	}
	grants, busy, ok, err = r.grants, r.grant, r.ok, r.err
	putReq(r)
	return grants, busy, ok && err == nil, err
}

// group is a live AcquireAllWait queued for some of its keys: it holds
// the others meanwhile, with no deadline (a live caller always ends its
// wait through the loop, which then releases them), and gets the TTL on
// every key at once when its last key is handed to it.
type group struct {
	owner   string
	ttl     time.Duration
	keys    []string
	pending int // keys still waited for
}

// handedToGroup is handOn's part for a key handed to g: held with no
// deadline while g waits for more, or the end of g's wait, when every key
// of g starts its TTL now.
func (t *table) handedToGroup(g *group, e *entry) {
	g.pending--
	if g.pending > 0 {
		e.deadline = math.MaxInt64
		return
	}
	for _, k := range g.keys {
		if en := t.entries[k]; en != nil && en != e && en.owner == g.owner && en.deadline == math.MaxInt64 {
			en.deadline = t.deadlineAfter(g.ttl)
			t.heapFix(en)
		}
	}
}

// acquireAll takes every key for owner for ttl, refreshing those owner
// holds, in one step: it first finds whether all can be taken, and only
// then changes the table, so a busy key leaves every other key as it was.
// A key is busy when another owner holds it and its deadline has not
// passed. A key whose deadline has passed with waiters queued is first
// handed to the head of its queue, as its expiry would, and is then busy
// like any other (or owner's, when owner was that head): that is what
// acquire does too, and it is what keeps a table restorable — an expired
// holder queued behind its own key's waiters while still named its holder
// is a table no snapshot can carry. It happens in this step, by the
// command's time alone, so every replica does the same, and whatever the
// outcome: the hand-offs are an expiry's, not part of the set. The first
// new grant's fence comes from want, as for acquire; the next ones follow
// the counter.
//
// Without wait a busy key refuses the lot (busy names it). With wait it
// does not: the others are taken now and owner is queued FIFO for the
// busy ones, all in one step, so that every key's queue has the requests
// of several keys in the order they came: a request never overtakes an
// earlier one on any key, and two requests waiting for each other's keys
// cannot happen (whoever waits, waits for an earlier request).
//
// live (the live engine, tag the caller) makes such a partial holding a
// group: the keys taken while others are waited for have no deadline
// until the last comes (see group). A replicated table gives every grant
// its TTL at once: the node serving the request keeps them alive.
func (t *table) acquireAll(keys []string, owner string, ttl time.Duration, want uint64, wait bool, tag *request, live bool) (multiOutcome, *group) {
	if err := checkKeys(keys); err != nil {
		return multiOutcome{err: err}, nil
	}
	if owner == "" {
		return multiOutcome{err: invalid("owner", "empty")}, nil
	}
	if err := checkTTL(ttl); err != nil {
		return multiOutcome{err: err}, nil
	}
	var out multiOutcome
	for _, k := range keys {
		if e := t.entries[k]; e != nil && !e.isShared() && e.deadline <= t.now && e.waiters() > 0 {
			var o outcome
			t.handOn(e, want, &o)
			out.handed.handOff(o.next, o.nextTag)
		}
	}
	fresh, queued, queue := 0, 0, make([]bool, len(keys))
	for i, k := range keys {
		e := t.entries[k]
		switch {
		case e == nil:
			fresh++
		case e.isShared():
			return multiOutcome{err: kindMismatch(e, Claim{}), handed: out.handed}, nil
		case e.deadline <= t.now:
			// Expired with nobody queued (hand-offs came first): free.
		case e.owner == owner:
		case !wait:
			return multiOutcome{busy: e.grant(), handed: out.handed}, nil
		case e.waiterIndex(owner) >= 0:
			return multiOutcome{err: errDupWaiter, handed: out.handed}, nil
		case t.maxWaiters > 0 && e.waiters() >= t.maxWaiters:
			return multiOutcome{err: fmt.Errorf("engine: waiter limit %d reached for key %q: %w", t.maxWaiters, k, drivers.ErrFull), handed: out.handed}, nil
		default:
			if queued == 0 {
				out.busy = e.grant()
			}
			queue[i] = true
			queued++
		}
	}
	if t.maxKeys > 0 && t.claims+fresh > t.maxKeys {
		return multiOutcome{err: t.errFull(), handed: out.handed}, nil
	}
	var g *group
	hold := ttl
	if queued > 0 && live {
		g = &group{owner: owner, ttl: ttl, keys: keys, pending: queued}
		hold = math.MaxInt64
	}
	out.ok, out.queued, out.grants = queued == 0, queued > 0, make([]Grant, len(keys))
	for i, k := range keys {
		if !queue[i] {
			// Found free, expired without waiters, or owner's: acquire
			// grants or refreshes it, with no hand-off.
			out.grants[i] = t.acquire(k, owner, hold, want, false, nil).grant
			continue
		}
		e := t.entries[k]
		if e.queue == nil {
			e.queue = &waitQueue{}
		}
		e.queue.line.push(waiter{owner: owner, ttl: ttl, tag: tag, group: g})
		t.waiting++
	}
	return out, g
}

// AcquireAllWait is AcquireAll that waits instead of refusing: the free
// keys are taken at once and owner is queued FIFO for the busy ones, all
// in one step, and it returns when the last of them is handed over, with
// every grant (their TTL counted from then), in the order of keys.
// Meanwhile the keys taken are held with no deadline, so none can lapse
// while the others are waited for; every queue sees the requests in the
// order they came, so a request never overtakes an earlier one on any of
// its keys, and requests naming the same keys in any order never wait
// for each other in a circle.
//
// A key it took while waiting that is forced free meanwhile breaks the
// set: it is then answered a *drivers.NotAcquiredError naming that key,
// having let go of the others.
//
// When ctx ends first it returns ctx.Err() and busy, the holder of the
// first key still waited for: the places are withdrawn and the keys held
// released, including a last hand-off that crossed the cancellation, so
// a cancelled wait never leaves a key behind.
func (e *Engine) AcquireAllWait(ctx context.Context, keys []string, owner string, ttl time.Duration) (grants []Grant, busy Grant, err error) {
	r := newReq(kAcquireAllWait, "", owner, ttl)
	r.keys = keys
	if err := e.send(ctx, r); err != nil {
		return nil, Grant{}, err
	}
	if e.sentAfterClose() {
		if err := e.closedReply(r); err != nil {
			return nil, Grant{}, err
		}
	} else {
		select {
		case <-r.reply:
		case <-ctx.Done():
			return nil, e.withdraw(r), ctx.Err()
		}
	}
	grants, err = r.grants, r.err
	putReq(r)
	if err != nil {
		return nil, Grant{}, err
	}
	return grants, Grant{}, nil
}

// acquireKeys applies an OpAcquireKeys.
func (t *table) acquireKeys(c *Command) Result {
	if err := checkKeys(c.Keys); err != nil {
		return Result{Err: err}
	}
	if err := checkClaim(c.Claim); err != nil {
		return Result{Err: err}
	}
	if len(c.Keys) == 1 {
		var o outcome
		if c.Claim == (Claim{}) {
			o = t.acquire(c.Keys[0], c.Owner, c.TTL, c.Fence, c.Wait, nil)
		} else {
			o = t.acquireShared(c.Keys[0], c.Owner, c.TTL, c.Claim, c.Fence, c.Wait, nil)
		}
		res := o.result()
		if o.err == nil {
			res.Grants = make([]Grant, 1)
		}
		if o.ok {
			res.Grants[0] = o.grant
		}
		return res
	}
	if c.Claim != (Claim{}) {
		return Result{Err: invalid("claim", "a set of keys is taken as mutexes")}
	}
	m, _ := t.acquireAll(c.Keys, c.Owner, c.TTL, c.Fence, c.Wait, nil, false)
	o := m.handed
	o.ok, o.queued, o.grant, o.err = m.ok, m.queued, m.busy, m.err
	if m.ok {
		o.grant = m.grants[0]
	}
	res := o.result()
	res.Grants = m.grants
	return res
}
