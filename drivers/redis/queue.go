package redis

import (
	"slices"
	"strings"
	"time"
)

// queue is the waiters of one key in this process, which the key's
// channel wakes. Their order is kept in Redis; here they are only found.
// All its fields, and those of its waiters, are guarded by hub.mu.
type queue struct {
	channel   string
	waiters   []*waiter
	pending   int       // SUBSCRIBE confirmations still to come
	confirmed bool      // Redis has confirmed the subscription
	idleSince time.Time // when the last waiter left; zero while any wait
	// watchers are the Changed callers watching the key; changed is
	// closed at its next message.
	watchers int
	changed  chan struct{}
}

// waiter is one request that waits, in the queue of each of its keys.
type waiter struct {
	owner    string
	channels []string
	// one: a request of one key, which a release by this process may
	// hand the key to (releaseScript's locals).
	one bool
	// reused: the owner may ask again once this wait has given up
	// (drivers.WaitOptions.OwnerReused), so a grant made to it after that
	// is left to lapse, never released by the driver.
	reused bool
	wake   chan struct{} // capacity 1: wake-ups coalesce, never block

	// granted and fence are set when a release of this process handed the
	// key over; gone once the waiter has left, and holding when it left
	// with the key, which its own attempt found granted: a hand-over that
	// arrives after that is of the grant its caller holds.
	granted, gone, holding bool
	fence                  uint64
}

func newWaiter(a *attempt) *waiter {
	w := &waiter{
		owner:  a.req.Owner,
		one:    len(a.req.Keys) == 1,
		reused: a.req.OwnerReused,
		wake:   make(chan struct{}, 1),
	}
	for _, k := range a.req.Keys {
		w.channels = append(w.channels, keysFor(k).channel)
	}
	return w
}

// locals are this process's waiters of one key for channel, whom a release
// by this process may hand the key (releaseScript's ARGV[3...]).
func (h *hub) locals(channel string) []*waiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	if q == nil {
		return nil
	}
	var ws []*waiter
	for _, w := range q.waiters {
		if w.one && !w.granted {
			ws = append(ws, w)
		}
	}
	return ws
}

// waiting reports whether requests of this process wait for the key of
// channel.
func (h *hub) waiting(channel string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	q := h.queues[channel]
	return q != nil && len(q.waiters) > 0
}

// handOver gives w the grant a release of this process let it in with.
// It reports orphan when w had already given up: the caller then releases
// the grant, unless w's owner is reused (its next call may hold the key by
// then, and the grant is left to its TTL).
func (h *hub) handOver(w *waiter, fence uint64) (orphan bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.gone {
		// A waiter that left holding the key holds this grant: its own
		// attempt found it before the hand-over arrived.
		return !w.reused && !w.holding
	}
	w.granted, w.fence = true, fence
	signal(w)
	return false
}

// handedOver reports the grant handed over to w, if any.
func (h *hub) handedOver(w *waiter) (uint64, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return w.fence, w.granted
}

// wake tells the waiters a message concerns to try at once: on
// "granted:a,b" exactly those it names (and it reports the names it found
// no waiter for), on any other message (a release that let nobody in, a
// forced one, a renewed subscription) all of them.
func (q *queue) wake(payload string) (unknown []string) {
	owners, named := strings.CutPrefix(payload, "granted:")
	if !named {
		for _, w := range q.waiters {
			signal(w)
		}
		return nil
	}
	for _, o := range strings.Split(owners, ",") {
		i := slices.IndexFunc(q.waiters, func(w *waiter) bool { return w.owner == o })
		if i < 0 {
			unknown = append(unknown, o)
			continue
		}
		signal(q.waiters[i])
	}
	return unknown
}

// signal wakes w without blocking; a pending wake-up already covers it.
func signal(w *waiter) {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}
