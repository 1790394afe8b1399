package engine

import (
	"fmt"
	"math"
	"time"

	"github.com/zerotal/lock/drivers"
)

// ask is one acquire as the table takes it: every acquire there is, from
// a mutex of one key to a wait for a set of read locks.
type ask struct {
	keys  []string
	owner string
	ttl   time.Duration
	claim Claim
	// maxHold caps each new grant's total hold time (0: none; CapPending:
	// pending); a key owner holds keeps the cap it has, or starts it if
	// it is pending.
	maxHold time.Duration
	want    uint64 // the fence of the first new grant (see nextFence)
	wait    bool
	tag     *request // a live wait's caller
	into    []Grant  // room for the grants, when the caller has it (zeroed)
}

// forever is the TTL of a grant a live wait for several keys holds while
// it waits for the others (see group).
const forever = time.Duration(math.MaxInt64)

// group is a live wait queued for some of its keys: it holds the others
// meanwhile, with no deadline (a live caller always ends its wait through
// the loop, which then releases them) and their caps pending, and gets
// the TTL and the cap on every key at once when its last key is handed
// to it.
type group struct {
	owner   string
	ttl     time.Duration
	maxHold time.Duration
	keys    []string
	pending int // keys still waited for
}

// What acquire does with each key.
const (
	take uint8 = iota
	renew
	queue
)

// checkAsk refuses an acquire the table cannot take: no key, too many, an
// empty or repeated one, no owner, no TTL, a claim that is none.
func (t *table) checkAsk(a *ask) error {
	if len(a.keys) == 0 || len(a.keys) > drivers.MaxMultiKeys {
		return invalid("keys", fmt.Sprintf("must name between 1 and %d keys", drivers.MaxMultiKeys))
	}
	for i, k := range a.keys {
		if k == "" {
			return invalid("key", "empty")
		}
		for _, o := range a.keys[:i] {
			if o == k {
				return invalid("keys", fmt.Sprintf("key %q is named twice", k))
			}
		}
	}
	if a.owner == "" {
		return invalid("owner", "empty")
	}
	if err := checkTTL(a.ttl); err != nil {
		return err
	}
	if a.maxHold < 0 {
		return invalid("max_hold", "must not be negative")
	}
	if err := checkClaim(a.claim); err != nil {
		return err
	}
	return t.checkLimit(a.claim)
}

// acquire is the one acquire: it takes every key of a for its owner, as
// its claim says, or none, in one step. A key a.owner holds is refreshed
// (same fence); a free key, or one the claim fits beside its holders with
// nobody queued, gets a new grant. It first finds whether all can be
// taken, and only then changes the table, so a busy key leaves every
// other key as it was.
//
// Grants past their deadline are ended first, their waiters let in, as
// their expiry would: that is what keeps a table restorable (an expired
// holder queued behind its own key's waiters while still named its holder
// is a table no snapshot can carry). It happens by the command's time
// alone, so every replica does the same, and whatever the outcome: the
// hand-offs are an expiry's, not part of the acquire.
//
// Without wait a busy key refuses the lot (grant names its holder in the
// way). With wait it does not: the others are taken now and owner is
// queued FIFO for the busy ones, all in one step, so that every key's
// queue has the requests of several keys in the order they came: a
// request never overtakes an earlier one on any key, and two requests
// waiting for each other's keys cannot happen (whoever waits, waits for an
// earlier request).
//
// A wait for several keys that queues starts its cap when its last key
// comes: the keys it takes, and those handed to it later, have their
// caps pending until then. A live wait (a.tag) makes its partial holding
// a group: the keys taken have no deadline until the last comes. A
// replicated table gives every grant its TTL at once: the node serving
// the request keeps them alive, and its closing refresh starts the caps.
func (t *table) acquire(a *ask) outcome {
	if err := t.checkAsk(a); err != nil {
		return outcome{err: err}
	}
	var out outcome
	for _, k := range a.keys {
		if e := t.entries[k]; e != nil && e.claim() != (Claim{Kind: a.claim.Kind, Limit: a.claim.Limit}) {
			return outcome{err: kindMismatch(e, a.claim)}
		}
	}
	for _, k := range a.keys {
		if e := t.entries[k]; e != nil && e.first.deadline <= t.now {
			t.purge(e, a.want, &out)
		}
	}
	var plan [drivers.MaxMultiKeys]uint8
	need, queued, busy := 0, 0, Grant{}
	for i, k := range a.keys {
		e := t.entries[k]
		switch {
		case e == nil:
			need++
		case e.findHolder(a.owner) >= 0:
			if e.queue != nil && e.queue.kind == RWLock && e.queue.writer != a.claim.Write {
				out.err = invalid("claim", fmt.Sprintf("owner holds the %s side of %q; release it before taking the other", side(e.queue.writer), k))
				return out
			}
			plan[i] = renew
		case e.waiters() == 0 && t.fits(e, a.claim.Write):
			need++
		default:
			if queued == 0 {
				busy = e.blocker(a.claim.InTheWay())
			}
			out.grant = busy // also with an error below: the holder in the way
			if !a.wait {
				return out
			}
			if j := e.waiterIndex(a.owner); j >= 0 {
				if w := e.queue.line.item(j); w.write != a.claim.Write {
					out.err = invalid("claim", fmt.Sprintf("owner already waits for the %s side of %q", side(w.write), k))
				} else if len(a.keys) > 1 {
					out.err = errDupWaiter
				} else {
					out.queued, out.dup = true, true
				}
				return out
			}
			if t.maxWaiters > 0 && e.waiters() >= t.maxWaiters {
				out.err = fmt.Errorf("engine: waiter limit %d reached for key %q: %w", t.maxWaiters, k, drivers.ErrFull)
				return out
			}
			if e.claim().Kind != Mutex {
				need++
			}
			plan[i] = queue
			queued++
		}
	}
	if t.maxKeys > 0 && t.claims+need > t.maxKeys {
		out.err = t.errFull()
		return out
	}
	var g *group
	hold, maxHold := a.ttl, a.maxHold
	if queued > 0 && len(a.keys) > 1 && maxHold > 0 {
		maxHold = CapPending
	}
	if queued > 0 && a.tag != nil && len(a.keys) > 1 {
		g = &group{owner: a.owner, ttl: a.ttl, maxHold: a.maxHold, keys: a.keys, pending: queued}
		hold = forever
	}
	grants := a.into
	if cap(grants) < len(a.keys) {
		grants = make([]Grant, len(a.keys))
	}
	out.ok, out.queued, out.grants, out.g = queued == 0, queued > 0, grants[:len(a.keys)], g
	for i, k := range a.keys {
		e := t.entries[k]
		switch {
		case plan[i] == renew:
			j := e.findHolder(a.owner)
			t.startPending(e.holder(j), maxHold)
			out.grants[i] = t.refresh(e, j, hold)
		case plan[i] == queue:
			if e.queue == nil {
				e.queue = &waitQueue{}
			}
			e.queue.line.push(waiter{owner: a.owner, ttl: a.ttl, maxHold: maxHold, tag: a.tag, group: g, write: a.claim.Write})
			t.waiting++
			if e.queue.kind != Mutex {
				t.claims++
			}
		case e == nil:
			out.grants[i] = t.grant(t.newEntry(k, a.claim), a.owner, hold, a.claim.Write, a.want, maxHold)
		default:
			out.grants[i] = t.grant(e, a.owner, hold, a.claim.Write, a.want, maxHold)
		}
	}
	if out.ok {
		out.grant = out.grants[0]
	}
	// A grant let in above to owner itself (it was the head of a queue)
	// was refreshed since: it is told as it stands.
	for i, k := range a.keys {
		if plan[i] == renew && out.handoff {
			out.renewed(out.grants[i], k)
		}
	}
	return out
}

// renewed replaces the hand-off of key to g's owner, if any, by g.
func (o *outcome) renewed(g Grant, key string) {
	if o.next.Key == key && o.next.Owner == g.Owner {
		o.next = g
	}
	for i := range o.more {
		if h := &o.more[i]; h.g.Key == key && h.g.Owner == g.Owner {
			h.g = g
		}
	}
}

// groupStarts ends g's wait, its last key just handed to it in e: every
// other key of g starts its TTL now, and each it took its cap.
func (t *table) groupStarts(g *group, e *entry) {
	for _, k := range g.keys {
		en := t.entries[k]
		if en == nil || en == e {
			continue
		}
		if i := en.findHolder(g.owner); i >= 0 && en.holder(i).deadline == math.MaxInt64 {
			t.startPending(en.holder(i), g.maxHold)
			t.refresh(en, i, g.ttl)
		}
	}
}
