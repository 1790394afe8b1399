package handoff

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zerotal/lock/engine"
	"github.com/zerotal/lock/fsm"
)

// Wait is how a request waits for its key.
type Wait struct {
	// Until is when the wait runs out; zero: the request does not wait.
	// It is a point in time, not a duration, so that the wait counts
	// from the request's arrival: a client asks for a wait a margin short
	// of its own deadline and expects the answer within that margin,
	// which the commits before the wait (a settle, the queueing) must not
	// use up.
	Until time.Time
	// Keep is how long the request's place in the queue outlives a wait
	// that ran out, for the owner's next request: a client that waits in
	// chunks sends the next one at once, and it should find its place,
	// not join the queue again at its end. Zero: the place is given up
	// at once.
	Keep time.Duration
	// Tenant is who the request came from (its credential): the places
	// kept are counted by tenant, so that one cannot take another's (see
	// MaxKept).
	Tenant string
}

// Acquire serves one acquire request, e (an engine.OpAcquire of e.Key by
// e.Owner with e.TTL; the protocol sets Now and Wait), on the term p, as a
// live request of (key, owner): when the key is held it waits for a
// hand-off as w says. ctx is the request's: it ends when the client goes
// away or the node shuts down.
//
// A wait that ran out is answered at once: its clean-up (see leave), and
// the time its place is kept, come after the answer.
//
// Errors: ErrEnded when the term ended, ctx's error when the client went
// away (nobody will read the answer), or Propose's error. A refusal is an
// Answer with Fence 0, never an error.
func (r *Requests) Acquire(ctx context.Context, p Port, e fsm.Entry, w Wait) (a Answer, err error) {
	q := r.enter(e.Key, e.Owner)
	defer func() {
		if a.TimedOut {
			r.leaveLater(p, []*request{q}, w)
			return
		}
		r.leave(p, q, a.Fence)
	}()
	if err := r.settle(ctx, p.Context().Done(), q); err != nil {
		return Answer{}, err
	}
	if !w.Until.IsZero() {
		return r.acquireWait(ctx, p, q, e, w.Until)
	}
	return acquireNow(ctx, p, e)
}

func acquireNow(ctx context.Context, p Port, e fsm.Entry) (Answer, error) {
	e.Now, e.Wait = p.Now(), false
	resp, err := p.Propose(ctx, e)
	if err != nil {
		return Answer{}, err
	}
	if !resp.Result.OK {
		return Answer{Held: resp.Result.Grant, Now: e.Now}, nil
	}
	return Answer{Fence: resp.Result.Grant.Fence}, nil
}

// acquireWait queues the request in the replicated table and waits for
// the hand-off. On timeout or client cancellation it just returns: the
// owner's last live request removes the queue entry when it leaves (and
// releases a grant that raced with that).
func (r *Requests) acquireWait(ctx context.Context, p Port, q *request, e fsm.Entry, until time.Time) (Answer, error) {
	ch := r.listen(q)
	// A retry of a request already queued (after a client timeout, say)
	// just waits again: the queue entry is committed, a hand-off from now
	// on reaches the channel above, and the entry cannot be cancelled
	// while this request lives. Its TTL stays the one first asked for.
	// The table's answer is enough here, without leave's wait for
	// deliveries (which would hold every waiting acquire behind the batch
	// being applied): if the table already handed the owner the key, the
	// acquire proposed below is a refresh of that grant.
	queued, err := p.Queued(ctx, e.Key, e.Owner)
	if err != nil {
		return Answer{}, err
	}
	if !queued {
		e.Now, e.Wait = p.Now(), true
		resp, err := p.Propose(ctx, e)
		if err != nil {
			return Answer{}, err
		}
		if resp.Result.OK {
			return Answer{Fence: resp.Result.Grant.Fence}, nil
		}
		if !resp.Result.Queued {
			return Answer{Held: resp.Result.Grant, Now: e.Now}, nil
		}
	}
	timer := time.NewTimer(time.Until(until))
	defer timer.Stop()
	select {
	case g := <-ch:
		if err := ctx.Err(); err != nil {
			// The client went away as the key came: nobody will get this
			// answer, so it is not returned, and leave releases the grant
			// (unreturned) rather than leave it blocking the key for a TTL.
			return Answer{}, err
		}
		return Answer{Fence: g.Fence}, nil
	case <-p.Context().Done():
		return Answer{}, ErrEnded
	case <-timer.C:
	case <-ctx.Done():
	}
	if err := ctx.Err(); err != nil {
		return Answer{}, err // the client went away, or the node is stopping
	}
	return Answer{TimedOut: true}, nil
}

// leave ends q. When it is its owner's last live request it cleans up
// after all of them: it cancels the owner's queue entry, then releases a
// grant handed off to the owner that no request returned, which passes
// the key on. Both are retried until they commit or the term ends (the
// next leader cancels every queued waiter when it takes over).
func (r *Requests) leave(p Port, q *request, fence uint64) {
	if r.leaveRecord(q, fence) {
		r.cleanUp(p, q)
	}
}

// leaveLater is leave of the requests of one answer whose wait ran out
// (a key's, or each key's of an acquire-all), in the background: the
// answer goes out at the wait's end rather than a commit or two later.
// First they stay live for up to w.Keep, until the owner's next request
// has entered for each of their keys, so that it finds the owner's places
// in the queues (it is queued already, and waits again); then they leave,
// side by side. The clean-up is that of a client gone away: a hand-off
// made meanwhile is returned by the next request, or released by the last
// to leave. Wait waits for these.
//
// One tenant keeps at most MaxKept places at once, an acquire-all's
// counting once: each costs a goroutine, no longer counted by the node's
// cap on waiting requests, for up to its keep. Beyond that the places
// are given up with the answer, as without keep; another tenant's are
// kept still.
func (r *Requests) leaveLater(p Port, qs []*request, w Wait) {
	keep := w.Keep
	var next []<-chan struct{}
	if keep > 0 && r.keepPlace(w.Tenant) {
		for _, q := range qs {
			next = append(next, r.nextRequest(q))
		}
	} else {
		keep = 0
	}
	r.goLater(func() {
		if keep > 0 {
			keepUntil(p, next, keep)
			r.placeLeft(w.Tenant)
		}
		r.leaveEach(p, qs, nil)
	})
}

// keepUntil returns once every channel of next is closed, keep has
// passed, or p's term has ended.
func keepUntil(p Port, next []<-chan struct{}, keep time.Duration) {
	t := time.NewTimer(keep)
	defer t.Stop()
	for _, ch := range next {
		select {
		case <-ch:
		case <-t.C:
			return
		case <-p.Context().Done():
			return
		}
	}
}

// leaveEach ends every request of qs, q returned fences[i] (nil: none),
// side by side: their clean-ups are independent of each other, so they
// share commits rather than run one commit after another.
func (r *Requests) leaveEach(p Port, qs []*request, fences []uint64) {
	fence := func(i int) uint64 {
		if fences == nil {
			return 0
		}
		return fences[i]
	}
	if len(qs) == 1 {
		r.leave(p, qs[0], fence(0))
		return
	}
	var wg sync.WaitGroup
	for i, q := range qs {
		wg.Go(func() { r.leave(p, q, fence(i)) })
	}
	wg.Wait()
}

// MaxKept bounds the places one tenant keeps at once after their waits
// ran out (see Wait.Keep), an acquire-all's counting once.
const MaxKept = 1024

// cleanUp is the clean-up leave asked for; q owns the settling.
func (r *Requests) cleanUp(p Port, q *request) {
	defer r.settled(q)
	key, owner := q.w.Key, q.w.Owner
	// Read outside the record's lock: the FSM delivers hand-offs into the
	// record while it holds its own. When the owner is not queued this
	// returns once a hand-off that dequeued it has been delivered, so
	// unreturned below sees it.
	queued, err := p.QueuedOnceDelivered(p.Context(), key, owner)
	if err != nil {
		// The term ended (a stop, a lost leadership: no incident, and a
		// node that stops with kept places has one per key): the next
		// leader cancels queued waiters.
		if p.Context().Err() == nil {
			r.log.Warn("clean-up: reading the wait queue failed", "error", err)
		}
		return
	}
	if queued {
		if err := r.proposeWhileLeading(p, fsm.Entry{Op: engine.OpCancelWait, Key: key, Owner: owner}); err != nil {
			r.log.Warn("cancel wait failed", "error", err)
			return
		}
	}
	if lost := r.unreturned(q); lost != 0 {
		if err := r.proposeWhileLeading(p, fsm.Entry{Op: engine.OpRelease, Key: key, Owner: owner}); err != nil {
			r.log.Warn("release of a grant no request returned failed", "fence", lost, "error", err)
		}
	}
}

// proposeWhileLeading proposes e (stamped with p's clock) until it
// commits or the term ends. A clean-up entry (a cancel-wait, a release of
// a grant nobody returned) must not be dropped on a transient failure:
// the entry it leaves behind would be granted to nobody for up to its TTL.
func (r *Requests) proposeWhileLeading(p Port, e fsm.Entry) error {
	backoff := 10 * time.Millisecond
	for {
		e.Now = p.Now()
		_, err := p.Propose(p.Context(), e)
		if err == nil || errors.Is(err, ErrEnded) {
			return err
		}
		r.log.Warn("clean-up proposal failed; retrying", "op", e.Op, "error", err)
		t := time.NewTimer(backoff)
		select {
		case <-p.Context().Done():
			t.Stop()
			return ErrEnded
		case <-t.C:
		}
		backoff = min(2*backoff, time.Second)
	}
}
