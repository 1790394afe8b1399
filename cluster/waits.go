package cluster

import (
	"context"
	"sync"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// liveRequests is the leader's record of every acquire request it is
// serving, by (key, owner). A client retries an acquire with the same
// owner after a timeout or a failover, so one owner may have several
// requests here at once, some of them abandoned (their client gone) and
// some still to answer. The record keeps them from undoing each other:
//
//   - an abandoned wait cancels its queue entry only when it is the
//     owner's last live request; otherwise the others still wait on it;
//   - a grant handed off to the owner that no request has returned is
//     released by the last request to leave, and by nobody before: a
//     request that arrives while that release (or a cancel) is on its way
//     waits for it to commit, so it never returns a grant about to be
//     released, nor waits on a queue entry about to be removed.
//
// The FSM's apply hook delivers hand-offs here (deliver). A waiting
// request listens BEFORE it reads the table or proposes its acquire, so
// a hand-off applied right after cannot slip past it.
type liveRequests struct {
	mu sync.Mutex
	m  map[fsm.Waiter]*claim
}

// claim is one owner's live requests for one key.
type claim struct {
	live    int                 // requests entered and not yet left
	waiting []chan engine.Grant // the live requests listening for a hand-off
	// unreturned is the fence of a grant handed off to the owner that no
	// request has returned to its client yet; 0 when there is none.
	unreturned uint64
	// settling is non-nil while a cancel-wait or a release of this owner's
	// queue entry or grant is on its way to commit, and closed when it has.
	settling chan struct{}
}

// request is one live acquire request, from enter to leave.
type request struct {
	w       fsm.Waiter
	c       *claim
	ch      chan engine.Grant // set by listen
	settler bool              // this request owns c.settling
}

func newLiveRequests() *liveRequests {
	return &liveRequests{m: map[fsm.Waiter]*claim{}}
}

// enter records a new request of owner for key. Every request that enters
// must leave.
func (r *liveRequests) enter(key, owner string) *request {
	w := fsm.Waiter{Key: key, Owner: owner}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.m[w]
	if c == nil {
		c = &claim{}
		r.m[w] = c
	}
	c.live++
	return &request{w: w, c: c}
}

// settle waits until no cancel or release of the owner's entry is on its
// way, so the request sees the table as it will stay.
func (r *liveRequests) settle(ctx context.Context, done <-chan struct{}, q *request) error {
	for {
		r.mu.Lock()
		s := q.c.settling
		r.mu.Unlock()
		if s == nil {
			return nil
		}
		select {
		case <-s:
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return errLeadershipChanged
		}
	}
}

// listen makes q receive the next grant handed off to its owner.
func (r *liveRequests) listen(q *request) <-chan engine.Grant {
	q.ch = make(chan engine.Grant, 1)
	r.mu.Lock()
	q.c.waiting = append(q.c.waiting, q.ch)
	r.mu.Unlock()
	return q.ch
}

// deliver records the hand-off g and wakes the requests listening for
// it. It runs in the FSM goroutine and never blocks: each channel has
// room for the one grant it will get.
func (r *liveRequests) deliver(g engine.Grant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.m[fsm.Waiter{Key: g.Key, Owner: g.Owner}]
	if c == nil {
		return
	}
	c.unreturned = g.Fence
	for _, ch := range c.waiting {
		select {
		case ch <- g:
		default:
		}
	}
	c.waiting = nil
}

// abandon stops q listening and reports whether its owner's queue entry
// must be cancelled: only when q is the owner's last live request. Then
// q owns the settling until it leaves, and requests arriving meanwhile
// wait for it.
func (r *liveRequests) abandon(q *request) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unlistenLocked(q)
	if q.c.live > 1 {
		return false
	}
	q.c.settling = make(chan struct{})
	q.settler = true
	return true
}

// leave ends q; fence is the grant it returned to its client (0: none).
// When q is the owner's last live request and a grant handed to the
// owner was never returned, leave answers that grant's fence: the caller
// must release it and then call settled. Otherwise it answers 0.
func (r *liveRequests) leave(q *request, fence uint64) (release uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unlistenLocked(q)
	c := q.c
	c.live--
	if fence != 0 {
		// The client now knows the owner's grant: the only one it can
		// have, since a key has one holder and a hand-off needs a waiter.
		c.unreturned = 0
	}
	if c.live == 0 && c.unreturned != 0 {
		release, c.unreturned = c.unreturned, 0
		if c.settling == nil {
			c.settling = make(chan struct{})
			q.settler = true
		}
		return release
	}
	r.finishLocked(q)
	return 0
}

// settled ends the release that leave asked for.
func (r *liveRequests) settled(q *request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finishLocked(q)
}

func (r *liveRequests) finishLocked(q *request) {
	c := q.c
	if q.settler {
		close(c.settling)
		c.settling = nil
		q.settler = false
	}
	if c.live == 0 && c.settling == nil {
		delete(r.m, q.w)
	}
}

func (r *liveRequests) unlistenLocked(q *request) {
	if q.ch == nil {
		return
	}
	w := q.c.waiting
	for i, ch := range w {
		if ch == q.ch {
			q.c.waiting = append(w[:i], w[i+1:]...)
			break
		}
	}
	q.ch = nil
}

// pending is the number of requests listening for a hand-off.
func (r *liveRequests) pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.m {
		n += len(c.waiting)
	}
	return n
}

// live is the number of live requests of owner for key.
func (r *liveRequests) live(key, owner string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.m[fsm.Waiter{Key: key, Owner: owner}]; c != nil {
		return c.live
	}
	return 0
}
