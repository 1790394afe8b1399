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
// Invariant: every entry in the map is held (owner != "") and sits in the
// deadline heap. A release with waiters hands the entry on; without
// waiters it deletes it.
type table struct {
	entries map[string]*entry
	heap    []*entry // every entry, ordered by (deadline, key)
	counter uint64   // the last fence issued
	waiting int      // queued waiters over all keys
	now     int64    // engine time, unix nanoseconds; never goes backwards
	// claims is what MaxKeys counts: every mutex's key, and every holder
	// and waiter of a shared name (a waiter is let in without a check, so
	// it is counted when it queues).
	claims int

	maxKeys    int
	maxWaiters int
	maxHolders int // the holders of one shared name: a read beyond waits
	// changed, when set (a live engine), is told of every key whose
	// mutex changes hands.
	changed func(key string)

	spare []*entry // released entries kept for reuse, so churn does not allocate
}

// entry is one held key. It is kept at 64 bytes (one allocation class);
// the wait queue lives behind a pointer because most keys never have one.
type entry struct {
	key      string
	owner    string
	fence    uint64
	deadline int64
	queue    *waitQueue
	hidx     int // index in table.heap
}

// waitQueue is a mutex's queue, or everything of a shared name beyond
// its key: its kind, its holders and its queue (see shared.go).
type waitQueue struct {
	line    fifo // the waiters, in arrival order
	kind    Kind
	limit   uint32
	holders holderSet // a shared name's grants
}

// waiter is one owner queued for a key. tag is the blocked caller in live
// mode; the table carries it without looking at it (nil in replicated
// mode and in table tests).
type waiter struct {
	owner string
	ttl   time.Duration
	tag   *request
	group *group // a live AcquireAllWait's, queued for several keys at once
	write bool   // a read/write lock's writer
}

// outcome is what a table operation decided.
type outcome struct {
	ok     bool
	queued bool
	// dup: the owner was already queued, nothing was added.
	dup bool
	// grant: after acquire/extend when ok; the holder's when not ok and held.
	grant Grant
	// handoff: the operation handed the key to the next waiter, next.
	handoff bool
	next    Grant
	nextTag *request
	// more: a shared name's further hand-offs of the same operation.
	more []handed
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

func (e *entry) grant() Grant {
	return Grant{Key: e.key, Owner: e.owner, Fence: e.fence, Deadline: e.deadline}
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

// acquire grants key to owner when it is free or its holder's deadline has
// passed (a new grant, new fence), refreshes it when owner holds it (same
// fence), and otherwise reports the holder and, with wait, queues owner.
func (t *table) acquire(key, owner string, ttl time.Duration, fence uint64, wait bool, tag *request) outcome {
	if err := checkKeyOwner(key, owner); err != nil {
		return outcome{err: err}
	}
	if err := checkTTL(ttl); err != nil {
		return outcome{err: err}
	}
	e := t.entries[key]
	if e != nil && e.isShared() {
		return outcome{err: kindMismatch(e, Claim{})}
	}
	if e == nil {
		if t.full() {
			return outcome{err: t.errFull()}
		}
		e = t.newEntry(key)
		t.claims++
		e.owner = owner
		e.fence = t.nextFence(fence)
		e.deadline = t.deadlineAfter(ttl)
		t.entries[key] = e
		t.heapPush(e)
		t.changedKey(key)
		return outcome{ok: true, grant: e.grant()}
	}
	if e.deadline <= t.now {
		// Expired but not yet purged (replicated mode waits for OpExpire;
		// a live timer may lag). With nobody queued the key is free.
		if e.waiters() == 0 {
			e.owner = owner
			e.fence = t.nextFence(fence)
			e.deadline = t.deadlineAfter(ttl)
			t.heapFix(e)
			t.changedKey(key)
			return outcome{ok: true, grant: e.grant()}
		}
		// Waiters came first: the key goes to the head of the queue, as
		// the expiry would have given it, and this acquire then meets the
		// new holder like any other.
		var handed outcome
		t.handOn(e, fence, &handed)
		out := t.contend(e, key, owner, ttl, wait, tag)
		// next is read after contend: when the acquirer was the head of
		// the queue, its refresh set the deadline.
		out.handoff, out.next, out.nextTag = true, e.grant(), handed.nextTag
		return out
	}
	return t.contend(e, key, owner, ttl, wait, tag)
}

// acquireClaim is acquire with a claim: a mutex's, or a shared name's.
func (t *table) acquireClaim(key, owner string, ttl time.Duration, c Claim, wait bool, tag *request) outcome {
	if c == (Claim{}) {
		return t.acquire(key, owner, ttl, 0, wait, tag)
	}
	return t.acquireShared(key, owner, ttl, c, 0, wait, tag)
}

// contend is an acquire of a key that is held and not expired: a refresh
// by its holder, or a contender that is refused or queued.
func (t *table) contend(e *entry, key, owner string, ttl time.Duration, wait bool, tag *request) outcome {
	if e.owner == owner {
		e.deadline = t.deadlineAfter(ttl)
		t.heapFix(e)
		return outcome{ok: true, grant: e.grant()}
	}
	out := outcome{grant: e.grant()}
	if !wait {
		return out
	}
	if e.waiterIndex(owner) >= 0 {
		out.queued, out.dup = true, true
		return out
	}
	if t.maxWaiters > 0 && e.waiters() >= t.maxWaiters {
		out.err = fmt.Errorf("engine: waiter limit %d reached for key %q: %w", t.maxWaiters, key, drivers.ErrFull)
		return out
	}
	if e.queue == nil {
		e.queue = &waitQueue{}
	}
	e.queue.line.push(waiter{owner: owner, ttl: ttl, tag: tag})
	t.waiting++
	out.queued = true
	return out
}

// release frees key if owner holds it and its deadline has not passed; a
// late or foreign release is a no-op. The next waiter, if any, gets it.
func (t *table) release(key, owner string, fence uint64) outcome {
	if err := checkKeyOwner(key, owner); err != nil {
		return outcome{err: err}
	}
	e := t.entries[key]
	if e != nil && e.isShared() {
		return t.releaseShared(e, owner, fence)
	}
	if e == nil || e.owner != owner || e.deadline <= t.now {
		return outcome{}
	}
	out := outcome{ok: true}
	t.handOn(e, fence, &out)
	return out
}

// extend sets a new deadline if owner holds key and it has not expired. It
// never grants.
func (t *table) extend(key, owner string, ttl time.Duration) outcome {
	if err := checkKeyOwner(key, owner); err != nil {
		return outcome{err: err}
	}
	if err := checkTTL(ttl); err != nil {
		return outcome{err: err}
	}
	e := t.entries[key]
	if e == nil {
		return outcome{}
	}
	if e.isShared() {
		return t.extendShared(e, owner, ttl)
	}
	if e.owner != owner || e.deadline <= t.now {
		return outcome{grant: e.grant()}
	}
	e.deadline = t.deadlineAfter(ttl)
	t.heapFix(e)
	return outcome{ok: true, grant: e.grant()}
}

// forceRelease frees key whoever holds it (even past its deadline) and
// hands it to the next waiter. ok reports whether there was an entry.
func (t *table) forceRelease(key string, fence uint64) outcome {
	if key == "" {
		return outcome{err: invalid("key", "empty")}
	}
	e := t.entries[key]
	if e == nil {
		return outcome{}
	}
	if e.isShared() {
		return t.forceShared(e, fence)
	}
	out := outcome{ok: true}
	t.handOn(e, fence, &out)
	return out
}

// expire ends the grant (key, owner, expectFence) if it is still that exact
// grant and its deadline has passed in engine time; anything else (a
// refreshed, released or re-granted lock) makes it a no-op, so a stale
// expiry can never delete a live lock.
func (t *table) expire(key, owner string, expectFence, fence uint64) outcome {
	e := t.entries[key]
	if e != nil && e.isShared() {
		return t.expireShared(e, owner, expectFence, fence)
	}
	if e == nil || e.owner != owner || e.fence != expectFence || e.deadline > t.now {
		return outcome{}
	}
	out := outcome{ok: true}
	t.handOn(e, fence, &out)
	return out
}

// cancelWait removes owner from key's queue; ok is false when it is not
// queued. Of a shared name, the waiters behind it may then be let in.
func (t *table) cancelWait(key, owner string, fence uint64) outcome {
	e := t.entries[key]
	if e == nil || !e.removeWaiter(owner) {
		return outcome{}
	}
	t.waiting--
	out := outcome{ok: true}
	if e.isShared() {
		t.claims--
		t.admit(e, fence, &out)
		t.settleShared(e)
	}
	return out
}

// cancelTag removes the waiter carrying tag from key's queue.
func (t *table) cancelTag(key string, tag *request, out *outcome) bool {
	e := t.entries[key]
	if e == nil || e.queue == nil {
		return false
	}
	i := e.queue.line.find(tag.owner)
	if i < 0 || e.queue.line.item(i).tag != tag {
		return false
	}
	e.dropWaiter(i)
	t.waiting--
	if e.isShared() {
		t.claims--
		t.admit(e, 0, out)
		t.settleShared(e)
	}
	return true
}

func (e *entry) removeWaiter(owner string) bool {
	i := e.waiterIndex(owner)
	if i < 0 {
		return false
	}
	e.dropWaiter(i)
	return true
}

// waiterIndex is owner's position in the queue, or -1.
func (e *entry) waiterIndex(owner string) int {
	if e.queue == nil {
		return -1
	}
	return e.queue.line.find(owner)
}

// dropWaiter removes the i-th waiter, and a mutex's queue with its last
// one.
func (e *entry) dropWaiter(i int) {
	e.queue.line.removeAt(i)
	if e.queue.line.len() == 0 && e.queue.kind == Mutex {
		e.queue = nil
	}
}

// handOn ends e's current grant: the first waiter gets a new grant (fence
// from want), or the entry is deleted when nobody waits.
func (t *table) handOn(e *entry, want uint64, out *outcome) {
	t.changedKey(e.key)
	if e.queue != nil && e.queue.line.len() > 0 {
		w := e.queue.line.pop()
		t.waiting--
		if e.queue.line.len() == 0 {
			e.queue = nil
		}
		e.owner = w.owner
		e.fence = t.nextFence(want)
		e.deadline = t.deadlineAfter(w.ttl)
		if g := w.group; g != nil {
			t.handedToGroup(g, e)
		}
		t.heapFix(e)
		out.handoff = true
		out.next = e.grant()
		out.nextTag = w.tag
		return
	}
	t.heapRemove(e)
	delete(t.entries, e.key)
	t.claims--
	t.recycle(e)
}

// changedKey tells the watchers of key, if any, that it changes hands.
func (t *table) changedKey(key string) {
	if t.changed != nil {
		t.changed(key)
	}
}

// expireDue ends every grant whose deadline is <= now (live mode), handing
// keys to waiters; it appends each hand-off to out.
func (t *table) expireDue(out []outcome) []outcome {
	for len(t.heap) > 0 && t.heap[0].deadline <= t.now {
		var o outcome
		if e := t.heap[0]; e.isShared() {
			t.purgeShared(e, 0, &o)
			t.settleShared(e)
		} else {
			t.handOn(e, 0, &o)
		}
		if o.handoff {
			out = append(out, o)
		}
	}
	return out
}

func (t *table) newEntry(key string) *entry {
	if n := len(t.spare); n > 0 {
		e := t.spare[n-1]
		t.spare[n-1] = nil
		t.spare = t.spare[:n-1]
		e.key = key
		return e
	}
	return &entry{key: key}
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

func (e *entry) info() Info {
	if e.isShared() {
		return e.sharedInfo()
	}
	return Info{Grant: e.grant(), Waiters: e.waiters()}
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
	if len(t.heap) == 0 || t.heap[0].deadline > now {
		return out
	}
	// frontier is a small min-heap of heap indices still to visit.
	frontier := []int{0}
	less := func(a, b int) bool { return entryLess(t.heap[a], t.heap[b]) }
	defer func() {
		if limit > 0 && len(out) > limit {
			out = out[:limit] // a shared name's due holders came together
		}
	}()
	for len(frontier) > 0 && (limit <= 0 || len(out) < limit) {
		i := frontier[0]
		last := len(frontier) - 1
		frontier[0] = frontier[last]
		frontier = frontier[:last]
		siftDownInts(frontier, 0, less)
		if e := t.heap[i]; e.isShared() {
			out = e.dueHolders(now, out)
		} else {
			out = append(out, e.grant())
		}
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(t.heap) && t.heap[c].deadline <= now {
				frontier = append(frontier, c)
				siftUpInts(frontier, len(frontier)-1, less)
			}
		}
	}
	return out
}

// nextDeadline is the earliest deadline in the table.
func (t *table) nextDeadline() (int64, bool) {
	if len(t.heap) == 0 {
		return 0, false
	}
	return t.heap[0].deadline, true
}

// applyCommand advances engine time to c.Now and applies c.
func (t *table) applyCommand(c *Command) Result {
	t.advance(c.Now)
	var o outcome
	switch c.Op {
	case OpAcquire:
		o = t.acquire(c.Key, c.Owner, c.TTL, c.Fence, c.Wait, nil)
	case OpRelease:
		o = t.release(c.Key, c.Owner, c.Fence)
	case OpExtend:
		o = t.extend(c.Key, c.Owner, c.TTL)
	case OpForceRelease:
		o = t.forceRelease(c.Key, c.Fence)
	case OpExpire:
		o = t.expire(c.Key, c.Owner, c.ExpectFence, c.Fence)
	case OpAcquireShared:
		o = t.acquireShared(c.Key, c.Owner, c.TTL, c.Claim, c.Fence, c.Wait, nil)
	case OpCancelWait:
		o = t.cancelWait(c.Key, c.Owner, c.Fence)
	case OpAcquireAll:
		m, _ := t.acquireAll(c.Keys, c.Owner, c.TTL, c.Fence, c.Wait, nil, false)
		o = m.handed
		o.ok, o.queued, o.grant, o.err = m.ok, m.queued, m.busy, m.err
		res := o.result()
		res.Grants = m.grants
		return res
	case OpAcquireKeys:
		return t.acquireKeys(c)
	case OpTick:
		o.ok = true
	default:
		o.err = invalid("op", fmt.Sprintf("unknown operation %d", c.Op))
	}
	return o.result()
}

// result is o as a replicated command's Result.
func (o *outcome) result() Result {
	res := Result{OK: o.ok, Queued: o.queued, Grant: o.grant, Err: o.err}
	if o.handoff {
		res.Handoffs = make([]Grant, 1, 1+len(o.more))
		res.Handoffs[0] = o.next
		for _, h := range o.more {
			res.Handoffs = append(res.Handoffs, h.g)
		}
	}
	return res
}
