package engine

import (
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers"
)

// Shared names: semaphores and read/write locks. Their entry keeps its
// holders and waiters in its waitQueue (kind != Mutex), and its deadline
// is the earliest of its holders', so the one heap serves every kind.
//
// The rules, for both kinds:
//   - FIFO: an acquire is granted at once only when nobody waits and it
//     fits; otherwise it queues (or is refused without wait). The head of
//     the queue is served first, and nobody behind it is granted while it
//     waits, even one that would fit: a waiting writer stops new readers,
//     and no waiter is ever overtaken by a later one.
//   - fits: a semaphore slot while fewer than Limit hold it; a read while
//     no writer holds it and fewer than the table's holder cap
//     (Config.MaxHoldersPerKey) do; a write while nobody holds it. A
//     reader beyond the cap meets a busy key, as at a full semaphore: it
//     is refused as contention, or waits its turn.
//   - a semaphore's Limit is at most the holder cap (above it: ErrInvalid),
//     and every holder and every waiter of a shared name counts towards
//     MaxKeys, as the grant it is or will be: what the table holds stays
//     bounded by MaxKeys and MaxWaitersPerKey whatever its kinds.
//   - every grant gets its own fence, strictly increasing per table; a
//     refresh by a holder keeps its fence; one owner holds one grant of a
//     name (asking for the other side of a read/write lock while holding
//     one is refused: release first).
//   - when a grant ends (release, expiry, force release) or a waiter
//     leaves, the waiters from the head are let in while they fit.
//   - a holder past its deadline is ended whenever its name is acquired,
//     as a live expiry would: the expired are never counted as holders.

// holder is one grant of a shared name.
type holder struct {
	owner    string
	fence    uint64
	deadline int64
	write    bool
}

func (h holder) grant(key string) Grant {
	return Grant{Key: key, Owner: h.owner, Fence: h.fence, Deadline: h.deadline}
}

func (e *entry) isShared() bool { return e.queue != nil && e.queue.kind != Mutex }

// checkClaim reports a claim that cannot be served: a mutex has none.
func checkClaim(c Claim) error {
	if c == (Claim{}) {
		return nil // a mutex
	}
	return c.CheckShared()
}

// checkLimit refuses a semaphore whose limit is above the table's cap.
func (t *table) checkLimit(c Claim) error {
	if c.Kind == Semaphore && c.Limit > uint32(t.maxHolders) {
		return invalid("claim", fmt.Sprintf("a semaphore of %d is above this table's cap of %d holders per key", c.Limit, t.maxHolders))
	}
	return nil
}

// full reports whether the table holds as many grants (and waiters of
// shared names) as MaxKeys allows.
func (t *table) full() bool { return t.maxKeys > 0 && t.claims >= t.maxKeys }

func (t *table) errFull() error {
	return fmt.Errorf("engine: key limit %d reached: %w", t.maxKeys, drivers.ErrFull)
}

// kindMismatch is the error for claim c on e, a name of another kind or
// limit.
func kindMismatch(e *entry, c Claim) error {
	var held Claim
	if e.queue != nil {
		held = Claim{Kind: e.queue.kind, Limit: e.queue.limit}
	}
	return drivers.KindMismatch(e.key, held.Describe(), c)
}

// acquireShared is acquire of a semaphore or read/write lock.
func (t *table) acquireShared(key, owner string, ttl time.Duration, c Claim, fence uint64, wait bool, tag *request) outcome {
	if err := checkKeyOwner(key, owner); err != nil {
		return outcome{err: err}
	}
	if err := checkTTL(ttl); err != nil {
		return outcome{err: err}
	}
	if err := checkClaim(c); err != nil {
		return outcome{err: err}
	}
	if c.Kind == Mutex {
		return t.acquire(key, owner, ttl, fence, wait, tag)
	}
	if err := t.checkLimit(c); err != nil {
		return outcome{err: err}
	}
	e := t.entries[key]
	if e == nil {
		if t.full() {
			return outcome{err: t.errFull()}
		}
		e = t.newEntry(key)
		e.queue = &waitQueue{kind: c.Kind, limit: c.Limit}
		t.entries[key] = e
		h := t.addHolder(e, owner, ttl, c.Write, fence)
		t.claims++
		e.deadline = h.Deadline // its heap key, before its push
		t.heapPush(e)
		return outcome{ok: true, grant: h}
	}
	if !e.isShared() || e.queue.kind != c.Kind || e.queue.limit != c.Limit {
		return outcome{err: kindMismatch(e, c)}
	}
	var out outcome
	t.purgeShared(e, fence, &out)
	t.contendShared(e, owner, ttl, c, fence, wait, tag, &out)
	t.settleShared(e)
	return out
}

// contendShared is acquireShared of a name with no expired holder.
func (t *table) contendShared(e *entry, owner string, ttl time.Duration, c Claim, fence uint64, wait bool, tag *request, out *outcome) {
	q := e.queue
	if i := q.holders.find(owner); i >= 0 {
		h := q.holders.item(i)
		if h.write != c.Write {
			out.err = invalid("claim", fmt.Sprintf("owner holds the %s side of %q; release it before taking the other", side(h.write), e.key))
			return
		}
		h.deadline = t.deadlineAfter(ttl)
		out.ok, out.grant = true, h.grant(e.key)
		q.holders.fix(i)
		return
	}
	if q.line.len() == 0 && t.fits(e, c.Write) {
		if t.full() {
			out.err = t.errFull()
			return
		}
		out.ok, out.grant = true, t.addHolder(e, owner, ttl, c.Write, fence)
		t.claims++
		return
	}
	out.grant = e.blocker(c.InTheWay())
	if !wait {
		return
	}
	if i := e.waiterIndex(owner); i >= 0 {
		if w := q.line.item(i); w.write != c.Write {
			out.err = invalid("claim", fmt.Sprintf("owner already waits for the %s side of %q", side(w.write), e.key))
			return
		}
		out.queued, out.dup = true, true
		return
	}
	if t.maxWaiters > 0 && q.line.len() >= t.maxWaiters {
		out.err = fmt.Errorf("engine: waiter limit %d reached for key %q: %w", t.maxWaiters, e.key, drivers.ErrFull)
		return
	}
	if t.full() {
		out.err = t.errFull()
		return
	}
	q.line.push(waiter{owner: owner, ttl: ttl, tag: tag, write: c.Write})
	t.waiting++
	t.claims++
	out.queued = true
}

func side(write bool) string {
	if write {
		return "write"
	}
	return "read"
}

// fits reports whether a grant of the given side may join e's holders.
func (t *table) fits(e *entry, write bool) bool {
	q := e.queue
	n := q.holders.len()
	switch {
	case q.kind == Semaphore:
		return uint32(n) < q.limit
	case write:
		return n == 0
	default:
		// With a writer it is the only holder, so the first is it.
		return n == 0 || (!q.holders.first().write && n < t.maxHolders)
	}
}

// blocker is the grant a refused acquire is told of (see
// drivers.Claim.InTheWay): the holder whose deadline comes first (the
// lowest fence among equals), or with last the one whose deadline comes
// last (the highest fence among equals). Only the first is kept at hand;
// the last costs a look at every holder, which only a refused write pays
// (at most drivers.MaxHolders, who are all readers).
func (e *entry) blocker(last bool) Grant {
	q := e.queue
	if q.holders.len() == 0 {
		return Grant{Key: e.key}
	}
	if !last {
		return q.holders.first().grant(e.key)
	}
	h := q.holders.item(0)
	for i := 1; i < q.holders.len(); i++ {
		if x := q.holders.item(i); x.deadline > h.deadline || x.deadline == h.deadline && x.fence > h.fence {
			h = x
		}
	}
	return h.grant(e.key)
}

// addHolder grants e to owner with a new fence. The caller settles e and
// counts the grant (admit's came from a waiter, already counted).
func (t *table) addHolder(e *entry, owner string, ttl time.Duration, write bool, fence uint64) Grant {
	h := holder{owner: owner, fence: t.nextFence(fence), deadline: t.deadlineAfter(ttl), write: write}
	e.queue.holders.add(h)
	return h.grant(e.key)
}

// admit lets waiters in from the head of e's queue while they fit.
func (t *table) admit(e *entry, fence uint64, out *outcome) {
	q := e.queue
	for q.line.len() > 0 && t.fits(e, q.line.head().write) {
		w := q.line.pop()
		t.waiting--
		out.handOff(t.addHolder(e, w.owner, w.ttl, w.write, fence), w.tag)
	}
}

// dropHolder ends e's i-th grant (in the order of its holder set).
func (t *table) dropHolder(e *entry, i int) {
	e.queue.holders.removeAt(i)
	t.claims--
}

// purgeShared ends e's grants that are past their deadline and lets
// waiters in.
func (t *table) purgeShared(e *entry, fence uint64, out *outcome) {
	if n := e.queue.holders.endDue(t.now); n > 0 {
		t.claims -= n
		t.admit(e, fence, out)
	}
}

// settleShared restores the invariants after e changed: its deadline is
// its earliest holder's, and an entry nobody holds is gone (nobody can be
// waiting then: admit lets the head of the queue into an empty name).
func (t *table) settleShared(e *entry) {
	q := e.queue
	if q.holders.len() == 0 {
		t.heapRemove(e)
		delete(t.entries, e.key)
		t.recycle(e)
		return
	}
	if d := q.holders.first().deadline; d != e.deadline {
		e.deadline = d
		t.heapFix(e)
	}
}

func (t *table) releaseShared(e *entry, owner string, fence uint64) outcome {
	i := e.queue.holders.find(owner)
	if i < 0 || e.queue.holders.item(i).deadline <= t.now {
		return outcome{}
	}
	out := outcome{ok: true}
	t.dropHolder(e, i)
	t.admit(e, fence, &out)
	t.settleShared(e)
	return out
}

func (t *table) extendShared(e *entry, owner string, ttl time.Duration) outcome {
	i := e.queue.holders.find(owner)
	if i < 0 || e.queue.holders.item(i).deadline <= t.now {
		return outcome{grant: e.blocker(false)}
	}
	h := e.queue.holders.item(i)
	h.deadline = t.deadlineAfter(ttl)
	g := h.grant(e.key)
	e.queue.holders.fix(i)
	t.settleShared(e)
	return outcome{ok: true, grant: g}
}

// forceShared ends every grant of e and lets the waiters in.
func (t *table) forceShared(e *entry, fence uint64) outcome {
	out := outcome{ok: true}
	t.claims -= e.queue.holders.len()
	e.queue.holders.clear()
	t.admit(e, fence, &out)
	t.settleShared(e)
	return out
}

// expireShared ends the grant (owner, expectFence) if it is still there
// and past its deadline.
func (t *table) expireShared(e *entry, owner string, expectFence, fence uint64) outcome {
	i := e.queue.holders.find(owner)
	if i < 0 || e.queue.holders.item(i).fence != expectFence || e.queue.holders.item(i).deadline > t.now {
		return outcome{}
	}
	out := outcome{ok: true}
	t.dropHolder(e, i)
	t.admit(e, fence, &out)
	t.settleShared(e)
	return out
}

// dueHolders appends e's grants whose deadline is <= now, soonest first.
func (e *entry) dueHolders(now int64, out []Grant) []Grant {
	return e.queue.holders.due(now, e.key, out)
}

// sharedInfo describes a shared name: Grant is its holder with the
// earliest deadline.
func (e *entry) sharedInfo() Info {
	q := e.queue
	hs := q.holders.byFence()
	s := &Shared{Kind: q.kind, Limit: q.limit, Holders: make([]Grant, len(hs))}
	for i, h := range hs {
		s.Holders[i] = h.grant(e.key)
		s.Writer = s.Writer || h.write
	}
	if n := q.line.len(); n > 0 {
		s.Queue = make([]QueuedWaiter, 0, n)
		for w := range q.line.all() {
			s.Queue = append(s.Queue, QueuedWaiter{Owner: w.owner, Write: w.write})
		}
	}
	return Info{Grant: e.blocker(false), Waiters: q.line.len(), Shared: s}
}

func cmpFence(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
