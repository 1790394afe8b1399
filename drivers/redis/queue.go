package redis

import (
	"slices"
	"strings"
	"time"
)

// queue is the waiters of one key in this process. All its fields, and
// those of its waiters, are guarded by hub.mu.
type queue struct {
	channel   string
	waiters   []*waiter // arrival order; waiters[0] is the head
	pending   int       // SUBSCRIBE confirmations still to come
	confirmed bool      // Redis has confirmed the subscription
	idleSince time.Time // when the last waiter left; zero while any wait
	// handoffs counts consecutive direct hand-offs (handoff.go), so that
	// a steady stream of local waiters cannot shut other processes out.
	handoffs int
	// watchers are the Changed callers watching the key; changed is
	// closed at its next release message.
	watchers int
	changed  chan struct{}
}

// waiter is one AcquireWait call.
type waiter struct {
	q     *queue
	owner string
	ttl   time.Duration
	// reused: the owner may ask again once this wait has given up
	// (drivers.WaitOptions.OwnerReused), so a grant made to it after that
	// is left to its TTL, never released by the driver.
	reused bool
	wake   chan struct{} // capacity 1: wake-ups coalesce, never block

	// retryAt is when the head should next try the key; zero means at once.
	retryAt time.Time
	// handoff is set while a local Release is handing the key to this
	// waiter; the waiter sends no attempt of its own meanwhile. pushed
	// records a release message that arrived during the hand-off.
	handoff, pushed bool
	// granted and fence are set when a hand-off gave the key to the waiter.
	granted bool
	fence   uint64
	// gone is set when the waiter has left the queue; selfGranted when it
	// left because its own attempt got the key.
	gone, selfGranted bool
}

// state is what a waiter learns when it wakes up.
type state struct {
	head    bool      // first in its queue: its turn to try
	retryAt time.Time // when to try, zero for at once
	busy    bool      // a hand-off to it is under way: do not try
	granted bool      // a hand-off gave it the key, with fence
	fence   uint64
}

// waiting reports whether this process already has waiters for channel.
func (h *hub) waiting(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	return q != nil && len(q.waiters) > 0
}

// turn reports w's state.
func (h *hub) turn(w *waiter) state {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.granted {
		return state{granted: true, fence: w.fence}
	}
	if len(w.q.waiters) == 0 || w.q.waiters[0] != w {
		return state{}
	}
	return state{head: true, retryAt: w.retryAt, busy: w.handoff}
}

// leave removes w from its queue and reports whether a hand-off had
// already given it the key (then w holds the key and must release it if it
// is giving up). selfGranted says that w's own attempt got the key.
//
// When w was the head, the next waiter becomes head: if w got the key, the
// new head waits for the next release (at most w's TTL); otherwise it
// tries at once.
func (h *hub) leave(w *waiter, selfGranted bool) (handedOff bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.granted {
		return true
	}
	w.gone, w.selfGranted = true, selfGranted
	q := w.q
	i := indexOf(q.waiters, w)
	if i < 0 {
		return false
	}
	q.removeAt(i)
	if strings.HasSuffix(q.channel, sharedSuffix) {
		return false // Redis's order decides; its scripts wake who gets in
	}
	if i == 0 && len(q.waiters) > 0 {
		q.promote(selfGranted, w.ttl)
	}
	return false
}

// removeAt drops waiters[i], recording when the queue went idle.
func (q *queue) removeAt(i int) {
	q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
	if len(q.waiters) == 0 {
		q.idleSince = time.Now()
	}
}

// promote wakes the new head. When the key was just granted to the
// previous head, for at most ttl, the new head waits for its release;
// otherwise it tries at once.
func (q *queue) promote(keyTaken bool, ttl time.Duration) {
	head := q.waiters[0]
	head.retryAt = time.Time{}
	if keyTaken {
		head.retryAt = time.Now().Add(ttl)
	}
	signal(head)
}

// ownSubs is this process's confirmed subscriptions to a shared key's
// channel, as a release script compares them with Redis's count: 0 or 1,
// or -1 on Redis Cluster, whose count is one node's only.
func (h *hub) ownSubs(channel string) int {
	if h.maxHandoffs > 0 {
		return -1
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if q := h.queues[channel]; q != nil && q.confirmed {
		return 1
	}
	return 0
}

// grantShared gives the local waiter of owner on a shared key's channel
// the grant a release let it in with, as a hand-off does.
func (h *hub) grantShared(channel, owner string, fence uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	if q == nil {
		return
	}
	for i, w := range q.waiters {
		if w.owner == owner {
			q.removeAt(i)
			w.granted, w.fence, w.gone = true, fence, true
			signal(w)
			return
		}
	}
}

// wake tells the head to try at once. On a shared key's channel, where
// the order is kept in Redis and the release script lets waiters in
// itself, a message names the owners it let in ("granted:a,b"): exactly
// they try (and find they hold the key); any other message, a forced
// release or a renewed subscription, wakes every waiter.
func (q *queue) wake(payload string) {
	if !strings.HasSuffix(q.channel, sharedSuffix) {
		q.wakeHead()
		return
	}
	owners, named := strings.CutPrefix(payload, "granted:")
	for _, w := range q.waiters {
		if named && !slices.Contains(strings.Split(owners, ","), w.owner) {
			continue
		}
		w.retryAt = time.Time{}
		signal(w)
	}
}

// wakeHead tells the head to try at once.
func (q *queue) wakeHead() {
	if len(q.waiters) == 0 {
		return
	}
	head := q.waiters[0]
	head.retryAt = time.Time{}
	head.pushed = true
	signal(head)
}

// signal wakes w without blocking; a pending wake-up already covers it.
func signal(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func indexOf(ws []*waiter, w *waiter) int {
	for i, x := range ws {
		if x == w {
			return i
		}
	}
	return -1
}
