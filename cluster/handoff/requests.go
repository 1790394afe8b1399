package handoff

import (
	"context"
	"log/slog"
	"sync"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// Requests is the leader's record of every acquire request it is
// serving, by (key, owner). A client retries an acquire with the same
// owner after a timeout or a failover, so one owner may have several
// requests here at once, some of them abandoned (their client gone) and
// some still to answer. The record keeps them from undoing each other:
// the owner's LAST live request to leave cleans up after all of them, and
// none before it.
//
//   - if any of them may have queued the owner (it listened for a
//     hand-off), the last one cancels the queue entry that is left;
//   - a grant handed off to the owner that no request has returned is
//     released by the last one, after that cancel;
//   - a request that arrives while that clean-up is on its way waits for
//     it to commit (settle), so it never returns a grant about to be
//     released, nor waits on a queue entry about to be removed. The
//     request cleaning up stays live until it has settled.
//
// The FSM's apply hook delivers hand-offs here (Deliver). A waiting
// request listens BEFORE it reads the table or proposes its acquire, so
// a hand-off applied right after cannot slip past it.
type Requests struct {
	log  *slog.Logger
	mu   sync.Mutex
	m    map[fsm.Waiter]*claim
	kept map[string]int // places kept now (leaveLater), by Wait.Tenant
	// later counts the requests leaving after their answer (leaveLater);
	// once Wait has begun (waited), they leave before they answer.
	laterMu sync.Mutex
	waited  bool
	later   sync.WaitGroup
}

// claim is one owner's live requests for one key.
type claim struct {
	live    int                 // requests entered and not yet settled
	waiting []chan engine.Grant // the live requests listening for a hand-off
	// listened is set when a request listened, so may have queued the
	// owner; the request that cleans up clears it.
	listened bool
	// unreturned is the fence of a grant handed off to the owner that no
	// request has returned to its client yet; 0 when there is none.
	unreturned uint64
	// returned is the latest fence a request returned to its client. A
	// grant is recorded as unreturned only when it is later: the keys a
	// waiting set takes at once are recorded by its request once it reads
	// its answer, which may be after a later request of the owner
	// returned the same grant (as a refresh) and left; the clean-up would
	// then release a grant its client holds.
	returned uint64
	// settling is non-nil while the last request cleans up, and closed
	// when it has.
	settling chan struct{}
	// next, when non-nil, is closed by the next request to enter: a
	// request whose wait ran out keeps the owner's place until then.
	next chan struct{}
}

// request is one live acquire request, from enter to leave.
type request struct {
	w       fsm.Waiter
	c       *claim
	ch      chan engine.Grant // set by listen
	settler bool              // this request owns c.settling
}

// NewRequests returns an empty record that logs the clean-ups' failures
// to log (nil: nowhere). A node keeps one across its terms.
func NewRequests(log *slog.Logger) *Requests {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Requests{m: map[fsm.Waiter]*claim{}, kept: map[string]int{}, log: log}
}

// Wait waits for the requests that leave after they answered
// (leaveLater). Each leaves within its keep or when its term ends, and its
// clean-up ends when it has committed or when its term ends, so a node
// calls this once its last term has ended. A request answered after that
// leaves before its answer.
func (r *Requests) Wait() {
	r.laterMu.Lock()
	r.waited = true
	r.laterMu.Unlock()
	r.later.Wait()
}

// goLater runs f in the background, counted for Wait; once Wait has
// begun, it runs f here.
func (r *Requests) goLater(f func()) {
	r.laterMu.Lock()
	if r.waited {
		r.laterMu.Unlock()
		f()
		return
	}
	r.later.Add(1)
	r.laterMu.Unlock()
	go func() {
		defer r.later.Done()
		f()
	}()
}

// enter records a new request of owner for key. Every request that enters
// must leave.
func (r *Requests) enter(key, owner string) *request {
	w := fsm.Waiter{Key: key, Owner: owner}
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.m[w]
	if c == nil {
		c = &claim{}
		r.m[w] = c
	}
	c.live++
	if c.next != nil {
		close(c.next)
		c.next = nil
	}
	return &request{w: w, c: c}
}

// nextRequest returns a channel closed when the next request of q's
// owner for q's key enters; closed already when another one is live.
func (r *Requests) nextRequest(q *request) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q.c.live > 1 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if q.c.next == nil {
		q.c.next = make(chan struct{})
	}
	return q.c.next
}

// settle waits until no cancel or release of the owner's entry is on its
// way, so the request sees the table as it will stay.
func (r *Requests) settle(ctx context.Context, done <-chan struct{}, q *request) error {
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
			return ErrEnded
		}
	}
}

// listen makes q receive the next grant handed off to its owner.
func (r *Requests) listen(q *request) <-chan engine.Grant {
	q.ch = make(chan engine.Grant, 1)
	r.mu.Lock()
	q.c.listened = true
	q.c.waiting = append(q.c.waiting, q.ch)
	r.mu.Unlock()
	return q.ch
}

// Deliver records the hand-off g and wakes the requests listening for
// it. It runs in the FSM goroutine and never blocks: each channel has
// room for the one grant it will get. A grant no later than one a request
// returned is nobody's to hand over (see claim.returned).
func (r *Requests) Deliver(g engine.Grant) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.m[fsm.Waiter{Key: g.Key, Owner: g.Owner}]
	if c == nil || g.Fence <= c.returned {
		return
	}
	c.unreturned = max(c.unreturned, g.Fence)
	for _, ch := range c.waiting {
		select {
		case ch <- g:
		default:
		}
	}
	c.waiting = nil
}

// leaveRecord ends q; fence is the grant it returned to its client (0: none).
// It reports whether q must clean up for its owner: when q is the owner's
// last live request and may have left a queue entry or an unreturned
// grant behind. Then q owns the settling: the caller cancels the queue
// entry if there is one, releases what unreturned answers, and calls
// settled; requests arriving meanwhile wait for that.
func (r *Requests) leaveRecord(q *request, fence uint64) (cleanUp bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unlistenLocked(q)
	c := q.c
	if fence != 0 {
		// The client now knows the owner's grant: the only one it can
		// have, since a key has one holder and a hand-off needs a waiter;
		// an earlier one recorded is gone.
		c.returned = max(c.returned, fence)
		if c.unreturned <= c.returned {
			c.unreturned = 0
		}
	}
	if c.live == 1 && (c.listened || c.unreturned != 0) {
		// Nobody else is live, so nobody else settles: a request that
		// entered after an earlier clean-up waited for it to end.
		c.listened = false
		c.settling = make(chan struct{})
		q.settler = true
		return true
	}
	r.settledLocked(q)
	return false
}

// unreturned takes the fence of the grant handed off to q's owner that no
// request returned (0: none). Only the request cleaning up calls it, after
// its cancel has committed, so no hand-off can follow.
func (r *Requests) unreturned(q *request) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := q.c.unreturned
	q.c.unreturned = 0
	return f
}

// settled ends the clean-up that leave asked for.
func (r *Requests) settled(q *request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settledLocked(q)
}

func (r *Requests) settledLocked(q *request) {
	c := q.c
	c.live--
	if q.settler {
		close(c.settling)
		c.settling = nil
		q.settler = false
	}
	if c.live == 0 {
		delete(r.m, q.w)
	}
}

func (r *Requests) unlistenLocked(q *request) {
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

// Live is the number of requests of owner for key being served, and
// whether the last of them is cleaning up (it has left and its clean-up
// has not committed yet).
func (r *Requests) Live(key, owner string) (live int, cleaning bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.m[fsm.Waiter{Key: key, Owner: owner}]; c != nil {
		return c.live, c.settling != nil
	}
	return 0, false
}

// keepPlace counts one more place kept for tenant, unless it keeps
// MaxKept already.
func (r *Requests) keepPlace(tenant string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kept[tenant] >= MaxKept {
		return false
	}
	r.kept[tenant]++
	return true
}

// placeLeft counts a place of tenant's no longer kept.
func (r *Requests) placeLeft(tenant string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kept[tenant]--; r.kept[tenant] <= 0 {
		delete(r.kept, tenant)
	}
}

// Kept is the number of places tenant keeps now after waits that ran out
// (Wait.Keep), a set's counting once.
func (r *Requests) Kept(tenant string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kept[tenant]
}

// Listening is the number of requests waiting for a hand-off.
func (r *Requests) Listening() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.m {
		n += len(c.waiting)
	}
	return n
}
