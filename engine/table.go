package engine

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/zerotal/lock/drivers"
)

// table is the lock table: pure, deterministic and single-threaded. Every
// decision the engine makes is made here, from the arguments and the
// table's own state only, so the same calls in the same order give the
// same answers and the same fences on every node.
//
// Every key, whatever its kind, is one entry: its grants (holders.go),
// its FIFO queue and one admission rule (claim.go). A mutex is a name
// whose one slot is taken exclusively; a semaphore has Limit slots; a
// read/write lock has a slot per reader up to the holder cap, and a
// writer takes it exclusively.
//
// Invariant: every entry in the map is held (at least one grant) and
// sits in the deadline heap at its first grant's deadline. When its last
// grant ends the head of its queue is let in; with nobody waiting the
// entry is deleted.
type table struct {
	entries map[string]*entry
	heap    []*entry // every entry, ordered by (deadline, key)
	counter uint64   // the last fence issued
	waiting int      // queued waiters over all keys
	now     int64    // engine time, unix nanoseconds; never goes backwards
	// claims is what MaxKeys counts: every grant, and every waiter of a
	// name that can have several holders (let in without a check, it is
	// counted when it queues; a mutex's waiter takes the place of the
	// grant it follows).
	claims int

	maxKeys    int
	maxWaiters int
	maxHolders int // the holders of one shared name: a read beyond waits
	// changed, when set (a live engine), is told of every key whose
	// holders change.
	changed func(key string)

	// caps are the caps on total hold time of the grants that have one,
	// by fence (maxhold.go); nil while none has.
	caps map[uint64]int64

	spare []*entry // released entries kept for reuse, so churn does not allocate
}

// entry is one held key. It is kept at 64 bytes (one allocation class),
// a mutex's one grant inline; the queue lives behind a pointer because
// most keys never have one.
type entry struct {
	key   string
	first holder // the grant that ends first: the entry's deadline
	queue *waitQueue
	hidx  int // index in table.heap; -1 while not in it
}

// waitQueue is what a key has beyond its first grant: its waiters, its
// kind (a queue-less entry is a mutex) and its other grants.
type waitQueue struct {
	line   fifo // the waiters, in arrival order
	kind   Kind
	limit  uint32
	writer bool           // the one holder is a read/write lock's writer
	rest   []holder       // the other grants: the heap below first
	at     map[string]int // owner → holder index; nil while the set is short
}

// waiter is one owner queued for a key. tag is the blocked caller in live
// mode; the table carries it without looking at it (nil in replicated
// mode and in table tests).
type waiter struct {
	owner   string
	ttl     time.Duration
	maxHold time.Duration // the cap of its grant, from when it is made (0: none; CapPending: pending)
	tag     *request
	group   *group // a live wait for several keys at once
	write   bool   // a read/write lock's writer
}

// outcome is what a table operation decided.
type outcome struct {
	ok     bool
	queued bool
	// dup: the owner was already queued, nothing was added.
	dup bool
	// grant: after acquire/extend when ok (an acquire's first key); when
	// not ok, the holder in the way.
	grant Grant
	// grants: an acquire's, by key; a zero Grant for a key queued for.
	grants []Grant
	// handoff: the operation let the waiter tagged nextTag in, with next.
	handoff bool
	next    Grant
	nextTag *request
	// more: the further hand-offs of the same operation.
	more []handed
	g    *group // a live wait's for several keys, queued for some
	err  error
}

type handed struct {
	g   Grant
	tag *request
}

// handOff records the grant g handed to the waiter tagged tag.
func (o *outcome) handOff(g Grant, tag *request) {
	if !o.handoff {
		o.handoff, o.next, o.nextTag = true, g, tag
		return
	}
	o.more = append(o.more, handed{g, tag})
}

const maxSpare = 1024

func newTable(maxKeys, maxWaiters int) *table {
	return &table{
		entries:    make(map[string]*entry),
		maxKeys:    maxKeys,
		maxWaiters: maxWaiters,
		maxHolders: drivers.MaxHolders,
	}
}

// advance moves engine time to now unless that would go backwards.
func (t *table) advance(now int64) {
	if now > t.now {
		t.now = now
	}
}

// nextFence returns the fence for a new grant: want when it is above every
// fence issued so far, else the counter plus one.
func (t *table) nextFence(want uint64) uint64 {
	f := t.counter + 1
	if want > t.counter {
		f = want
	}
	t.counter = f
	return f
}

// deadlineAfter is t.now+ttl, saturating instead of overflowing.
func (t *table) deadlineAfter(ttl time.Duration) int64 {
	if int64(ttl) > math.MaxInt64-t.now {
		return math.MaxInt64
	}
	return t.now + int64(ttl)
}

func (e *entry) waiters() int {
	if e.queue == nil {
		return 0
	}
	return e.queue.line.len()
}

func invalid(field, reason string) error {
	return &drivers.InvalidError{Field: field, Reason: reason}
}

func checkKeyOwner(key, owner string) error {
	if key == "" {
		return invalid("key", "empty")
	}
	if owner == "" {
		return invalid("owner", "empty")
	}
	return nil
}

func checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return invalid("ttl", "must be positive")
	}
	return nil
}

// grant gives e a new grant to owner, with a new fence from want and a
// cap of maxHold from now (see startCap), and puts e in the heap or fixes
// its place there.
func (t *table) grant(e *entry, owner string, ttl time.Duration, write bool, want uint64, maxHold time.Duration) Grant {
	h := holder{owner: owner, fence: t.nextFence(want), deadline: t.deadlineAfter(ttl)}
	t.startCap(&h, maxHold)
	e.addHolder(h)
	if e.queue != nil {
		e.queue.writer = write
	}
	t.claims++
	if e.hidx < 0 {
		t.entries[e.key] = e
		t.heapPush(e)
	} else {
		t.heapFix(e)
	}
	t.changedKey(e.key)
	return h.grant(e.key)
}

// refresh gives owner's i-th grant of e a new deadline, same fence, never
// past its cap.
func (t *table) refresh(e *entry, i int, ttl time.Duration) Grant {
	h := e.holder(i)
	h.deadline = t.capped(h.fence, t.deadlineAfter(ttl))
	g := h.grant(e.key)
	e.fixHolder(i)
	t.heapFix(e)
	return g
}

// end ends e's i-th grant and lets the waiters in.
func (t *table) end(e *entry, i int, want uint64, out *outcome) {
	t.forgetCap(e.holder(i).fence)
	e.removeHolder(i)
	t.ended(e, 1, want, out)
}

// ended follows the end of n of e's grants: the waiters from the head are
// let in while they fit, and e is settled.
func (t *table) ended(e *entry, n int, want uint64, out *outcome) {
	t.claims -= n
	if n > 0 {
		t.changedKey(e.key)
	}
	t.admit(e, want, out)
	t.settle(e)
}

// admit lets waiters in from the head of e's queue while they fit. A
// waiter of a live wait for several keys holds forever, its cap pending,
// until its last key comes (see group).
func (t *table) admit(e *entry, want uint64, out *outcome) {
	q := e.queue
	for q != nil && q.line.len() > 0 && t.fits(e, q.line.head().write) {
		w := q.line.pop()
		t.unqueue(e)
		ttl, maxHold, g := w.ttl, w.maxHold, w.group
		if g != nil {
			if g.pending--; g.pending > 0 {
				ttl = forever
			} else {
				maxHold = g.maxHold
			}
		}
		out.handOff(t.grant(e, w.owner, ttl, w.write, want, maxHold), w.tag)
		if g != nil && g.pending == 0 {
			t.groupStarts(g, e)
		}
	}
}

// settle restores the invariants after e changed: an entry nobody holds
// is gone (nobody can be waiting then: admit lets the head of the queue
// into an empty name), a mutex's empty queue too, and e sits at its
// first grant's deadline in the heap.
func (t *table) settle(e *entry) {
	if e.holders() == 0 {
		if e.hidx >= 0 {
			t.heapRemove(e)
			delete(t.entries, e.key)
		}
		t.recycle(e)
		return
	}
	if q := e.queue; q != nil && q.kind == Mutex && q.line.len() == 0 {
		e.queue = nil
	}
	t.heapFix(e)
}

// purge ends e's grants that are past their deadline and lets waiters in.
func (t *table) purge(e *entry, want uint64, out *outcome) {
	t.forgetCaps(e, func(h *holder) bool { return h.deadline <= t.now })
	t.ended(e, e.endDue(t.now), want, out)
}

// release frees owner's grant of key if it has not passed its deadline; a
// late or foreign release is a no-op. The waiters that fit get it.
func (t *table) release(key, owner string, want uint64) outcome {
	if err := checkKeyOwner(key, owner); err != nil {
		return outcome{err: err}
	}
	e, i := t.liveHolder(key, owner)
	if i < 0 {
		return outcome{}
	}
	out := outcome{ok: true}
	t.end(e, i, want, &out)
	return out
}

// liveHolder finds owner's grant of key that has not passed its deadline:
// i is its index in e, or -1 if owner has none (e is nil if nobody holds
// key or waits for it).
func (t *table) liveHolder(key, owner string) (e *entry, i int) {
	e = t.entries[key]
	if e == nil {
		return nil, -1
	}
	i = e.findHolder(owner)
	if i >= 0 && e.holder(i).deadline <= t.now {
		i = -1
	}
	return e, i
}

// extend sets a new deadline if owner holds key and it has not expired. It
// never grants; refused, it names the holder whose grant ends first.
func (t *table) extend(key, owner string, ttl time.Duration) outcome {
	if err := checkKeyOwner(key, owner); err != nil {
		return outcome{err: err}
	}
	if err := checkTTL(ttl); err != nil {
		return outcome{err: err}
	}
	e, i := t.liveHolder(key, owner)
	if e == nil {
		return outcome{}
	}
	if i < 0 {
		return outcome{grant: e.first.grant(key)}
	}
	return outcome{ok: true, grant: t.refresh(e, i, ttl)}
}

// forceRelease ends every grant of key (even past its deadline) and lets
// the waiters in. ok reports whether there was an entry.
func (t *table) forceRelease(key string, want uint64) outcome {
	if key == "" {
		return outcome{err: invalid("key", "empty")}
	}
	e := t.entries[key]
	if e == nil {
		return outcome{}
	}
	out := outcome{ok: true}
	t.forgetCaps(e, func(*holder) bool { return true })
	t.ended(e, e.clearHolders(), want, &out)
	return out
}

// expire ends the grant (key, owner, expectFence) if it is still that exact
// grant and its deadline has passed in engine time; anything else (a
// refreshed, released or re-granted lock) makes it a no-op, so a stale
// expiry can never delete a live lock.
func (t *table) expire(key, owner string, expectFence, want uint64) outcome {
	e := t.entries[key]
	if e == nil {
		return outcome{}
	}
	i := e.findHolder(owner)
	if i < 0 || e.holder(i).fence != expectFence || e.holder(i).deadline > t.now {
		return outcome{}
	}
	out := outcome{ok: true}
	t.end(e, i, want, &out)
	return out
}

// cancelWait removes owner from key's queue; ok is false when it is not
// queued. The waiters behind it may then be let in.
func (t *table) cancelWait(key, owner string, want uint64) outcome {
	e := t.entries[key]
	i := -1
	if e != nil {
		i = e.waiterIndex(owner)
	}
	if i < 0 {
		return outcome{}
	}
	out := outcome{ok: true}
	t.dropWaiter(e, i, want, &out)
	return out
}

// cancelTag removes the waiter carrying tag from key's queue.
func (t *table) cancelTag(key string, tag *request, out *outcome) bool {
	e := t.entries[key]
	if e == nil {
		return false
	}
	i := e.waiterIndex(tag.owner)
	if i < 0 || e.queue.line.item(i).tag != tag {
		return false
	}
	t.dropWaiter(e, i, 0, out)
	return true
}

// dropWaiter removes e's i-th waiter and lets those behind it in.
func (t *table) dropWaiter(e *entry, i int, want uint64, out *outcome) {
	e.queue.line.removeAt(i)
	t.unqueue(e)
	t.admit(e, want, out)
	t.settle(e)
}

// unqueue counts a waiter of e gone from its queue.
func (t *table) unqueue(e *entry) {
	t.waiting--
	if e.queue.kind != Mutex {
		t.claims--
	}
}

// waiterIndex is owner's position in the queue, or -1.
func (e *entry) waiterIndex(owner string) int {
	if e.queue == nil {
		return -1
	}
	return e.queue.line.find(owner)
}

// changedKey tells the watchers of key, if any, that it changes hands.
func (t *table) changedKey(key string) {
	if t.changed != nil {
		t.changed(key)
	}
}

// expireDue ends every grant whose deadline is <= now (live mode), letting
// waiters in; it appends each outcome with hand-offs to out.
func (t *table) expireDue(out []outcome) []outcome {
	for len(t.heap) > 0 && t.heap[0].first.deadline <= t.now {
		var o outcome
		t.purge(t.heap[0], 0, &o)
		if o.handoff {
			out = append(out, o)
		}
	}
	return out
}

// newEntry is an empty entry for key, not yet in the map or the heap.
func (t *table) newEntry(key string, c Claim) *entry {
	var e *entry
	if n := len(t.spare); n > 0 {
		e = t.spare[n-1]
		t.spare[n-1] = nil
		t.spare = t.spare[:n-1]
	} else {
		e = new(entry)
	}
	e.key, e.hidx = key, -1
	if c.Kind != Mutex {
		e.queue = &waitQueue{kind: c.Kind, limit: c.Limit}
	}
	return e
}

func (t *table) recycle(e *entry) {
	*e = entry{}
	if len(t.spare) < maxSpare {
		t.spare = append(t.spare, e)
	}
}

// get describes key as the table holds it (an expired entry not yet purged
// is reported as it is, with its deadline).
func (t *table) get(key string) (Info, bool) {
	e := t.entries[key]
	if e == nil {
		return Info{}, false
	}
	return e.info(), true
}

// info describes e: Grant is its grant that ends first; a name that can
// have several holders also lists them all and its queue.
func (e *entry) info() Info {
	in := Info{Grant: e.first.grant(e.key), Waiters: e.waiters()}
	q := e.queue
	if q == nil {
		return in
	}
	var queue []QueuedWaiter
	if n := q.line.len(); n > 0 {
		queue = make([]QueuedWaiter, 0, n)
		for w := range q.line.all() {
			queue = append(queue, QueuedWaiter{Owner: w.owner, Write: w.write})
		}
	}
	if q.kind == Mutex {
		in.Queue = queue
		return in
	}
	hs := e.byFence()
	s := &Shared{Kind: q.kind, Limit: q.limit, Holders: make([]Grant, len(hs)), Writer: q.writer, Queue: queue}
	for i := range hs {
		s.Holders[i] = hs[i].grant(e.key)
	}
	in.Shared = s
	return in
}

// list returns the entries whose key starts with prefix, sorted by key, at
// most limit of them (limit <= 0: all). Every entry is in the deadline
// heap, a slice, which is quicker to walk than the map.
func (t *table) list(prefix string, limit int) []Info {
	keys := firstKeys(t.heap, prefix, limit)
	out := make([]Info, len(keys))
	for i, k := range keys {
		out[i] = t.entries[k].info()
	}
	return out
}

// waiterList returns every queued (key, owner), sorted by key then owner.
func (t *table) waiterList() []Waiter {
	out := make([]Waiter, 0, t.waiting)
	for k, e := range t.entries {
		if e.queue == nil {
			continue
		}
		for w := range e.queue.line.all() {
			out = append(out, Waiter{Key: k, Owner: w.owner})
		}
	}
	slices.SortFunc(out, func(a, b Waiter) int {
		if c := strings.Compare(a.Key, b.Key); c != 0 {
			return c
		}
		return strings.Compare(a.Owner, b.Owner)
	})
	return out
}

// due returns up to limit grants whose deadline is <= now, sorted by
// deadline then key (limit <= 0: all). It walks the heap best-first, so
// its cost depends on the answer, not on the table size.
func (t *table) due(now int64, limit int) []Grant {
	out := make([]Grant, 0)
	if len(t.heap) == 0 || t.heap[0].first.deadline > now {
		return out
	}
	// frontier is a small min-heap of heap indices still to visit.
	frontier := []int{0}
	less := func(a, b int) bool { return entryLess(t.heap[a], t.heap[b]) }
	for len(frontier) > 0 && (limit <= 0 || len(out) < limit) {
		i := frontier[0]
		last := len(frontier) - 1
		frontier[0] = frontier[last]
		frontier = frontier[:last]
		siftDownInts(frontier, 0, less)
		out = t.heap[i].dueHolders(now, out)
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(t.heap) && t.heap[c].first.deadline <= now {
				frontier = append(frontier, c)
				siftUpInts(frontier, len(frontier)-1, less)
			}
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit] // a name's due holders came together
	}
	return out
}

// nextDeadline is the earliest deadline in the table.
func (t *table) nextDeadline() (int64, bool) {
	if len(t.heap) == 0 {
		return 0, false
	}
	return t.heap[0].first.deadline, true
}

// applyCommand advances engine time to c.Now and applies c.
func (t *table) applyCommand(c *Command) Result {
	t.advance(c.Now)
	var o outcome
	switch c.Op {
	case OpAcquire, OpAcquireKeys:
		a := ask{keys: c.Keys, owner: c.Owner, ttl: c.TTL, maxHold: c.MaxHold, claim: c.Claim, want: c.Fence, wait: c.Wait}
		if c.Op == OpAcquire {
			// v0.1.0's entry 1: a mutex of one key, answered as the one
			// acquire of that key is.
			a.keys, a.claim = []string{c.Key}, Claim{}
		}
		o = t.acquire(&a)
	case OpRelease:
		o = t.release(c.Key, c.Owner, c.Fence)
	case OpExtend:
		o = t.extend(c.Key, c.Owner, c.TTL)
	case OpForceRelease:
		o = t.forceRelease(c.Key, c.Fence)
	case OpExpire:
		o = t.expire(c.Key, c.Owner, c.ExpectFence, c.Fence)
	case OpCancelWait:
		o = t.cancelWait(c.Key, c.Owner, c.Fence)
	case OpTick:
		o.ok = true
	default:
		o.err = invalid("op", fmt.Sprintf("unknown operation %d", c.Op))
	}
	return o.result()
}

// result is o as a replicated command's Result.
func (o *outcome) result() Result {
	res := Result{OK: o.ok, Queued: o.queued, Grant: o.grant, Grants: o.grants, Err: o.err}
	if o.handoff {
		res.Handoffs = make([]Grant, 1, 1+len(o.more))
		res.Handoffs[0] = o.next
		for _, h := range o.more {
			res.Handoffs = append(res.Handoffs, h.g)
		}
	}
	return res
}
